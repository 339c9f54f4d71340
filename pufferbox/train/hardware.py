"""Where and how wide the trainer runs: ``train.device`` and ``train.torch_threads`` resolved.

``device = "auto"`` is CUDA when torch sees a GPU, else the CPU. ``torch_threads = 0`` picks
torch's intra-op threads from the cores the envs leave free (:func:`auto_threads` of
:func:`usable_cores`, which honours ``OMP_NUM_THREADS``): envs stepped
in this process (serial, native, cuda backends) leave every core to torch between steps; env
worker processes (multiprocessing, ray) keep one core each, so torch gets the rest, at least one.
At most :data:`MAX_AUTO_THREADS`: the default policies' matrices are small, and past that
threads cost more in synchronisation than they compute.

Example:
    >>> auto_threads(cores=16, backend="serial", workers=0)
    8
    >>> auto_threads(cores=16, backend="multiprocessing", workers=12)
    4
    >>> auto_threads(cores=2, backend="multiprocessing", workers=2)
    1
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from pufferbox.train.config import ConfigError

__all__ = ["MAX_AUTO_THREADS", "Hardware", "auto_threads", "pick_device", "resolve_hardware", "usable_cores"]

MAX_AUTO_THREADS = 8
WORKER_BACKENDS = ("multiprocessing", "ray")  # envs in other processes, each busy on a core while stepping


def usable_cores() -> int:
    """Cores this process may use: its affinity mask (e.g. a container's cpuset), lowered by
    ``OMP_NUM_THREADS`` when set (Ray sets it to an actor's ``num_cpus``, e.g. a tournament pod's share)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    omp = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(cores, int(omp))) if omp.isdigit() and int(omp) > 0 else cores


def auto_threads(cores: int, backend: str, workers: int, cap: int = MAX_AUTO_THREADS) -> int:
    """torch's intra-op threads for ``train.torch_threads = 0``: the cores left by ``workers`` env
    processes of a ``backend`` (none for serial/native/cuda) less one kept for the process's own
    env stepping and the OS, at least 1, at most ``cap``.

    The spare core is measured, not taste: on 2 cores, CartPole with 2 torch threads took 147 s to
    solve next to one busy process, with 1 thread 6 s (RESULTS.md, Training); torch's threads spin
    and collapse when they have no core of their own.
    """
    busy = workers if backend in WORKER_BACKENDS else 0
    return max(1, min(cap, cores - busy - 1))


def pick_device(name: str) -> torch.device:
    """``train.device`` as a torch device; ``"auto"``: CUDA when torch sees one, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"train.device: {name!r} requested but torch sees no CUDA device; use --device cpu or auto")
    try:
        return torch.device(name)
    except RuntimeError:
        raise ConfigError(f"train.device: unknown device {name!r}; use cpu, cuda, cuda:N or auto") from None


@dataclass(frozen=True)
class Hardware:
    """What a run resolved ``train.device`` and ``train.torch_threads`` to (saved as ``[run]`` in config.toml)."""

    device: str
    torch_threads: int
    requested_device: str = "auto"
    requested_threads: int = 0

    def describe(self) -> str:
        """``"cuda:0 (auto), 4 torch threads (auto)"``: for the dashboard and logs."""
        device = self.device + (f" ({self.requested_device})" if self.requested_device == "auto" else "")
        threads = f"{self.torch_threads} torch thread{'s' if self.torch_threads != 1 else ''}"
        return f"{device}, {threads}" + (" (auto)" if self.requested_threads == 0 else "")

    def as_config(self) -> dict[str, Any]:
        return {"device": self.device, "torch_threads": self.torch_threads}


def resolve_hardware(
    device: torch.device, requested_device: str, torch_threads: int, venv: Any, cores: int | None = None
) -> Hardware:
    """The run's :class:`Hardware`: ``torch_threads`` 0 resolved by :func:`auto_threads` for ``venv``."""
    threads = torch_threads or auto_threads(
        usable_cores() if cores is None else cores, getattr(venv, "backend", ""), int(getattr(venv, "num_workers", 0) or 0)
    )
    name = str(device) if device.type != "cuda" or device.index is not None else f"cuda:{torch.cuda.current_device()}"
    return Hardware(name, threads, requested_device, torch_threads)
