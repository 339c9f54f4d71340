"""The multiprocessing backend's worker protocol: one flag per worker, two semaphores, one pipe.

The main process writes a :class:`Command` into the worker's flag in shared memory and posts
the worker's ``wake`` semaphore; the worker runs its :class:`~pufferbox.vector.stepper.BlockStepper`,
writes ``DONE`` (or ``ERROR``) into the flag and posts the ``done`` semaphore that all workers
share. Its rows are in the shared segment; the pipe carries only seeds, non-empty
:class:`~pufferbox.episodes.Episodes` (``has_info`` says one is waiting) and errors
(``("error", env, traceback)``).

Both sides wait through a :class:`Waiter`: waking a blocked process costs about 100 µs on a
small VM, so a short yielding spin answers fast steps sooner; it stops spinning while recent
waits outlast the spin, so it holds no core while the other side is busy.

Example:
    >>> Command.STEP, Command(0).name
    (<Command.STEP: 2>, 'DONE')
"""

from __future__ import annotations

import enum
import os
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.episodes import Episodes
from pufferbox.vector.base import EnvFactory
from pufferbox.vector.shm import Layout, SharedArrays, buffers_of
from pufferbox.vector.stepper import BlockStepper

__all__ = ["Command", "Waiter", "WorkerArgs", "worker_main", "pack", "unpack", "PARENT_CHECK"]

PARENT_CHECK = 1.0  # how often an idle worker checks that its parent still exists


class Command(enum.IntEnum):
    """A worker's flag: the main process writes RESET/STEP/CLOSE, the worker answers DONE/ERROR."""

    DONE = 0
    RESET = 1
    STEP = 2
    CLOSE = 3
    ERROR = 4


# Plain ints for the per-step comparisons (an enum attribute lookup costs more than the compare).
DONE, RESET, STEP, CLOSE, ERROR = (int(c) for c in Command)


class Waiter:
    """Takes semaphore tokens, spinning first only while recent waits were shorter than the spin.

    A spin saves the wake-up of a blocked process but holds a core. When recent waits ran
    longer than ``spin_s`` (slow steps, an idle trainer, other jobs on the cores) a spin
    would only time out, so the waiter blocks at once; waits get short again and it spins again.

    Example:
        >>> import multiprocessing as mp
        >>> sem = mp.Semaphore(1)
        >>> Waiter(spin_s=1e-4).acquire(sem, timeout=0.1)
        True
    """

    def __init__(self, spin_s: float):
        self.spin_s = spin_s
        self.recent_wait = 0.0  # moving average of seconds per wait

    def acquire(self, sem: Any, timeout: float) -> bool:
        if sem.acquire(False):
            self.recent_wait *= 0.75
            return True
        start = time.perf_counter()
        got = False
        if self.spin_s > 0 and self.recent_wait < self.spin_s:
            deadline = start + self.spin_s
            while not got and time.perf_counter() < deadline:
                os.sched_yield()  # a runnable process on this core (maybe the one we wait for) goes first
                got = sem.acquire(False)
        if not got:
            got = sem.acquire(True, timeout)
        self.recent_wait = 0.75 * self.recent_wait + 0.25 * (time.perf_counter() - start)
        return got


@dataclass(frozen=True)
class WorkerArgs:
    """What a worker needs to start: its index, envs, rows and where the shared segment is."""

    worker: int
    factory: EnvFactory
    first_env: int
    num_envs: int
    row_start: int
    row_stop: int
    shm_name: str
    layout: Layout
    spin_s: float

    @property
    def env_range(self) -> str:
        return f"{self.first_env}-{self.first_env + self.num_envs - 1}"


def pack(episodes: Episodes) -> tuple:
    """Episodes as plain lists for the pipe: pickling an object costs a class lookup on each side,
    several times the price of a few numbers, and a worker sends episodes nearly every step."""
    metrics = {name: v.tolist() for name, v in episodes.metrics.items()} if episodes.metrics else None
    return episodes.env_ids.tolist(), episodes.returns.tolist(), episodes.lengths.tolist(), metrics


def unpack(message: tuple) -> Episodes:
    env_ids, returns, lengths, metrics = message
    return Episodes.trusted(
        np.array(env_ids, np.int64),
        np.array(returns, np.float64),
        np.array(lengths, np.int64),
        {name: np.array(v, np.float64) for name, v in metrics.items()} if metrics else {},
    )


def die_with_parent() -> None:
    """Linux: the kernel kills this process when its parent dies, even in a hung env step (an idle
    worker also notices by polling); multiprocessing's resource tracker then unlinks the segment."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the idle-worker poll is all there is


def worker_main(args: WorkerArgs, conn: Any, wake: Any, done: Any) -> None:
    """A worker's loop: wait for ``wake``, run the command in its flag, answer, post ``done``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    # A forked worker inherits the parent's Python SIGTERM handler (ray.init installs sys.exit(15)): restore
    # the default so SIGTERM kills it as a signal, which is how the parent tells a kill from a crash.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()  # the main process, or the forkserver that forked us
    die_with_parent()
    shared = SharedArrays.attach(args.shm_name, args.layout)
    rows: Buffers = buffers_of(shared.arrays).slice(args.row_start, args.row_stop)
    stepper = None
    try:
        try:
            stepper = BlockStepper(args.factory, rows, args.first_env, args.num_envs)
        except BaseException:  # every later command is answered with ERROR
            conn.send(("error", f"{args.env_range} (while building)", traceback.format_exc()))
        serve(args, stepper, shared.arrays, conn, wake, done, parent)
    finally:
        if stepper is not None:
            stepper.close()
        shared.destroy()


def serve(
    args: WorkerArgs, stepper: BlockStepper | None, arrays: dict, conn: Any, wake: Any, done: Any, parent: int
) -> None:
    """Answer commands until CLOSE, or until the parent is gone."""
    w = args.worker
    flags, has_info, closing = arrays["flags"], arrays["has_info"], arrays["closing"]
    waiter = Waiter(args.spin_s)
    while True:
        # One token per command; the timeout only lets an idle worker notice it was orphaned.
        if not waiter.acquire(wake, PARENT_CHECK):
            if os.getppid() != parent:
                return  # orphaned: the main process died without closing us
            continue
        command = int(flags[w])
        if command == CLOSE or closing[0]:
            return
        if command in (DONE, ERROR):
            continue  # a CLOSE overwritten by our own answer; ``closing`` catches it next time
        if stepper is None:
            flags[w] = ERROR
            done.release()
            continue
        try:
            episodes = stepper.reset(conn.recv()) if command == RESET else stepper.step()
        except BaseException:
            conn.send(("error", stepper.failed_env, traceback.format_exc()))
            flags[w] = ERROR
            done.release()
            continue
        if len(episodes):
            conn.send(pack(episodes))
            has_info[w] = 1
        flags[w] = DONE
        done.release()
