"""Throughput of a vector env with random actions, and a search over backend configurations.

``bench`` times ``send``/``recv`` with pre-drawn random actions (drawing them per step would
be measured too); ``autotune`` times the configurations that fit this machine and ranks them.

Example:
    >>> result = bench("cartpole", backend="serial", num_envs=8, seconds=0.2)   # doctest: +SKIP
    >>> sorted(result)[:3]                                                        # doctest: +SKIP
    ['agents_per_env', 'backend', 'batch_size']
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

import pufferbox.vector as vector
from pufferbox.vector.base import VectorConfigError

__all__ = ["autotune", "bench", "candidate_configs", "command_line"]

ACTION_BATCHES = 16
ACTION_BYTES = 256 * 2**20  # the pre-drawn batches take at most this much (or one batch), whatever num_envs


def random_actions(venv: vector.VectorEnv, seed: int = 0) -> list[np.ndarray]:
    space = venv.action_space
    space.seed(seed)
    first = np.asarray(space.sample())
    batches = max(1, min(ACTION_BATCHES, ACTION_BYTES // max(1, first.nbytes)))
    return [first, *(np.asarray(space.sample()) for _ in range(batches - 1))]


def bench(
    env: str,
    backend: str = "serial",
    num_envs: int = 1,
    num_workers: int | None = None,
    batch_size: int | None = None,
    seconds: float = 3.0,
    native: bool = True,
    zero_copy: bool = False,
    warmup_s: float = 0.2,
    main_envs: int = 0,
    **backend_kwargs: Any,
) -> dict[str, Any]:
    """Steps/s (agent steps) of ``env`` on one backend configuration."""
    if seconds <= 0:
        raise VectorConfigError(f"--seconds must be positive, got {seconds}")
    kwargs = dict(backend_kwargs)
    if backend != "serial":
        kwargs.update(num_workers=num_workers, zero_copy=zero_copy)
    elif num_workers not in (None, 1):
        raise VectorConfigError("the serial backend has one worker; drop --num-workers or pick another backend")
    if main_envs:
        if backend != "multiprocessing":
            raise VectorConfigError(f"--main-envs needs --backend multiprocessing (got {backend})")
        kwargs["main_envs"] = main_envs
    with vector.make(env, backend=backend, num_envs=num_envs, batch_size=batch_size, native=native, **kwargs) as venv:
        actions = random_actions(venv)
        venv.async_reset(seed=0)
        venv.recv()
        steps, start, timing = 0, time.perf_counter(), False
        while True:
            venv.send(actions[steps % len(actions)])
            venv.recv()
            steps += 1
            now = time.perf_counter()
            if not timing and now - start >= warmup_s:
                timing, steps, start = True, 0, now
            elif timing and now - start >= seconds:
                break
        elapsed = time.perf_counter() - start
        return {
            "env": venv.env_name,
            "backend": backend,
            "num_envs": num_envs,
            "num_workers": getattr(venv, "num_workers", 1),
            "batch_size": venv.batch_envs,
            "zero_copy": bool(getattr(venv, "zero_copy", False)),
            "main_envs": getattr(venv, "main_envs", 0),
            "native": venv.factory.native,
            "agents_per_env": venv.agents_per_env,
            "sps": steps * venv.batch_size / elapsed,
            "env_sps": steps * venv.batch_envs / elapsed,
            "seconds": elapsed,
            "cpu_count": os.cpu_count(),
        }


def candidate_configs(cpus: int | None = None, max_envs: int = 256, native: bool = False) -> list[dict[str, Any]]:
    """Configurations worth timing on ``cpus`` cores: serial sizes, worker counts, pools, main envs.

    Main-process envs (``main_envs``) are tried with ``cpus - 1`` workers and an equal share in
    the main process: one process per core and no idle waiter, which pays most on few cores.
    """
    cpus = cpus or os.cpu_count() or 1
    sizes = [n for n in (1, 8, 32, 128, 512, 2048, 8192) if n <= max_envs]
    configs = [dict(backend="serial", num_envs=n) for n in sizes]
    for workers in sorted({1, max(1, cpus // 2), cpus, 2 * cpus}):
        for per_worker in (1, 4, 16) if not native else (64, 512):
            n = workers * per_worker
            if n > max_envs:
                continue
            configs.append(dict(backend="multiprocessing", num_envs=n, num_workers=workers))
            if workers >= 2 and workers % 2 == 0:
                configs.append(dict(backend="multiprocessing", num_envs=n, num_workers=workers, batch_size=n // 2))
    if cpus >= 2:
        for per_process in (1, 4, 16) if not native else (64, 512):
            n = cpus * per_process
            if n <= max_envs:
                configs.append(dict(backend="multiprocessing", num_envs=n, num_workers=cpus - 1, main_envs=per_process))
    return configs


def command_line(env: str, config: dict[str, Any]) -> str:
    parts = ["pufferbox bench", env, f"--backend {config['backend']}", f"--num-envs {config['num_envs']}"]
    if config["backend"] != "serial":
        parts.append(f"--num-workers {config['num_workers']}")
    if config.get("batch_size") not in (None, config["num_envs"]):
        parts.append(f"--batch-size {config['batch_size']}")
    if config.get("main_envs"):
        parts.append(f"--main-envs {config['main_envs']}")
    return " ".join(parts)


def autotune(
    env: str,
    seconds: float = 1.0,
    max_envs: int = 256,
    native: bool = True,
    configs: list[dict[str, Any]] | None = None,
    progress: Any = None,
) -> list[dict[str, Any]]:
    """Time every candidate configuration; results sorted fastest first."""
    from pufferbox.registry import get_registry

    has_native = native and get_registry().get(env).build.native is not None
    results = []
    for config in configs or candidate_configs(max_envs=max_envs, native=has_native):
        result = bench(env, seconds=seconds, native=native, **config)
        result["command"] = command_line(env, result)
        results.append(result)
        if progress:
            progress(result)
    return sorted(results, key=lambda r: -r["sps"])
