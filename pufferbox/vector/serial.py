"""Serial backend: every env block in this process, stepping one after another.

The reference every other backend is tested against, and often the fastest choice
for envs that step in microseconds (no IPC at all).

An env that raises in ``step``/``reset`` surfaces as :class:`~pufferbox.vector.base.WorkerError`
naming the env, with its traceback in the message and the env's own exception as ``__cause__``
(what the other backends raise too, so ``pufferbox train`` shows one line on every backend).
pufferbox's own one-line errors about the env's contract (:class:`~pufferbox.spaces.SpaceError`,
:class:`~pufferbox.emulation.APIUsageError`) pass through as they are.

Deadline: an env that does not return from ``reset``/``step`` within ``step_timeout`` seconds (default 60,
``vec.step_timeout``) raises :class:`~pufferbox.vector.base.WorkerTimeoutError` naming it, as the
multiprocessing backend names a stuck worker: a watchdog thread (:class:`Deadline`) counts its own ticks
(so a stopped process is not blamed for the time it was stopped) and interrupts the main thread with
a real-time signal (SIGRTMIN+5), whose handler raises inside the env's code. Only where the envs step in
the main thread and no one else handles that signal.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.emulation import APIUsageError
from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.spaces import SpaceError
from pufferbox.vector.base import EnvFactory, VectorConfigError, VectorEnv, WorkerTimeoutError, check_step_timeout
from pufferbox.vector.pool import main_process_error
from pufferbox.vector.stepper import BlockStepper

# A real-time signal of its own (SIGALRM is often taken: pytest-timeout, user code); None where there is none.
ALARM: Any = signal.SIGRTMIN + 5 if hasattr(signal, "SIGRTMIN") and hasattr(signal, "pthread_kill") else None


class HungEnv(BaseException):
    """Raised by :class:`Deadline`'s signal handler inside an env that has not returned (a BaseException,
    so an env's own ``except Exception`` cannot swallow it)."""


class Deadline:
    """The watchdog of envs stepped in the main thread: one daemon thread for the process, started on first use.

    A call counts itself in :attr:`calls` and sets :attr:`timeout` (0 when it returns); the thread ticks
    every :attr:`TICK` seconds and, once one call has lasted its timeout in ticks, sends :data:`ALARM` to
    the main thread, whose handler raises :class:`HungEnv` there. Counting ticks, not wall time, a stopped
    (SIGSTOP) process is not blamed for the time it was stopped."""

    TICK = 0.25

    def __init__(self) -> None:
        self.calls, self.timeout, self.fired = 0, 0.0, -1  # fired: the call the signal was sent for
        self.thread: threading.Thread | None = None

    def install(self) -> bool:
        """Take :data:`ALARM` (where no one else handles it) and start the thread; False where it cannot."""
        if ALARM is None:
            return False
        if self.thread is not None:
            return signal.getsignal(ALARM) == self.on_alarm
        if threading.current_thread() is not threading.main_thread():
            return False
        if signal.getsignal(ALARM) not in (signal.SIG_DFL, None):
            return False
        signal.signal(ALARM, self.on_alarm)
        self.thread = threading.Thread(target=self.watch, name="pufferbox-serial-deadline", daemon=True)
        self.thread.start()
        return True

    def watch(self) -> None:
        seen, ticks, main = -1, 0, threading.main_thread()
        while main.is_alive():
            time.sleep(self.TICK)
            if not self.timeout or self.calls != seen:
                seen, ticks = self.calls, 0
                continue
            ticks += 1
            if ticks * self.TICK >= self.timeout and self.fired != seen and main.ident is not None:
                self.fired = seen
                signal.pthread_kill(main.ident, ALARM)

    def on_alarm(self, signum: int, frame: Any) -> None:
        if self.timeout and self.fired == self.calls:
            raise HungEnv


DEADLINE = Deadline()
MAIN_THREAD = threading.main_thread().ident


class SerialVectorEnv(VectorEnv):
    """All envs in-process; ``batch_size`` must equal ``num_envs``.

    Example:
        >>> import pufferbox.vector
        >>> venv = pufferbox.vector.make("cartpole", backend="serial", num_envs=4)  # doctest: +SKIP
        >>> obs, info = venv.reset(seed=0)                                        # doctest: +SKIP
    """

    backend = "serial"

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int = 1,
        batch_size: int | None = None,
        buffers: Buffers | None = None,
        step_timeout: float | None = None,
        **unused: Any,
    ):
        self.closed = True  # until the stepper exists: close() then has nothing to free
        if unused:
            raise VectorConfigError(f"serial backend got unsupported options: {', '.join(sorted(unused))}")
        self.step_timeout = check_step_timeout(step_timeout)
        self.deadline = DEADLINE.install()
        self.setup_layout(factory, num_envs, batch_size)
        if self.batch_envs != num_envs:
            raise VectorConfigError(
                "the serial backend has no pool: batch_size must equal num_envs "
                "(use --backend multiprocessing for an async pool)"
            )
        self.buffers = buffers if buffers is not None else Buffers.allocate(self.obs_spec, self.act_spec, self.num_agents)
        if len(self.buffers) != self.num_agents:
            raise VectorConfigError(
                f"serial backend: buffers have {len(self.buffers)} rows, {num_envs} envs need {self.num_agents}"
            )
        self.stepper = BlockStepper(factory, self.buffers, first_env=0, num_envs=num_envs)
        self.blocks = self.stepper.blocks
        self.closed = False
        self.env_ids = np.arange(num_envs)
        self.action_shape = (self.batch_size, *self.act_spec.shape)
        self.episodes = NO_EPISODES

    def async_reset(self, seed: int | None = 0) -> None:
        self.episodes = self.run_envs(lambda: self.stepper.reset(seed))

    def send(self, actions: np.ndarray) -> None:
        if type(actions) is not np.ndarray or actions.shape != self.action_shape:  # the common case skips a call
            actions = self.check_actions(actions)
        if actions is not self.buffers.actions:
            self.buffers.actions[:] = actions
        self.episodes = self.run_envs(self.stepper.step)

    def run_envs(self, run: Callable[[], Episodes]) -> Episodes:
        """Step or reset every env; an env's own exception becomes a :class:`WorkerError` naming it, one that
        does not return within ``step_timeout`` a :class:`WorkerTimeoutError` (the envs are closed)."""
        watched = self.deadline and threading.get_ident() == MAIN_THREAD
        if watched:  # two stores: this runs every step
            DEADLINE.calls += 1
            DEADLINE.timeout = self.step_timeout
        try:
            return run()
        except (SpaceError, APIUsageError):
            raise
        except HungEnv:
            DEADLINE.timeout = 0.0
            self.close()
            raise WorkerTimeoutError(
                f"{self.env_name}: env {self.stepper.failed_env} in the main process (pid {os.getpid()}): no answer "
                f"within step_timeout={self.step_timeout:g}s (a hung reset or step); the envs are closed. Raise "
                "vec.step_timeout if the env is only slow"
            ) from None
        except Exception as exc:  # KeyboardInterrupt and the like propagate as they are
            raise main_process_error(self.env_name, self.stepper.failed_env) from exc
        finally:
            if watched:
                DEADLINE.timeout = 0.0

    def recv(self):
        b = self.buffers
        return b.observations, b.rewards, b.terminals, b.truncations, self.episodes, self.env_ids, b.masks

    def final_observations(self) -> np.ndarray | None:
        return self.buffers.final_observations if self.factory.writes_final_observations else None

    def render(self) -> Any:
        """The first env's frame (its ``render_mode``), what ``pufferbox eval --render/--video`` shows."""
        return self.blocks[0].render()

    def close(self, **kwargs: Any) -> None:
        if not self.closed:
            self.closed = True
            self.stepper.close()
