"""The multiprocessing backend's bookkeeping: which workers are busy, which answered, which are late.

:class:`WorkerPool` sends commands (:mod:`pufferbox.vector.worker`), collects answers in
finishing order, and raises a named error, after ``on_fatal`` closed the vector env, when
a worker's env raised (:class:`WorkerError`), its process died (:class:`WorkerError`) or it
has not answered a command for ``step_timeout`` seconds (:class:`WorkerTimeoutError`: a hung
env, a process stopped with SIGSTOP). The deadline is per command, so in an async pool a
stopped worker is named even while the other workers keep answering.
:class:`Resources` frees processes, pipes and the shared segment even if nobody calls close().
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.errors import PufferboxError
from pufferbox.vector.base import WorkerError, WorkerTimeoutError
from pufferbox.vector.shm import SharedArrays
from pufferbox.vector.worker import CLOSE, DONE, ERROR, unpack

__all__ = ["NoAsyncCallError", "Resources", "WorkerPool", "last_line"]

LIVENESS_PERIOD = 0.05  # how often a waiting main process checks that workers are alive and on time

Answer = tuple[int, Episodes]  # (worker, episodes of its envs)


class NoAsyncCallError(PufferboxError, RuntimeError):
    """``recv()`` without a pending ``send()``/``async_reset()``, or ``send()`` without a batch."""


def last_line(tb: str) -> str:
    """The ``ValueError: ...`` line of a formatted traceback."""
    return tb.strip().splitlines()[-1] if tb.strip() else "unknown error"


def main_process_error(env_name: str, env: Any, after: str = "") -> WorkerError:
    """The :class:`WorkerError` for the exception being handled, raised by env ``env`` stepped in this
    process (serial, ``main_envs``): names the env, the pid, the error line, then the traceback."""
    tb = traceback.format_exc()
    return WorkerError(
        f"{env_name}: env {env} in the main process (pid {os.getpid()}) raised {last_line(tb)}{after}. Traceback:\n{tb}"
    )


def process_state(pid: int) -> str:
    """The kernel's word for a process's state (``stopped``, ``sleeping``, ...), for error messages."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            code = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "unknown"
    return {
        "R": "running",
        "S": "sleeping",
        "D": "in uninterruptible I/O",
        "T": "stopped (SIGSTOP?)",
        "t": "stopped by a debugger",
        "Z": "a zombie",
    }.get(code, code)


class WorkerPool:
    """Commands out, answers in, for ``len(processes)`` workers sharing ``flags``/``has_info``."""

    def __init__(
        self,
        env_name: str,
        flags: np.ndarray,
        has_info: np.ndarray,
        wakes: list,
        done: Any,
        pipes: list,
        processes: list,
        worker_envs: list[np.ndarray],
        waiter: Any,
        step_timeout: float,
        on_fatal: Callable[[], None],
    ):
        self.env_name, self.flags, self.has_info = env_name, flags, has_info
        self.wakes, self.done, self.pipes, self.processes = wakes, done, pipes, processes
        self.pids = [proc.pid for proc in processes]
        self.worker_envs, self.waiter = worker_envs, waiter
        self.step_timeout, self.on_fatal = step_timeout, on_fatal
        self.in_flight: list[int] = []  # workers given a command, not yet collected
        self.ready: list[Answer] = []  # finished, not yet returned, in finishing order
        self.sent_at = [0.0] * len(processes)
        self.last_check = time.perf_counter()

    # -- commands -----------------------------------------------------------------------
    def command(self, workers: list[int], command: int) -> None:
        now = time.perf_counter()
        for w in workers:
            self.flags[w] = command
            self.sent_at[w] = now
            self.wakes[w].release()
        self.in_flight.extend(workers)

    def pending(self) -> int:
        return len(self.ready) + len(self.in_flight)

    # -- answers ------------------------------------------------------------------------
    def poll(self) -> bool:
        """Move finished workers from in_flight to ready; True if any moved."""
        moved = False
        for w in list(self.in_flight):
            flag = self.flags[w]
            if flag == DONE:
                episodes = NO_EPISODES
                if self.has_info[w]:
                    episodes = unpack(self.pipes[w].recv())
                    self.has_info[w] = 0
                self.in_flight.remove(w)
                self.ready.append((w, episodes))
                moved = True
            elif flag == ERROR:
                self.in_flight.remove(w)
                self.raise_worker_error(w)
        return moved

    def wait_until(self, satisfied: Callable[[], bool]) -> None:
        self.check_periodically()  # even when answers keep coming: live workers can hide a dead one
        while not satisfied():
            if self.poll():
                continue
            # Every answer posts one token and only this wait takes them, so none is lost; tokens
            # of answers already seen by polling cost one spurious pass each, never a stall.
            self.waiter.acquire(self.done, LIVENESS_PERIOD)
            self.poll()  # before the liveness check: a worker that answered and then died still answered
            self.check_periodically()

    def wait_first(self, n: int) -> list[Answer]:
        """The first ``n`` workers to answer (all of them sorted, when ``n`` is every worker)."""
        self.require_pending(n)
        self.wait_until(lambda: len(self.ready) >= n)
        if n == len(self.processes):
            self.ready.sort(key=lambda item: item[0])
        batch, self.ready = self.ready[:n], self.ready[n:]
        return batch

    def wait_group(self, n: int) -> list[Answer]:
        """The aligned group of ``n`` workers whose last member answered first (no group starves another)."""
        self.require_pending(n)
        if n == len(self.processes):  # synchronous: the one group is everyone
            self.wait_until(lambda: not self.in_flight)
            batch, self.ready = sorted(self.ready, key=lambda item: item[0]), []
            return batch
        self.wait_until(lambda: self.complete_group(n) is not None)
        g = self.complete_group(n)
        assert g is not None  # wait_until returned: a group is complete
        members = set(range(g, g + n))
        batch = sorted((item for item in self.ready if item[0] in members), key=lambda item: item[0])
        self.ready = [item for item in self.ready if item[0] not in members]
        return batch

    def complete_group(self, n: int) -> int | None:
        counts: dict[int, int] = {}
        for w, _ in self.ready:
            g = w - w % n
            counts[g] = counts.get(g, 0) + 1
            if counts[g] == n:
                return g
        return None

    def wait_all(self) -> None:
        """Let in-flight work finish and drop every unreturned answer, e.g. before a reset."""
        self.wait_until(lambda: not self.in_flight)
        self.ready = []

    def require_pending(self, n: int) -> None:
        if self.pending() < n:
            raise NoAsyncCallError(f"{self.env_name}: recv() called twice without send()")

    # -- failures -----------------------------------------------------------------------
    def check_periodically(self) -> None:
        now = time.perf_counter()
        if now - self.last_check > LIVENESS_PERIOD:
            away = now - self.last_check - 2 * LIVENESS_PERIOD  # a waiting caller looks at least this often
            if away > 0:  # the caller was busy elsewhere or stopped (SIGSTOP, suspend): not the workers' time
                for w in self.in_flight:
                    self.sent_at[w] = min(self.sent_at[w] + away, now)
            self.last_check = now
            self.poll()  # an answer that came while nobody looked is on time
            self.check_alive()
            self.check_deadline(now)

    def check_alive(self) -> None:
        for w, proc in enumerate(self.processes):
            code = proc.exitcode
            if code is not None:
                how = (
                    f"was killed by signal {-code} ({signal.Signals(-code).name})"
                    if code < 0
                    else f"exited with status {code}"
                )
                self.fail(
                    WorkerError(
                        f"{self.env_name}: {self.describe(w)} {how}; the vector env is closed. "
                        f"Check the env for crashes or memory use (dmesg shows OOM kills)"
                    )
                )

    def check_deadline(self, now: float) -> None:
        late = [w for w in self.in_flight if now - self.sent_at[w] > self.step_timeout]
        if late:
            names = "; ".join(f"{self.describe(w)}, process {process_state(self.pids[w])}" for w in late)
            self.fail(
                WorkerTimeoutError(
                    f"{self.env_name}: {names}: no answer within step_timeout={self.step_timeout:g}s (a hung env or "
                    f"a stopped process); the workers are killed and the vector env is closed. Raise vec.step_timeout "
                    f"if a step can take this long"
                )
            )

    def fail_broken_pipe(self, w: int, grace_s: float = 2.0) -> None:
        """Raise the :class:`WorkerError` for worker ``w`` whose pipe broke: its exit status once the
        process is reaped (within ``grace_s``), else the broken pipe itself. An ``OSError`` must not
        escape: click reads a broken pipe as its own stdout closing and exits 1 without a word."""
        self.processes[w].join(grace_s)
        self.check_alive()
        self.fail(WorkerError(f"{self.env_name}: the pipe to {self.describe(w)} broke; the vector env is closed"))

    def raise_worker_error(self, w: int) -> None:
        _, env, tb = self.pipes[w].recv()
        self.fail(
            WorkerError(
                f"{self.env_name}: env {env} in worker {w} (pid {self.pids[w]}) raised "
                f"{last_line(tb)}; the vector env is closed. Worker traceback:\n{tb}"
            )
        )

    def describe(self, w: int) -> str:
        envs = self.worker_envs[w]
        return f"worker {w} (pid {self.pids[w]}, envs {envs[0]}-{envs[-1]})"

    def fail(self, error: WorkerError) -> None:
        self.on_fatal()
        raise error


class Resources:
    """What must be freed even if the env is never closed: processes, pipes, the segment, main envs."""

    def __init__(self) -> None:
        self.processes: list[Any] = []
        self.conns: list[Any] = []
        self.shared: SharedArrays | None = None
        self.wakes: list[Any] = []
        self.stepper: Any = None  # the main process's own envs (``main_envs``)

    def release(self) -> None:
        arrays = self.shared.arrays if self.shared else {}
        flags = arrays.get("flags")
        if flags is not None:
            arrays["closing"][0] = 1
            flags[:] = CLOSE
            for wake in self.wakes:
                wake.release()
        stepper, self.stepper = self.stepper, None
        if stepper is not None:
            stepper.close()  # while the workers close theirs
        deadline = time.monotonic() + 1.0
        for proc in self.processes:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
        for proc in self.processes:
            if proc.is_alive():  # hung or stopped: SIGKILL ends stopped processes too
                proc.kill()
                proc.join(timeout=5.0)
        for conn in self.conns:
            conn.close()
        if self.shared is not None:
            self.shared.destroy()
        self.processes, self.conns, self.shared = [], [], None
