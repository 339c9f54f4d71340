"""A tournament's settings: one :class:`TournamentSettings`, built by the CLI and passed whole.

Its field defaults are the only place the tournament's defaults are written: the CLI's
options show them (:func:`setting_default`), :func:`~pufferbox.tournament.orchestrator.run_tournament`
takes the object, and the board stores it, so ``--resume`` continues a tournament as it started.
This module imports nothing heavy: the CLI reads it to build its ``--help``.

Example:
    >>> s = TournamentSettings("cartpole", total_steps=400_000)
    >>> s.pods, s.slice_growth, s.score_opponent
    (4, 2.0, 'self')
    >>> s.resolved(update_steps=2048).slice_steps   # about four slices per pod
    25000
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from pufferbox.errors import PufferboxError

__all__ = ["SCORE_OPPONENTS", "TournamentError", "TournamentSettings", "setting_default"]

SCORE_OPPONENTS = ("self", "random")


class TournamentError(PufferboxError, RuntimeError):
    """The tournament cannot run as asked (bad settings, a resume mismatch, a pod's code failing)."""


@dataclass(frozen=True)
class TournamentSettings:
    """What a tournament is started with; stored on its board so ``--resume`` continues it as it was.

    ``slice_steps`` (the longest slice) and ``first_slice_steps`` left as None are filled in from the
    env's update size by :meth:`resolved`. An env with agent groups scores a checkpoint by one group's
    mean return (``score_group``), playing its own checkpoint's other groups (``score_opponent="self"``)
    or uniform random actions there (``"random"``, which turns truncation off). ``plugin``: the
    distribution whose ``env`` the pods train, where two plugins offer the name (``--plugin``).
    """

    env: str | None = None  # None only when resuming: the board holds it
    pods: int = 4
    total_steps: int | None = None
    hours: float | None = None
    slice_steps: int | None = None
    first_slice_steps: int | None = None
    slice_growth: float = 2.0
    truncate_below: float = 0.5
    halving: bool = False
    eval_episodes: int = 10
    capacity: int = 8
    cpus_per_pod: float = 1.0
    seed: int = 0
    score_group: str | None = None
    score_opponent: str = "self"
    plugin: str | None = None

    def check(self) -> None:
        """Refuse settings no tournament can run with, in one line naming the flag."""
        if (self.total_steps is None) == (self.hours is None):
            raise TournamentError("give exactly one budget: --total-steps T or --hours H")
        if self.pods < 1:
            raise TournamentError(f"--pods must be at least 1, got {self.pods}")
        if self.slice_growth < 1:
            raise TournamentError(f"--slice-growth must be at least 1, got {self.slice_growth}")
        if self.score_opponent not in SCORE_OPPONENTS:
            raise TournamentError(f"--score-opponent: {self.score_opponent!r} is not one of {', '.join(SCORE_OPPONENTS)}")

    def resolved(self, update_steps: int, **fixed: Any) -> TournamentSettings:
        """Checked, with the slice lengths left out filled in from ``update_steps`` (env steps of one
        update) and ``fixed`` applied (the env's own name, the score group, the plugin that holds it)."""
        self.check()
        s = replace(self, **fixed)
        longest = s.slice_steps
        if longest is None:  # about four slices per pod, long enough to learn
            longest = max(update_steps, s.total_steps // (s.pods * 4)) if s.total_steps is not None else 50 * update_steps
        first = s.first_slice_steps
        if first is None:  # a few updates: enough to tell the first settings apart
            first = max(4 * update_steps, longest // 16)
        # Training returns (against itself) do not compare with scores against random play: no truncation.
        truncate = 0.0 if s.score_opponent == "random" else s.truncate_below
        return replace(s, slice_steps=longest, first_slice_steps=min(first, longest), truncate_below=truncate)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_board(cls, stored: dict) -> TournamentSettings:
        """The settings a board recorded, also one written before a field existed."""
        # Boards written before the slice schedule existed trained fixed slices and never truncated;
        # before group scoring every board scored the mean return over all agents; before the plugin
        # record every board trained the holder of its env's name.
        old: dict[str, Any] = {
            "first_slice_steps": stored["slice_steps"],
            "slice_growth": 1.0,
            "truncate_below": 0.0,
            "halving": False,
            "score_opponent": "self",
            "plugin": None,
        }
        values: dict[str, Any] = {f.name: stored.get(f.name, old.get(f.name)) for f in fields(cls)}
        return cls(**values)


def setting_default(name: str) -> Any:
    """The default of setting ``name`` (what the CLI shows and uses)."""
    return TournamentSettings.__dataclass_fields__[name].default
