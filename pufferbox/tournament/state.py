"""The tournament driver's state: its :class:`Progress` (saved on the board) and its pool's :class:`Slot`\\ s.

A slot is one pod actor and the slice it trains. Its :class:`SlotState` moves
``IDLE -> TRAINING -> (TRUNCATING ->) IDLE`` through :meth:`Slot.start`, :meth:`Slot.truncate`
and :meth:`Slot.finish`; a move from the wrong state raises :class:`SlotStateError`, so the driver
cannot, say, give a busy pod a second slice or stop one that trains nothing.

Example:
    >>> slot = Slot(index=0, actor=None, name="pod-a", since=0.0)
    >>> _ = slot.start("ref", task=None, now=1.0); slot.state
    <SlotState.TRAINING: 'training'>
    >>> _ = slot.truncate(); slot.state
    <SlotState.TRUNCATING: 'truncating'>
    >>> slot.finish().ref, slot.state
    ('ref', <SlotState.IDLE: 'idle'>)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any

from pufferbox.errors import PufferboxError

__all__ = ["Progress", "Running", "Slot", "SlotState", "SlotStateError"]


@dataclass
class Progress:
    """What the tournament has done so far; saved on the board with every change, so a killed driver
    resumes from it. ``steps`` counts every step pods trained: finished, truncated and lost slices."""

    steps: int = 0
    slices: int = 0  # slices that ended (evaluated or truncated)
    lost: int = 0  # slices lost with their pod
    next_pod: int = 0  # the id of the next task
    wall_time: float = 0.0
    pod_time: float = 0.0  # seconds of pod slots held, summed over slots
    train_time: float = 0.0
    eval_time: float = 0.0
    truncated: int = 0
    eval_steps: int = 0  # env steps spent evaluating (not part of steps)
    lost_steps: int = 0

    @classmethod
    def from_board(cls, stored: dict | None) -> Progress:
        """The progress a board recorded (fields it predates start at zero)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (stored or {}).items() if k in known})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class SlotState(Enum):
    """What a slot's pod is doing (as Gymnasium's ``AsyncState`` for a vector env's pending call)."""

    IDLE = "idle"  # no slice: the next task may go here
    TRAINING = "training"  # a slice is in flight
    TRUNCATING = "truncating"  # in flight, and told to stop after its update (it lags the board)


class SlotStateError(PufferboxError, RuntimeError):
    """A slot was moved from a state that does not allow the move (a driver bug, not bad input)."""


@dataclass
class Running:
    """The slice a slot trains: its Ray reference, task, and the pod's last progress report."""

    ref: Any
    task: Any  # a generator.PodTask
    submitted: float
    report: dict = field(default_factory=dict)  # the pod's last progress(): steps, episodes, mean_return
    ask: Any = None  # its unanswered progress() call, if any

    @property
    def steps(self) -> int:
        return int(self.report.get("steps", 0))


@dataclass
class Slot:
    """One pod actor of the pool: its name, since when its time was last counted, the board entries
    its opponent pool already holds, and the slice it trains (None while idle)."""

    index: int
    actor: Any
    name: str
    since: float
    opponents_sent: set[int] = field(default_factory=set)
    running: Running | None = None
    state: SlotState = SlotState.IDLE

    def move(self, allowed: tuple[SlotState, ...], to: SlotState, what: str) -> None:
        if self.state not in allowed:
            raise SlotStateError(f"slot {self.index}: cannot {what} while {self.state.value}")
        self.state = to

    def start(self, ref: Any, task: Any, now: float) -> Running:
        """An idle slot takes a slice."""
        self.move((SlotState.IDLE,), SlotState.TRAINING, "start a slice")
        self.running = Running(ref, task, now)
        return self.running

    def truncate(self) -> Running:
        """A training slot's slice is told to stop early."""
        self.move((SlotState.TRAINING,), SlotState.TRUNCATING, "truncate")
        assert self.running is not None
        return self.running

    def finish(self) -> Running:
        """The slot's slice ended (finished, truncated or lost): the slot is idle again."""
        self.move((SlotState.TRAINING, SlotState.TRUNCATING), SlotState.IDLE, "finish a slice")
        running, self.running = self.running, None
        assert running is not None
        return running
