"""Multiprocessing backend: worker processes stepping env blocks in shared memory.

Each worker owns ``envs_per_worker`` consecutive envs and their buffer rows in one
shared-memory segment (:func:`~pufferbox.vector.shm.backend_layout`) and steps them with a
:class:`~pufferbox.vector.stepper.BlockStepper`. Commands travel as flags in shared memory
plus semaphores (:mod:`pufferbox.vector.worker`); the bookkeeping of who is busy, who answered
and who is late is :class:`~pufferbox.vector.pool.WorkerPool`. Both sides spin briefly (yielding
the core) before blocking, since waking a blocked process costs about 100 µs on a small VM;
with more stepping processes than cores ``spin_s`` defaults to 0.

With ``batch_size < num_envs`` the backend is an EnvPool-style pool: ``recv()`` returns
the first workers to finish (``env_ids`` says which envs); ``zero_copy=True`` instead
waits for an aligned contiguous group of workers and returns views of its rows.

``main_envs=K`` lets the main process step envs ``0..K-1`` itself (rows first in the same
segment, so a batch is still one contiguous array): ``send()`` posts the workers' commands,
steps its own envs, and ``recv()`` then waits only for what is left of the workers' steps, so
a worker's wake-up overlaps the main process's stepping. It needs ``batch_size == num_envs``
(a pool's point is that the trainer never waits for stepping). An error in a main-process env
closes the vector env and raises :class:`WorkerError` naming the env and "the main process".

Deadlines: a worker that has not answered a command within ``step_timeout`` seconds (default
60; ``vec.step_timeout``) raises :class:`WorkerTimeoutError` naming the worker, its pid, its
envs and its process state; the workers are killed and the shared memory unlinked. A worker
that dies raises :class:`WorkerError` at once (checked every 50 ms while waiting).

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
import weakref
from typing import Any

import numpy as np

from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.vector.base import (
    EnvFactory,
    VectorConfigError,
    VectorEnv,
    WorkerError,
    WorkerTimeoutError,
    check_step_timeout,
    refuse_oversized,
)
from pufferbox.vector.pool import NoAsyncCallError, Resources, WorkerPool, main_process_error
from pufferbox.vector.shm import SharedArrays, backend_layout, buffers_of
from pufferbox.vector.stepper import BlockStepper
from pufferbox.vector.worker import RESET, STEP, Waiter, WorkerArgs, worker_main

__all__ = ["MultiprocessingVectorEnv", "NoAsyncCallError", "WorkerError", "WorkerTimeoutError"]

SPIN_SECONDS = 5e-4  # spin (yielding) this long before blocking, when the stepping processes fit the cores


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_spin(num_workers: int) -> float:
    """Spin only when every stepping process has a core: a pool with more workers than cores keeps them busy."""
    return SPIN_SECONDS if num_workers <= usable_cores() else 0.0


def plan_workers(num_envs: int, num_workers: int | None, batch_size: int | None, main_envs: int) -> int:
    """``num_workers`` checked against the other arguments (or chosen: a divisor of the worker envs)."""
    if num_envs < 1:
        raise VectorConfigError(f"num_envs must be >= 1, got {num_envs}")
    if not 0 <= main_envs < num_envs:
        raise VectorConfigError(
            f"main_envs ({main_envs}) must be in 0..num_envs-1 ({num_envs - 1}): workers need "
            f"envs too; to step every env in this process use --backend serial"
        )
    if main_envs and batch_size not in (None, num_envs):
        raise VectorConfigError(
            f"main_envs needs batch_size == num_envs (got {batch_size} of {num_envs}): the "
            f"main process steps its envs inside send(), which a pool would wait on; "
            f"drop --batch-size or --main-envs"
        )
    worker_envs = num_envs - main_envs
    if num_workers is None:
        cores = (os.cpu_count() or 1) - (1 if main_envs else 0)  # the main process steps envs on a core too
        num_workers = max(w for w in range(1, max(1, min(cores, worker_envs)) + 1) if worker_envs % w == 0)
    if num_workers < 1 or worker_envs % num_workers:
        what = f"num_envs - main_envs ({num_envs} - {main_envs})" if main_envs else f"num_envs ({num_envs})"
        raise VectorConfigError(f"{what} must be a multiple of num_workers ({num_workers})")
    return num_workers


def pick_start_method(start_method: str | None) -> str:
    methods = mp.get_all_start_methods()
    start_method = start_method or ("fork" if "fork" in methods else "spawn")
    if start_method not in methods:
        raise VectorConfigError(f"start_method {start_method!r} is not available here; choose one of {methods}")
    return start_method


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
        step_timeout: seconds a worker may take to answer one command (default 60) before
            :class:`WorkerTimeoutError`.
    """

    backend = "multiprocessing"

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int = 1,
        num_workers: int | None = None,
        batch_size: int | None = None,
        zero_copy: bool = False,
        start_method: str | None = None,
        spin_s: float | None = None,
        main_envs: int = 0,
        step_timeout: float | None = None,
        **unused: Any,
    ):
        self.closed = True  # until the workers exist: close() then has nothing to free
        if unused:
            raise VectorConfigError(f"multiprocessing backend got unsupported options: {', '.join(sorted(unused))}")
        num_workers = plan_workers(num_envs, num_workers, batch_size, main_envs)
        refuse_oversized(factory, num_envs, batch_size, processes=num_workers)  # before a worker starts
        self.setup_layout(factory, num_envs, batch_size)
        self.configure(num_workers, main_envs, zero_copy, spin_s)
        self.step_timeout = check_step_timeout(step_timeout)
        ctx = mp.get_context(pick_start_method(start_method))
        self.closed = False
        self.resources = Resources()
        self.finalizer = weakref.finalize(self, self.resources.release)
        self.start_workers(ctx, factory)
        self.start_main_envs(factory)  # after the fork, so the workers inherit none of their state

    # -- construction -------------------------------------------------------------------
    def configure(self, num_workers: int, main_envs: int, zero_copy: bool, spin_s: float | None) -> None:
        """Sizes of everything: envs and rows per worker, batch groups, the spin."""
        self.num_workers, self.main_envs = num_workers, main_envs
        self.envs_per_worker = (self.num_envs - main_envs) // num_workers
        if self.batch_envs % self.envs_per_worker and not main_envs:
            raise VectorConfigError(
                f"batch_size ({self.batch_envs}) must be a multiple of envs per worker "
                f"({self.envs_per_worker} = num_envs {self.num_envs} / num_workers {num_workers})"
            )
        self.workers_per_batch = num_workers if main_envs else self.batch_envs // self.envs_per_worker
        # num_envs % batch_size == 0 makes num_workers a multiple of workers_per_batch: groups always tile.
        self.zero_copy = zero_copy or self.workers_per_batch == num_workers
        self.spin_s = default_spin(num_workers + (1 if main_envs else 0)) if spin_s is None else float(spin_s)
        if self.spin_s < 0:
            raise VectorConfigError(f"spin_s must be >= 0 seconds, got {spin_s}")
        self.rows_per_worker = self.agents_per_env * self.envs_per_worker
        self.main_rows = main_envs * self.agents_per_env  # the main process's rows come first
        first_envs = [main_envs + w * self.envs_per_worker for w in range(num_workers)]
        first_rows = [self.main_rows + w * self.rows_per_worker for w in range(num_workers)]
        self.worker_rows = [np.arange(first, first + self.rows_per_worker) for first in first_rows]
        self.worker_envs = [np.arange(first, first + self.envs_per_worker) for first in first_envs]

    def start_workers(self, ctx: Any, factory: EnvFactory) -> None:
        """The shared segment, then one process per worker, then the pool that talks to them."""
        layout = backend_layout(self.obs_spec, self.act_spec, self.num_agents, self.num_workers)
        shared = self.resources.shared = SharedArrays.create(layout)
        self.buffers = buffers_of(shared.arrays)
        flags = shared.arrays["flags"]
        flags[:] = 0
        wakes = self.resources.wakes = [ctx.Semaphore(0) for _ in range(self.num_workers)]
        done = ctx.Semaphore(0)
        for w in range(self.num_workers):
            first_row = int(self.worker_rows[w][0])
            args = WorkerArgs(
                w,
                factory,
                int(self.worker_envs[w][0]),
                self.envs_per_worker,
                first_row,
                first_row + self.rows_per_worker,
                shared.name,
                layout,
                self.spin_s,
            )
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=worker_main, name=f"pufferbox-worker-{w}", daemon=True, args=(args, child, wakes[w], done)
            )
            proc.start()
            child.close()
            self.resources.processes.append(proc)
            self.resources.conns.append(parent)
        self.processes = self.resources.processes
        self.pids = [proc.pid for proc in self.processes]
        self.pool = WorkerPool(
            self.env_name,
            flags,
            shared.arrays["has_info"],
            wakes,
            done,
            self.resources.conns,
            self.processes,
            self.worker_envs,
            Waiter(self.spin_s),
            self.step_timeout,
            self.close,
        )
        self.batch_workers: list[int] = []
        self.pool_steps = np.zeros(self.num_workers, dtype=np.int64)  # batches per worker; see step_counts()
        self.sync_steps = 0  # batches of every worker at once: one int, not an array update per step
        # The synchronous case (every worker in every batch) is the hot path: precomputed so a
        # round trip builds no index arrays and copies no rows.
        self.all_workers = list(range(self.num_workers))
        self.action_shape = (self.batch_size, *self.act_spec.shape)
        b = self.buffers
        self.full_batch = (b.observations, b.rewards, b.terminals, b.truncations, np.arange(self.num_envs), b.masks)

    def start_main_envs(self, factory: EnvFactory) -> None:
        self.main_stepper: BlockStepper | None = None
        self.main_episodes: Episodes = NO_EPISODES
        if self.main_envs:
            try:
                self.main_stepper = BlockStepper(factory, self.buffers.slice(0, self.main_rows), 0, self.main_envs)
            except BaseException:
                self.close()
                raise
            self.resources.stepper = self.main_stepper

    # -- the batch interface ------------------------------------------------------------
    def async_reset(self, seed: int | None = 0) -> None:
        self.require_open()
        self.pool.wait_all()
        self.batch_workers = []
        for w, pipe in enumerate(self.resources.conns):
            try:
                pipe.send(seed)
            except OSError:  # the worker died since its last answer (its end is closed): name it
                self.pool.fail_broken_pipe(w)
        self.pool.command(self.all_workers, RESET)
        if self.main_stepper is not None:
            self.run_main_envs(lambda: self.main_stepper.reset(seed))

    def send(self, actions: np.ndarray) -> None:
        self.require_open()
        if not self.batch_workers:
            raise NoAsyncCallError(f"{self.env_name}: send() without a batch from recv() (call async_reset first)")
        if type(actions) is not np.ndarray or actions.shape != self.action_shape:  # the common case skips a call
            actions = self.check_actions(actions)
        rows = self.rows_per_worker
        if self.batch_workers == self.all_workers:
            if actions is not self.buffers.actions:
                self.buffers.actions[:] = actions
            self.sync_steps += 1
        else:  # a pool (never with main envs): batch rows go back to their workers' rows
            for i, w in enumerate(self.batch_workers):
                self.buffers.actions[w * rows : (w + 1) * rows] = actions[i * rows : (i + 1) * rows]
            self.pool_steps[self.batch_workers] += 1
        self.pool.command(self.batch_workers, STEP)
        self.batch_workers = []
        if self.main_stepper is not None:  # while the workers step theirs
            self.run_main_envs(self.main_stepper.step)

    def run_main_envs(self, run: Any) -> None:
        """Step or reset the main process's envs; an env error closes and raises :class:`WorkerError`."""
        try:
            self.main_episodes = run()
        except Exception:  # KeyboardInterrupt and the like propagate as they are
            env = self.main_stepper.failed_env if self.main_stepper is not None else None
            error = main_process_error(self.env_name, env, "; the vector env is closed")
            self.close()
            raise error from None

    def recv(self):
        self.require_open()
        n = self.workers_per_batch
        batch = self.pool.wait_group(n) if self.zero_copy else self.pool.wait_first(n)
        self.batch_workers = [w for w, _ in batch]
        episodes = [worker_episodes for _, worker_episodes in batch if len(worker_episodes)]
        if len(self.main_episodes):  # main envs come first, as in serial
            episodes.insert(0, self.main_episodes)
            self.main_episodes = NO_EPISODES
        episodes = Episodes.concat(episodes) if episodes else NO_EPISODES
        if self.batch_workers == self.all_workers:  # every env: views of the whole buffer
            self.batch_rows: slice | np.ndarray = slice(None)
            obs, rewards, terminals, truncations, env_ids, masks = self.full_batch
            return obs, rewards, terminals, truncations, episodes, env_ids, masks
        return self.pool_batch(episodes)

    def pool_batch(self, episodes: Episodes) -> tuple:
        """The rows of this batch's workers (a pool, so no main envs: worker w's rows start at w * rows)."""
        b = self.buffers
        if self.zero_copy:
            first, last = self.batch_workers[0], self.batch_workers[-1]
            start, stop = first * self.rows_per_worker, (last + 1) * self.rows_per_worker
            env_ids = np.arange(first * self.envs_per_worker, (last + 1) * self.envs_per_worker)
            self.batch_rows = slice(start, stop)
            return (
                b.observations[start:stop],
                b.rewards[start:stop],
                b.terminals[start:stop],
                b.truncations[start:stop],
                episodes,
                env_ids,
                b.masks[start:stop],
            )
        rows = np.concatenate([self.worker_rows[w] for w in self.batch_workers])
        env_ids = np.concatenate([self.worker_envs[w] for w in self.batch_workers])
        self.batch_rows = rows
        return (
            b.observations[rows],
            b.rewards[rows],
            b.terminals[rows],
            b.truncations[rows],
            episodes,
            env_ids,
            b.masks[rows],
        )

    def final_observations(self) -> np.ndarray | None:
        if not self.factory.writes_final_observations:
            return None
        return self.buffers.final_observations[self.batch_rows]

    def step_counts(self) -> list[int]:
        """Batches each worker has stepped (a pool's workers must all get work)."""
        return (self.pool_steps + self.sync_steps).tolist()

    # -- lifetime -----------------------------------------------------------------------
    def require_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"{self.env_name}: the vector env is closed")

    def close(self, **kwargs: Any) -> None:
        """Stop the workers (killing those that do not stop within a second) and free the shared memory."""
        if not self.closed:
            self.closed = True
            finalizer = getattr(self, "finalizer", None)  # absent when __init__ failed early
            if finalizer is not None:
                finalizer()
