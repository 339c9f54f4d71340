"""Ray backend: the multiprocessing backend's interface on Ray actors, local or on a cluster.

Each actor owns ``envs_per_worker`` envs (its own :class:`~pufferbox.buffers.Buffers`) and
answers ``reset``/``step`` with its rows. ``batch_size < num_envs`` makes a pool: ``recv()``
returns the first actors to finish (``ray.wait``), and every actor's finished result is
kept until it is returned, so no actor sits idle while others are polled. An actor that
does not answer within ``step_timeout`` seconds (default 60) raises :class:`WorkerTimeoutError`
naming it, and the actors are killed.

``address`` (or ``RAY_ADDRESS``) joins an existing cluster; otherwise a local Ray starts
bound to 127.0.0.1, without dashboard, with ``RAY_AUTH_MODE=disabled`` (nothing written to
the home directory) and a private temp dir (``mkdtemp`` under ``/tmp``, mode 0700: Unix socket
paths are limited to 107 bytes), deleted at exit (``PUFFERBOX_KEEP_RAY_LOGS=1`` keeps it).

Example:
    >>> import pufferbox.vector
    >>> venv = pufferbox.vector.make("cartpole", backend="ray", num_envs=4, num_workers=2)  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import os
import shutil
from typing import Any

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.episodes import Episodes
from pufferbox.vector.base import EnvFactory, VectorConfigError, VectorEnv, WorkerTimeoutError, check_step_timeout
from pufferbox.vector.stepper import BlockStepper

__all__ = ["RayVectorEnv", "RayConnectError", "ensure_ray"]


TEMP_ROOT_VAR = "PUFFERBOX_RAY_TMPDIR"
CONNECT_TIMEOUT = 15.0  # seconds to reach a cluster's GCS before giving up (Ray itself retries for minutes)
local_temp_dir: str | None = None  # the private session dir of the local Ray this process started, if any


class RayConnectError(VectorConfigError):
    """The Ray cluster address cannot be reached (one line, naming the address and the fix)."""


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Connect to ``address`` (or ``$RAY_ADDRESS``), or start a local, loopback-only Ray.

    A cluster address that does not answer within ``CONNECT_TIMEOUT`` seconds raises
    :class:`RayConnectError`. The local Ray's session dir is a fresh ``mkdtemp`` (mode 0700) under
    ``$PUFFERBOX_RAY_TMPDIR`` (default ``/tmp``: Unix socket paths are limited to 107 bytes); a root
    dir owned by another user, or writable by others without the sticky bit, is refused.
    """
    global local_temp_dir
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        # On Linux Ray rewrites 127.0.0.1 to the host's routable address unless "cluster mode" is
        # off; it reads this variable when ray is first imported, so set it before importing ray.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():
        return ray
    if not address:
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False  # ray may have been imported before the variable was set
    if address:
        check_reachable(address)
        ray.init(address=address, log_to_driver=False)
    else:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        temp_dir = private_temp_dir(os.environ.get(TEMP_ROOT_VAR) or "/tmp")
        # Ray makes its own temp dir 0777: give it a subdir, so the private 0700 parent guards it.
        ray.init(
            num_cpus=num_cpus or os.cpu_count(),
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=os.path.join(temp_dir, "r"),
            log_to_driver=False,
        )
        local_temp_dir = temp_dir
        # Registered after ray.init, so it runs before Ray's own exit hook: stop the local Ray,
        # then remove its session files (sockets, logs) unless asked to keep them for debugging.
        atexit.register(shutdown_local_ray, ray, temp_dir)
    return ray


def private_temp_dir(root: str) -> str:
    """A fresh 0700 dir under ``root``; ``root`` must be ours, or shared only with the sticky bit (like /tmp)."""
    import stat
    import tempfile

    try:
        info = os.stat(root)
    except OSError as exc:
        raise VectorConfigError(f"Ray temp root {root}: {exc.strerror}; create it or set {TEMP_ROOT_VAR}") from None
    others_write = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if info.st_uid != os.getuid() and (info.st_uid != 0 or (others_write and not info.st_mode & stat.S_ISVTX)):
        raise VectorConfigError(
            f"Ray temp root {root} is owned by uid {info.st_uid}, not you (uid {os.getuid()}): "
            f"another user could read or replace Ray's sockets; set {TEMP_ROOT_VAR} to a "
            f"directory you own"
        )
    if others_write and not info.st_mode & stat.S_ISVTX:
        raise VectorConfigError(
            f"Ray temp root {root} is writable by other users (mode {stat.filemode(info.st_mode)}) "
            f"without the sticky bit; set {TEMP_ROOT_VAR} to a directory only you can write"
        )
    path = tempfile.mkdtemp(prefix="pbray-", dir=root)  # 0700, unpredictable name: nobody can pre-create it
    return path


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail fast (one line) when a ``host:port`` (or ``ray://host:port``) Ray address does not answer."""
    import socket

    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", "local" and other forms: Ray resolves them (and fails fast when none is running)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc)).lower()
        raise RayConnectError(
            f"cannot reach the Ray cluster at {address} ({why} within {timeout:g} s); check "
            f"--ray-address/RAY_ADDRESS (the head's `ray start --head` prints it) or drop "
            f"both for a local Ray"
        ) from None


def shutdown_local_ray(ray: Any, temp_dir: str) -> None:
    """Stops the local Ray this process started and deletes ``temp_dir`` (kept with ``PUFFERBOX_KEEP_RAY_LOGS=1``)."""
    ray.shutdown()
    if os.environ.get("PUFFERBOX_KEEP_RAY_LOGS") != "1":
        shutil.rmtree(temp_dir, ignore_errors=True)


def stop_actors(ray: Any, actors: list[Any], graceful: bool, timeout: float) -> None:
    """Kills ``actors``; with ``graceful``, first asks each to close its envs, waiting at most ``timeout`` s.

    Closing is best effort: an actor that hangs or died must not keep ``close()`` from returning,
    and the kill frees it either way.
    """
    if graceful:
        try:
            ray.get([a.close.remote() for a in actors], timeout=timeout)
        except Exception:
            pass
    for a in actors:
        ray.kill(a)


class EnvWorker:
    """A Ray actor's state: consecutive envs ``first_env..`` stepped over rows of its own."""

    def __init__(self, factory: EnvFactory, first_env: int, num_envs: int):
        obs_spec, act_spec, agents = factory.layout()
        self.buffers = Buffers.allocate(obs_spec, act_spec, num_envs * agents)
        self.stepper = BlockStepper(factory, self.buffers, first_env, num_envs)
        self.steps = 0

    def rows(self, episodes: Episodes) -> tuple:
        b = self.buffers
        cut = np.flatnonzero(b.truncations & ~b.terminals)  # only these final observations travel
        return b.observations, b.rewards, b.terminals, b.truncations, b.masks, episodes, (cut, b.final_observations[cut])

    def run(self, what: Any) -> Episodes:
        try:
            return what()
        except Exception as exc:
            raise RuntimeError(f"env {self.stepper.failed_env} raised {type(exc).__name__}: {exc}") from exc

    def reset(self, seed: int | None) -> tuple:
        return self.rows(self.run(lambda: self.stepper.reset(seed)))

    def step(self, actions: np.ndarray) -> tuple:
        self.steps += 1
        self.buffers.actions[:] = actions
        return self.rows(self.run(self.stepper.step))

    def step_count(self) -> int:
        return self.steps

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        self.stepper.close()


class RayVectorEnv(VectorEnv):
    """Envs on ``num_workers`` Ray actors; a pool when ``batch_size < num_envs``."""

    backend = "ray"

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int = 1,
        num_workers: int | None = None,
        batch_size: int | None = None,
        zero_copy: bool = False,
        address: str | None = None,
        step_timeout: float | None = None,
        **unused: Any,
    ):
        self.closed = True  # until the actors exist
        if unused:
            raise VectorConfigError(f"ray backend got unsupported options: {', '.join(sorted(unused))}")
        if zero_copy:
            raise VectorConfigError("the ray backend has no zero-copy mode (results travel through Ray's object store)")
        num_workers = num_workers or max(w for w in range(1, min(os.cpu_count() or 1, num_envs) + 1) if num_envs % w == 0)
        if num_envs % num_workers:
            raise VectorConfigError(f"num_envs ({num_envs}) must be a multiple of num_workers ({num_workers})")
        self.setup_layout(factory, num_envs, batch_size)
        self.num_workers, self.envs_per_worker = num_workers, num_envs // num_workers
        if self.batch_envs % self.envs_per_worker:
            raise VectorConfigError(
                f"batch_size ({self.batch_envs}) must be a multiple of envs per worker "
                f"({self.envs_per_worker} = num_envs {num_envs} / num_workers {num_workers})"
            )
        self.workers_per_batch = self.batch_envs // self.envs_per_worker
        self.step_timeout = check_step_timeout(step_timeout)
        self.ray = ensure_ray(address)
        actor = self.ray.remote(num_cpus=0)(EnvWorker)  # envs are light; let actors share cores with the driver
        self.actors = [actor.remote(factory, w * self.envs_per_worker, self.envs_per_worker) for w in range(num_workers)]
        self.rows_per_worker = self.envs_per_worker * self.agents_per_env
        self.buffers = Buffers.allocate(self.obs_spec, self.act_spec, self.batch_size)
        self.pending: dict[Any, int] = {}  # object ref -> worker
        self.batch_workers: list[int] = []
        self.closed = False
        self.pids = self.ray.get([a.pid.remote() for a in self.actors])

    def wait(self, n: int) -> list[Any]:
        """The first ``n`` pending results to finish; a :class:`WorkerTimeoutError` after ``step_timeout``."""
        refs = list(self.pending)
        done, _ = self.ray.wait(refs, num_returns=n, timeout=self.step_timeout)
        if len(done) < n:
            late = sorted(self.pending[ref] for ref in refs if ref not in done)
            names = ", ".join(
                f"worker {w} (pid {self.pids[w]}, envs {w * self.envs_per_worker}-{(w + 1) * self.envs_per_worker - 1})"
                for w in late
            )
            self.close(graceful=False)  # a hung actor would not answer close() either
            raise WorkerTimeoutError(
                f"{self.env_name}: {names} did not answer within step_timeout="
                f"{self.step_timeout:g}s (a hung env or a stopped process); the vector env is "
                f"closed. Raise vec.step_timeout if steps are this slow"
            )
        return done

    def async_reset(self, seed: int | None = 0) -> None:
        if self.pending:
            self.ray.get(self.wait(len(self.pending)))
        self.pending = {a.reset.remote(seed): w for w, a in enumerate(self.actors)}
        self.batch_workers = []

    def send(self, actions: np.ndarray) -> None:
        actions = self.check_actions(actions)
        r = self.rows_per_worker
        for i, w in enumerate(self.batch_workers):
            self.pending[self.actors[w].step.remote(actions[i * r : (i + 1) * r])] = w
        self.batch_workers = []

    def recv(self):
        n = self.workers_per_batch
        if len(self.pending) < n:
            raise RuntimeError(f"{self.env_name}: recv() called twice without send()")
        done = self.wait(n)  # the first n to finish, whichever actors
        workers = [self.pending.pop(ref) for ref in done]
        order = np.argsort(workers, kind="stable") if n == self.num_workers else list(range(len(workers)))
        results = self.ray.get(done)
        self.batch_workers = [workers[i] for i in order]
        b, r = self.buffers, self.rows_per_worker
        for slot, i in enumerate(order):
            obs, rew, term, trunc, masks, _, (cut, final) = results[i]
            rows = slice(slot * r, (slot + 1) * r)
            b.observations[rows], b.rewards[rows], b.terminals[rows] = obs, rew, term
            b.truncations[rows], b.masks[rows] = trunc, masks
            b.final_observations[slot * r + cut] = final
        infos = Episodes.concat([results[i][5] for i in order])
        env_ids = np.concatenate(
            [np.arange(w * self.envs_per_worker, (w + 1) * self.envs_per_worker) for w in self.batch_workers]
        )
        return b.observations, b.rewards, b.terminals, b.truncations, infos, env_ids, b.masks

    def final_observations(self) -> np.ndarray | None:
        return self.buffers.final_observations if self.factory.writes_final_observations else None

    def step_counts(self) -> list[int]:
        return self.ray.get([a.step_count.remote() for a in self.actors])

    def close(self, graceful: bool = True, **kwargs: Any) -> None:
        """Close the envs (``graceful``: ask each actor, waiting at most 10 s) and kill the actors."""
        if not getattr(self, "closed", True) and hasattr(self, "actors"):
            self.closed = True
            stop_actors(self.ray, self.actors, graceful, timeout=min(10.0, self.step_timeout))
            self.actors = []
