"""Vector backends: many envs behind one batch interface.

``make(name, backend=...)`` picks one; each backend lives in its own module
(``serial``, ``multiprocessing``, ``ray``, ``cuda``) and shares :mod:`.base`.

Example:
    >>> import pufferbox.vector
    >>> venv = pufferbox.vector.make("cartpole", backend="serial", num_envs=8)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

from pufferbox.registry import EnvSpec, get_registry
from pufferbox.vector.base import EnvFactory, VectorConfigError, VectorEnv

BACKENDS = {
    "serial": "pufferbox.vector.serial:SerialVectorEnv",
    "multiprocessing": "pufferbox.vector.multiprocessing:MultiprocessingVectorEnv",
    "ray": "pufferbox.vector.ray:RayVectorEnv",
    "cuda": "pufferbox.vector.cuda:CudaVectorEnv",
}

__all__ = ["BACKENDS", "EnvFactory", "VectorConfigError", "VectorEnv", "make"]


def backend_class(backend: str) -> type:
    if backend not in BACKENDS:
        raise VectorConfigError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    module, _, cls = BACKENDS[backend].partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as exc:
        raise VectorConfigError(f"backend {backend!r} is unavailable here: {exc}") from exc


def make(
    env: str | EnvSpec,
    backend: str = "serial",
    num_envs: int = 1,
    env_kwargs: dict | None = None,
    native: bool = True,
    check_obs: bool = False,
    **backend_kwargs: Any,
) -> VectorEnv:
    """A vector env of ``num_envs`` copies of ``env`` (a registered name or an :class:`EnvSpec`).

    ``native=False`` forces one emulated env per slot even when the plugin has a native batched
    implementation. ``check_obs=True`` checks every observation of emulated envs against its
    space's bounds and for NaN/inf (slow; shapes and dtypes are checked every step regardless).
    Other keyword arguments go to the backend (``num_workers``, ``batch_size``, ``step_timeout``, ...).
    """
    spec = get_registry().get(env) if isinstance(env, str) else env
    factory = EnvFactory(spec, dict(env_kwargs or {}), use_native=native, check_obs=check_obs)
    return backend_class(backend)(factory, num_envs=num_envs, **backend_kwargs)
