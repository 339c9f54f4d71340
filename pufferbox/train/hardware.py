"""Where and how wide the trainer runs: ``train.device`` and ``train.torch_threads`` resolved.

``device = "auto"`` is CUDA when torch sees a GPU, else the CPU. ``torch_threads = 0`` picks
torch's intra-op threads from the cores the envs leave free (:func:`auto_threads` of
:func:`usable_cores`, which honours ``OMP_NUM_THREADS``) and from the policy's arithmetic
(:func:`policy_macs`): envs stepped in this process (serial, native, cuda backends) leave every
core to torch between steps; env worker processes (multiprocessing, ray) keep one core each, so
torch gets the rest, at least one. A small policy (under :data:`SMALL_POLICY_MACS` multiply-adds
per sample, e.g. an MLP on CartPole) gets one thread: its matrices are too small to split, and
spinning threads collapse when anything else runs (RESULTS.md, "Torch threads"). At most
:data:`MAX_AUTO_THREADS`: past that threads cost more in synchronisation than they compute.

Example:
    >>> auto_threads(cores=16, backend="serial", workers=0)
    8
    >>> auto_threads(cores=2, backend="serial", workers=0, macs=9.4e6)  # NatureCNN: both cores
    2
    >>> auto_threads(cores=2, backend="serial", workers=0, macs=4.6e3)  # CartPole's MLP: one
    1
    >>> auto_threads(cores=16, backend="multiprocessing", workers=12)
    4
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from pufferbox.train.config import ConfigError
from pufferbox.vector.memory import available_memory

__all__ = [
    "MAX_AUTO_THREADS",
    "available_memory",
    "SMALL_POLICY_MACS",
    "Hardware",
    "auto_threads",
    "native_bf16",
    "pick_autocast",
    "pick_device",
    "policy_macs",
    "resolve_hardware",
    "usable_cores",
]

MAX_AUTO_THREADS = 8
# Multiply-adds per sample below which a policy trains fastest on one thread: CartPole's MLP
# (~5k) solves as fast on 1 thread as on 2 and collapses with 2 under load; NetHack's encoder
# (~4M) and NatureCNN (~9M) train 1.5-1.6x faster on 2 threads than on 1 (RESULTS.md).
SMALL_POLICY_MACS = 100_000
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


def auto_threads(cores: int, backend: str, workers: int, macs: float = float("inf"), cap: int = MAX_AUTO_THREADS) -> int:
    """torch's intra-op threads for ``train.torch_threads = 0``: one for a policy of fewer than
    :data:`SMALL_POLICY_MACS` multiply-adds per sample (``macs``, see :func:`policy_macs`), else the
    cores left by ``workers`` env processes of a ``backend`` (none for serial/native/cuda: their
    envs and the update take turns), at least 1, at most ``cap``.
    """
    if macs < SMALL_POLICY_MACS:
        return 1
    busy = workers if backend in WORKER_BACKENDS else 0
    return max(1, min(cap, cores - busy))


def policy_macs(agent: Any, obs_spec: Any) -> float:
    """Multiply-adds per sample of one inference step (linear, conv and recurrent-cell layers; the
    rest is small next to them), counted with forward hooks on one all-zeros observation per slot."""
    nn = torch.nn
    counted = (nn.Linear, nn.modules.conv._ConvNd, nn.LSTMCell, nn.GRUCell, nn.RNNCell)
    total = 0.0

    def count(module: nn.Module, inputs: Any, output: Any) -> None:
        nonlocal total
        out = output[0] if isinstance(output, tuple) else output
        per_row = out.numel() / max(1, out.shape[0])
        if isinstance(module, nn.Linear):
            total += per_row * module.in_features
        elif isinstance(module, nn.modules.conv._ConvNd):
            kernel = 1
            for k in module.kernel_size:
                kernel *= k
            total += per_row * module.in_channels // module.groups * kernel
        else:  # recurrent cells: every weight once per step
            total += sum(p.numel() for name, p in module.named_parameters() if name.startswith("weight"))

    rows = int(getattr(agent, "agents_per_env", 1))
    device = next(agent.parameters()).device
    obs = torch.as_tensor(obs_spec.zeros(rows), device=device)
    state = agent.initial_state(rows, device) if getattr(agent, "lstm_size", 0) else None
    hooks = [m.register_forward_hook(count) for m in agent.modules() if isinstance(m, counted)]
    try:
        with torch.no_grad():  # hidden + heads: no action sampled, so torch's RNG stream is untouched
            agent.heads(agent.hidden(obs, state, None)[0])
    finally:
        for hook in hooks:
            hook.remove()
    return total / rows


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


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` multiplies bfloat16 in hardware: a CUDA GPU that supports it natively (compute
    capability 8.0 on), or a CPU with AVX512-BF16 or AMX tiles, where oneDNN runs bf16 convolutions and
    matmuls. Elsewhere torch emulates bfloat16, which is slower than float32."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    cpu = torch.cpu
    return device.type == "cpu" and bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())


def pick_autocast(name: str, device: torch.device) -> str:
    """``train.autocast`` resolved: ``"auto"`` is ``"bf16"`` where :func:`native_bf16`, else ``"none"``."""
    if name == "auto":
        return "bf16" if native_bf16(device) else "none"
    return name


@dataclass(frozen=True)
class Hardware:
    """What a run resolved ``train.device``, ``train.torch_threads`` and ``train.autocast`` to (saved as
    ``[run]`` in config.toml)."""

    device: str
    torch_threads: int
    requested_device: str = "auto"
    requested_threads: int = 0
    autocast: str = "none"
    requested_autocast: str = "none"

    def describe(self) -> str:
        """``"cuda:0 (auto), 4 torch threads (auto), bf16 autocast (auto)"``: for the dashboard and logs."""
        device = self.device + (f" ({self.requested_device})" if self.requested_device == "auto" else "")
        threads = f"{self.torch_threads} torch thread{'s' if self.torch_threads != 1 else ''}"
        text = f"{device}, {threads}" + (" (auto)" if self.requested_threads == 0 else "")
        if self.autocast == "bf16":
            text += ", bf16 autocast" + (" (auto)" if self.requested_autocast == "auto" else "")
        elif self.requested_autocast == "auto":
            text += ", float32 (auto: no native bf16)"
        return text

    def as_config(self) -> dict[str, Any]:
        return {"device": self.device, "torch_threads": self.torch_threads, "autocast": self.autocast}


def resolve_hardware(
    device: torch.device,
    requested_device: str,
    torch_threads: int,
    venv: Any,
    cores: int | None = None,
    macs: float = float("inf"),
    autocast: str = "none",
    requested_autocast: str = "none",
) -> Hardware:
    """The run's :class:`Hardware`: ``torch_threads`` 0 resolved by :func:`auto_threads` for ``venv``
    and a policy of ``macs`` multiply-adds per sample; ``autocast`` as :func:`pick_autocast` resolved it."""
    threads = torch_threads or auto_threads(
        usable_cores() if cores is None else cores,
        getattr(venv, "backend", ""),
        int(getattr(venv, "num_workers", 0) or 0),
        macs,
    )
    name = str(device) if device.type != "cuda" or device.index is not None else f"cuda:{torch.cuda.current_device()}"
    return Hardware(name, threads, requested_device, torch_threads, autocast, requested_autocast)
