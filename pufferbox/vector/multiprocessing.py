"""Multiprocessing backend: worker processes stepping env blocks in shared memory.

Each worker owns ``envs_per_worker`` consecutive envs and their buffer rows in one
shared-memory segment (observations, rewards, terminals, truncations, masks, actions).
The main process signals a worker by writing a command into its flag in shared memory
and posting the worker's semaphore; the worker writes ``DONE`` (or ``ERROR``) when its
rows are ready and posts one semaphore shared by all workers. Both sides spin for
``spin_s`` (calling ``os.sched_yield`` between checks) before blocking on the semaphore:
on this project's 2-core VMs waking a blocked process costs ~100 µs, which a short spin
avoids, while yielding lets the process being waited for have the core (a plain spin
with 3 processes on 2 cores ran emulated CartPole at ~7k steps/s instead of ~140k).
A :class:`Waiter` stops spinning while its recent waits outlast the spin. With more workers
than cores (a pool keeping every core busy) ``spin_s`` defaults to 0.
Pipes carry only seeds, non-empty infos and errors.

With ``batch_size < num_envs`` the backend is an EnvPool-style pool: ``recv()`` returns
the first workers to finish (``env_ids`` says which envs); ``zero_copy=True`` instead
waits for an aligned contiguous group of workers and returns views of its rows.

``main_envs=K`` lets the main process step envs ``0..K-1`` itself (rows first in the same
segment, so a batch is still one contiguous array): ``send()`` posts the workers' commands,
steps its own envs, and ``recv()`` then waits only for what is left of the workers' steps.
With ``num_workers=1`` that is two processes on two cores and no idle waiter, and a worker's
wake-up (~100 µs here) overlaps the main process's stepping instead of adding to each step.
Spinning: ``spin_s`` defaults to 0.5 ms when the workers plus the main process fit the cores
(else 0), for both sides. The main process's wait is only the imbalance between its share and
the workers'. A worker's wait between commands is the main process's remaining stepping plus
the caller's work (policy inference); when that outlasts the spin, the :class:`Waiter` stops
spinning, so the spin costs nothing while a trainer computes. A short worker spin (0.1 ms,
about one wake-up) was tried and is worse: a blocked wait includes the ~100 µs wake-up, so
the recent waits stayed above the spin and the worker kept blocking (18% of its waits under
load, against 0-5% with 0.5 ms, for NetHack 1 + 1 env). It needs
``batch_size == num_envs`` (a pool's point is that the trainer never waits for stepping,
and the main process's envs step inside ``send()``); the full batch is returned as views,
as with ``zero_copy``. An error in a main-process env closes the vector env and raises
:class:`WorkerError` naming the env and "the main process", like a worker's.

Start method: ``fork`` by default on Linux (fastest start, ~ms per worker). Forking a
process that already runs threads (a torch thread pool, a Ray client) can deadlock in the
child; build the vector env before such threads start, or pass ``start_method="forkserver"``
(or ``"spawn"``), which start clean interpreters at the cost of a slower start.

Example:
    >>> import pufferbox.vector
    >>> venv = pufferbox.vector.make("cartpole", backend="multiprocessing", num_envs=8,
    ...                              num_workers=2, batch_size=4)           # doctest: +SKIP
    >>> venv.async_reset(seed=0); obs, *_ , env_ids, masks = venv.recv()   # doctest: +SKIP
    >>> venv = pufferbox.vector.make("nethack", backend="multiprocessing", num_envs=4,
    ...                              num_workers=1, main_envs=2)            # doctest: +SKIP
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.vector.base import EnvFactory, VectorConfigError, VectorEnv, assign_blocks
from pufferbox.vector.native import concat_infos, join_infos, relabel_infos
from pufferbox.vector.shm import SharedArrays

__all__ = ["MultiprocessingVectorEnv", "WorkerError"]

# Flag values: the main process writes RESET/STEP/CLOSE, the worker answers DONE/ERROR.
DONE, RESET, STEP, CLOSE, ERROR = 0, 1, 2, 3, 4
SPIN_SECONDS = 5e-4       # spin (yielding) this long before blocking, when workers fit the cores
LIVENESS_PERIOD = 0.05    # how often a waiting main process checks that workers are alive
PARENT_CHECK = 1.0        # how often an idle worker checks that its parent still exists


class WorkerError(RuntimeError):
    """An env raised (in a worker or, with ``main_envs``, the main process), or a worker died.

    The message names the env, the process and the cause, with the env's traceback.
    """


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_spin(num_workers: int) -> float:
    """Spin only when every worker has a core: a pool with more workers than cores keeps them busy."""
    return SPIN_SECONDS if num_workers <= usable_cores() else 0.0


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


def worker_main(worker: int, factory: EnvFactory, first_env: int, num_envs: int, row_start: int,
                row_stop: int, shm_name: str, layout: dict, conn: Any, parent_pid: int,
                wake: Any, done: Any, spin_s: float) -> None:
    """A worker's loop: wait for ``wake``, run the command in ``flags[worker]``, answer, post ``done``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    shared = SharedArrays.attach(shm_name, layout)
    arrays = shared.arrays
    flags, has_info, closing = arrays["flags"], arrays["has_info"], arrays["closing"]
    buffers = Buffers(**{k: arrays[k][row_start:row_stop] for k in
                         ("observations", "rewards", "terminals", "truncations", "masks", "actions")})
    blocks: list[Any] = []
    current_env = first_env
    broken = False  # the envs could not be built: answer every command with ERROR
    try:
        blocks = factory.blocks(num_envs)
        spans = assign_blocks(blocks, buffers)
        # Precomputed (block, action rows, global env id): the step loop slices nothing.
        steps = [(block, buffers.actions[start:stop], first_env + block_env)
                 for block, (start, stop, block_env) in zip(blocks, spans)]
    except BaseException:
        conn.send(("error", f"{first_env}-{first_env + num_envs - 1} (while building)", traceback.format_exc()))
        broken, spans, steps = True, [], []
    waiter = Waiter(spin_s)
    try:
        while True:
            # One token per command; the timeout only lets an idle worker notice it was orphaned.
            if not waiter.acquire(wake, PARENT_CHECK):
                if os.getppid() != parent_pid:
                    return  # orphaned: the main process died without closing us
                continue
            command = int(flags[worker])
            if command == CLOSE or closing[0]:
                return
            if command in (DONE, ERROR):
                continue  # a CLOSE overwritten by our own answer; ``closing`` catches it next time
            if broken:
                flags[worker] = ERROR
                done.release()
                continue
            infos: list[dict] = []
            try:
                if command == RESET:
                    seed = conn.recv()
                    for block, (_, _, block_env) in zip(blocks, spans):
                        current_env = first_env + block_env
                        infos = collect(infos, block.vec_reset(None if seed is None else seed + current_env), current_env)
                else:
                    for block, block_actions, current_env in steps:
                        block_infos = block.vec_step(block_actions)
                        if block_infos:
                            infos = collect(infos, block_infos, current_env)
            except BaseException:
                env = current_env if len(blocks) == num_envs else f"{first_env}-{first_env + num_envs - 1}"
                conn.send(("error", env, traceback.format_exc()))
                flags[worker] = ERROR
                done.release()
                continue
            if infos:
                conn.send(infos)
                has_info[worker] = 1
            flags[worker] = DONE
            done.release()
    finally:
        for block in blocks:
            try:
                block.close()
            except Exception:
                pass
        shared.destroy()


def last_line(tb: str) -> str:
    """The ``ValueError: ...`` line of a formatted traceback."""
    return tb.strip().splitlines()[-1] if tb.strip() else "unknown error"


def collect(out: Sequence[dict], block_infos: Sequence[dict], first_env: int) -> Sequence[dict]:
    """``out`` and the relabelled ``block_infos``; a native block's EpisodeInfos stays arrays (see serial.py)."""
    return join_infos(out, relabel_infos(block_infos, first_env))


class Resources:
    """What must be freed even if the env is never closed: processes, pipes, the segment, main envs."""

    def __init__(self) -> None:
        self.processes: list[Any] = []
        self.conns: list[Any] = []
        self.shared: SharedArrays | None = None
        self.wakes: list[Any] = []
        self.blocks: list[Any] = []  # the main process's own env blocks (``main_envs``)

    def release(self) -> None:
        flags = self.shared.arrays.get("flags") if self.shared else None
        if flags is not None:
            self.shared.arrays["closing"][0] = 1
            flags[:] = CLOSE
            for wake in self.wakes:
                wake.release()
        blocks, self.blocks = self.blocks, []
        for block in blocks:  # while the workers close theirs
            try:
                block.close()
            except Exception:
                pass  # closing must go on: the workers and the segment are freed below
        deadline = time.monotonic() + 1.0
        for proc in self.processes:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
        for proc in self.processes:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=1.0)
        for conn in self.conns:
            conn.close()
        if self.shared is not None:
            self.shared.destroy()
        self.processes, self.conns, self.shared = [], [], None


class MultiprocessingVectorEnv(VectorEnv):
    """Envs in ``num_workers`` processes, rows in shared memory; a pool when ``batch_size < num_envs``.

    Args:
        factory: builds each worker's env blocks.
        num_envs: total envs (``num_envs - main_envs`` a multiple of ``num_workers``).
        num_workers: processes (default: ``min(cpu_count, num_envs)`` rounded to a divisor; with
            ``main_envs``, at most ``cpu_count - 1``, the main process taking a core).
        batch_size: envs per ``recv()`` (a multiple of ``num_envs / num_workers``).
        zero_copy: pools return views of an aligned contiguous group of workers instead of
            copies of the first workers to finish.
        start_method: ``fork`` (default), ``forkserver`` or ``spawn``.
        spin_s: seconds each side spins (yielding) before blocking on a semaphore (default:
            0.5 ms when the stepping processes, the main one included with ``main_envs``, fit
            the usable cores, else 0).
        main_envs: envs ``0..main_envs-1`` step in the main process inside ``send()``, while the
            workers step theirs (needs ``batch_size == num_envs``; see the module docstring).
    """

    backend = "multiprocessing"

    def __init__(self, factory: EnvFactory, num_envs: int = 1, num_workers: int | None = None,
                 batch_size: int | None = None, zero_copy: bool = False, start_method: str | None = None,
                 spin_s: float | None = None, main_envs: int = 0, **unused: Any):
        if unused:
            raise VectorConfigError(f"multiprocessing backend got unsupported options: {', '.join(sorted(unused))}")
        if num_envs < 1:
            raise VectorConfigError(f"num_envs must be >= 1, got {num_envs}")
        if not 0 <= main_envs < num_envs:
            raise VectorConfigError(f"main_envs ({main_envs}) must be in 0..num_envs-1 ({num_envs - 1}): workers need "
                                    f"envs too; to step every env in this process use --backend serial")
        if main_envs and batch_size not in (None, num_envs):
            raise VectorConfigError(f"main_envs needs batch_size == num_envs (got {batch_size} of {num_envs}): the "
                                    f"main process steps its envs inside send(), which a pool would wait on; "
                                    f"drop --batch-size or --main-envs")
        worker_envs = num_envs - main_envs
        if num_workers is None:
            cores = (os.cpu_count() or 1) - (1 if main_envs else 0)  # the main process steps envs on a core too
            num_workers = max(w for w in range(1, max(1, min(cores, worker_envs)) + 1) if worker_envs % w == 0)
        if num_workers < 1 or worker_envs % num_workers:
            what = f"num_envs - main_envs ({num_envs} - {main_envs})" if main_envs else f"num_envs ({num_envs})"
            raise VectorConfigError(f"{what} must be a multiple of num_workers ({num_workers})")
        self.setup_layout(factory, num_envs, batch_size)
        self.num_workers = num_workers
        self.main_envs = main_envs
        self.envs_per_worker = worker_envs // num_workers
        if self.batch_envs % self.envs_per_worker and not main_envs:
            raise VectorConfigError(f"batch_size ({self.batch_envs}) must be a multiple of envs per worker "
                                    f"({self.envs_per_worker} = num_envs {num_envs} / num_workers {num_workers})")
        self.workers_per_batch = num_workers if main_envs else self.batch_envs // self.envs_per_worker
        # num_envs % batch_size == 0 makes num_workers a multiple of workers_per_batch: groups always tile.
        self.zero_copy = zero_copy or self.workers_per_batch == num_workers
        methods = mp.get_all_start_methods()
        start_method = start_method or ("fork" if "fork" in methods else "spawn")
        if start_method not in methods:
            raise VectorConfigError(f"start_method {start_method!r} is not available here; choose one of {methods}")

        self.spin_s = default_spin(num_workers + (1 if main_envs else 0)) if spin_s is None else float(spin_s)
        if self.spin_s < 0:
            raise VectorConfigError(f"spin_s must be >= 0 seconds, got {spin_s}")

        rows = self.agents_per_env * self.envs_per_worker
        self.rows_per_worker = rows
        self.main_rows = main_envs * self.agents_per_env  # the main process's rows come first
        layout = dict(Buffers.layout(self.obs_spec, self.act_spec, self.num_agents))
        layout["flags"] = ((num_workers,), np.dtype(np.int32))
        layout["has_info"] = ((num_workers,), np.dtype(np.int32))
        layout["closing"] = ((1,), np.dtype(np.int32))
        self.closed = False
        self.resources = Resources()
        self.finalizer = weakref.finalize(self, self.resources.release)
        shared = SharedArrays.create(layout)
        self.resources.shared = shared
        arrays = shared.arrays
        self.buffers = Buffers(**{k: arrays[k] for k in
                                  ("observations", "rewards", "terminals", "truncations", "masks", "actions")})
        self.flags, self.has_info = arrays["flags"], arrays["has_info"]
        self.flags[:] = DONE
        ctx = mp.get_context(start_method)
        self.waiter = Waiter(self.spin_s)
        self.wakes = [ctx.Semaphore(0) for _ in range(num_workers)]
        self.resources.wakes = self.wakes
        self.done = ctx.Semaphore(0)
        self.pipes = []
        first_envs = [main_envs + w * self.envs_per_worker for w in range(num_workers)]
        first_rows = [self.main_rows + w * rows for w in range(num_workers)]
        for w in range(num_workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, name=f"pufferbox-worker-{w}", daemon=True, args=(
                w, factory, first_envs[w], self.envs_per_worker, first_rows[w], first_rows[w] + rows,
                shared.name, layout, child, os.getpid(), self.wakes[w], self.done, self.spin_s))
            proc.start()
            child.close()
            self.resources.processes.append(proc)
            self.resources.conns.append(parent)
            self.pipes.append(parent)
        self.processes = self.resources.processes
        self.pids = [proc.pid for proc in self.processes]
        self.worker_rows = [np.arange(first, first + rows) for first in first_rows]
        self.worker_envs = [np.arange(first, first + self.envs_per_worker) for first in first_envs]
        self.in_flight: list[int] = []   # workers given a command, not yet collected
        self.ready: list[tuple[int, list[dict]]] = []  # finished, not yet returned, in finishing order
        self.batch_workers: list[int] = []
        self.pool_steps = np.zeros(num_workers, dtype=np.int64)  # batches per worker; see step_counts()
        self.sync_steps = 0  # batches of every worker at once: one int, not an array update per step
        # The synchronous case (every worker in every batch) is the hot path: precomputed so a
        # round trip builds no index arrays and copies no rows.
        self.all_workers = list(range(num_workers))
        self.action_shape = (self.batch_size, *self.act_spec.shape)
        b = self.buffers
        self.full_batch = (b.observations, b.rewards, b.terminals, b.truncations, np.arange(num_envs), b.masks)
        self.last_alive_check = time.perf_counter()
        # Built after the fork, so the workers inherit none of their state (nle's, say).
        self.main_blocks: list[Any] = []
        self.main_steps: list[tuple[Any, np.ndarray, int]] = []
        self.main_infos: Sequence[dict] = []
        if main_envs:
            try:
                self.main_blocks = self.resources.blocks = factory.blocks(main_envs)
                spans = assign_blocks(self.main_blocks, self.buffers.slice(0, self.main_rows))
            except BaseException:
                self.close()
                raise
            # (block, its action rows, first env), as in the workers: the step loop slices nothing.
            self.main_steps = [(block, self.buffers.actions[start:stop], first_env)
                               for block, (start, stop, first_env) in zip(self.main_blocks, spans)]

    # -- signalling -------------------------------------------------------------------
    def command(self, workers: list[int], command: int) -> None:
        for w in workers:
            self.flags[w] = command
            self.wakes[w].release()
        self.in_flight.extend(workers)

    def async_reset(self, seed: int | None = 0) -> None:
        self.require_open()
        self.wait_all()
        self.ready, self.batch_workers = [], []
        for pipe in self.pipes:
            pipe.send(seed)
        self.command(list(range(self.num_workers)), RESET)
        self.run_main_envs(lambda block, first_env: block.vec_reset(None if seed is None else seed + first_env))

    def send(self, actions: np.ndarray) -> None:
        self.require_open()
        if not self.batch_workers:
            raise RuntimeError(f"{self.env_name}: send() without a batch from recv() (call async_reset first)")
        if type(actions) is not np.ndarray or actions.shape != self.action_shape:  # the common case skips a call
            actions = self.check_actions(actions)
        rows = self.rows_per_worker
        if self.batch_workers == self.all_workers:
            if actions is not self.buffers.actions:
                self.buffers.actions[:] = actions
            self.sync_steps += 1
        else:  # a pool (never with main envs): batch rows go back to their workers' rows
            for i, w in enumerate(self.batch_workers):
                self.buffers.actions[w * rows:(w + 1) * rows] = actions[i * rows:(i + 1) * rows]
            self.pool_steps[self.batch_workers] += 1
        self.command(self.batch_workers, STEP)
        self.batch_workers = []
        if self.main_steps:  # while the workers step theirs
            self.run_main_envs(None)

    def run_main_envs(self, reset: Any) -> None:
        """Step (``reset=None``) or reset the main process's envs; an env error closes and raises."""
        infos: Sequence[dict] = []
        first_env = 0
        try:
            if reset is None:
                for block, block_actions, first_env in self.main_steps:
                    block_infos = block.vec_step(block_actions)
                    if block_infos:
                        infos = collect(infos, block_infos, first_env)
            else:
                for block, _, first_env in self.main_steps:
                    infos = collect(infos, reset(block, first_env), first_env)
        except Exception:  # KeyboardInterrupt and the like propagate as they are
            env = first_env if len(self.main_blocks) == self.main_envs else f"0-{self.main_envs - 1}"
            tb = traceback.format_exc()
            self.close()
            raise WorkerError(f"{self.env_name}: env {env} in the main process (pid {os.getpid()}) raised "
                              f"{last_line(tb)}; the vector env is closed. Traceback:\n{tb}") from None
        self.main_infos = infos

    def recv(self):
        self.require_open()
        batch = self.wait_group() if self.zero_copy else self.wait_first()
        self.batch_workers = [w for w, _ in batch]
        infos = concat_infos(worker_infos for _, worker_infos in batch)
        if self.main_steps:  # main envs come first, as in serial
            infos, self.main_infos = concat_infos((self.main_infos, infos)), []
        if self.batch_workers == self.all_workers:  # every env: views of the whole buffer
            obs, rewards, terminals, truncations, env_ids, masks = self.full_batch
            return obs, rewards, terminals, truncations, infos, env_ids, masks
        b = self.buffers
        # A pool from here on, so no main envs (refused with a pool): worker w's rows start at w * rows.
        if self.zero_copy:
            first, last = self.batch_workers[0], self.batch_workers[-1]
            start, stop = first * self.rows_per_worker, (last + 1) * self.rows_per_worker
            env_ids = np.arange(first * self.envs_per_worker, (last + 1) * self.envs_per_worker)
            return (b.observations[start:stop], b.rewards[start:stop], b.terminals[start:stop],
                    b.truncations[start:stop], infos, env_ids, b.masks[start:stop])
        rows = np.concatenate([self.worker_rows[w] for w in self.batch_workers])
        env_ids = np.concatenate([self.worker_envs[w] for w in self.batch_workers])
        return (b.observations[rows], b.rewards[rows], b.terminals[rows], b.truncations[rows], infos,
                env_ids, b.masks[rows])

    def step_counts(self) -> list[int]:
        """Batches each worker has stepped (a pool's workers must all get work)."""
        return (self.pool_steps + self.sync_steps).tolist()

    # -- waiting ----------------------------------------------------------------------
    def poll(self) -> bool:
        """Move finished workers from in_flight to ready; True if any moved."""
        moved = False
        for w in list(self.in_flight):
            flag = self.flags[w]
            if flag == DONE:
                infos: list[dict] = []
                if self.has_info[w]:
                    infos = self.pipes[w].recv()
                    self.has_info[w] = 0
                self.in_flight.remove(w)
                self.ready.append((w, infos))
                moved = True
            elif flag == ERROR:
                self.in_flight.remove(w)
                self.raise_worker_error(w)
        return moved

    def wait_until(self, satisfied: Any) -> None:
        now = time.perf_counter()
        # Checked even when results keep coming: in a pool, live workers can hide a dead one.
        if now - self.last_alive_check > LIVENESS_PERIOD:
            self.last_alive_check = now
            self.check_alive()
        while not satisfied():
            if self.poll():
                continue
            # Every answer posts one token and only this wait takes them, so none is lost; tokens
            # of answers already seen by polling cost one spurious pass each, never a stall.
            self.waiter.acquire(self.done, LIVENESS_PERIOD)
            self.poll()  # before check_alive: a worker that answered and then died still answered
            now = time.perf_counter()
            if now - self.last_alive_check > LIVENESS_PERIOD:
                self.last_alive_check = now
                self.check_alive()

    def wait_first(self) -> list[tuple[int, list[dict]]]:
        n = self.workers_per_batch
        if len(self.ready) + len(self.in_flight) < n:
            raise RuntimeError(f"{self.env_name}: recv() called twice without send()")
        self.wait_until(lambda: len(self.ready) >= n)
        if n == self.num_workers:
            self.ready.sort(key=lambda item: item[0])
        batch, self.ready = self.ready[:n], self.ready[n:]
        return batch

    def wait_group(self) -> list[tuple[int, list[dict]]]:
        n = self.workers_per_batch
        if n == self.num_workers:  # synchronous: the one group is everyone
            if len(self.ready) + len(self.in_flight) < n:
                raise RuntimeError(f"{self.env_name}: recv() called twice without send()")
            self.wait_until(lambda: not self.in_flight)
            batch, self.ready = sorted(self.ready, key=lambda item: item[0]), []
            return batch

        def complete_group() -> int | None:
            """The group whose last member finished first (fair: no group starves another)."""
            counts: dict[int, int] = {}
            for w, _ in self.ready:
                g = w - w % n
                counts[g] = counts.get(g, 0) + 1
                if counts[g] == n:
                    return g
            return None

        if len(self.ready) + len(self.in_flight) < n:
            raise RuntimeError(f"{self.env_name}: recv() called twice without send()")
        self.wait_until(lambda: complete_group() is not None)
        g = complete_group()
        members = set(range(g, g + n))
        batch = sorted((item for item in self.ready if item[0] in members), key=lambda item: item[0])
        self.ready = [item for item in self.ready if item[0] not in members]
        return batch

    def wait_all(self) -> None:
        """Let in-flight work finish (its results are dropped), e.g. before a reset."""
        self.wait_until(lambda: not self.in_flight)

    def check_alive(self) -> None:
        for w, proc in enumerate(self.processes):
            if proc.exitcode is not None:
                code = proc.exitcode
                how = f"was killed by signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exited with status {code}"
                self.close()
                envs = self.worker_envs[w]
                raise WorkerError(f"{self.env_name}: worker {w} (pid {proc.pid}, envs {envs[0]}-{envs[-1]}) "
                                  f"{how}; the vector env is closed. "
                                  f"Check the env for crashes or memory use (dmesg shows OOM kills)")

    def raise_worker_error(self, w: int) -> None:
        _, env, tb = self.pipes[w].recv()
        self.close()
        raise WorkerError(f"{self.env_name}: env {env} in worker {w} (pid {self.pids[w]}) raised "
                          f"{last_line(tb)}; the vector env is closed. Worker traceback:\n{tb}")

    # -- lifetime ---------------------------------------------------------------------
    def require_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"{self.env_name}: the vector env is closed")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            finalizer = getattr(self, "finalizer", None)  # absent when __init__ failed early
            if finalizer is not None:
                finalizer()
