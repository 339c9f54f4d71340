"""Host <-> device copies of one act step for a CPU backend training on a GPU.

Observations go up through a pinned staging buffer with one non-blocking copy each; the
policy's outputs come back with non-blocking copies into pinned buffers and one event wait
(the only synchronisation of the step, which CPU envs need to act), instead of a blocking
``.cpu()`` per tensor. On the CPU both directions are plain (zero-copy) conversions.

Example:
    >>> t = Transfer(torch.device("cpu"))
    >>> x = t.to_device("obs", np.ones((2, 3), np.float32))
    >>> [a.shape for a in t.to_host([x.sum(1), x[:, 0]])]
    [(2,), (2,)]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["Transfer"]


class Transfer:
    """Staging buffers (pinned on CUDA) reused step after step, keyed by name, shape and dtype."""

    def __init__(self, device: torch.device, staged: bool | None = None):
        self.device = torch.device(device)
        self.staged = self.device.type == "cuda" if staged is None else staged
        self.pin = self.device.type == "cuda"
        self.buffers: dict[tuple, torch.Tensor] = {}
        self.event: Any = torch.cuda.Event() if self.pin else None

    def buffer(self, name: str, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
        key = (name, tuple(shape), dtype)
        if key not in self.buffers:
            self.buffers[key] = torch.empty(shape, dtype=dtype, pin_memory=self.pin)
        return self.buffers[key]

    def to_device(self, name: str, array: np.ndarray) -> torch.Tensor:
        """``array`` on the device: one copy into pinned memory, one non-blocking copy up. The staging
        buffer is reused by the next step only after :meth:`to_host` waited for this step's work."""
        host = torch.from_numpy(np.ascontiguousarray(array))
        if not self.staged:
            return host.to(self.device)
        stage = self.buffer(name, host.shape, host.dtype)
        stage.copy_(host)
        return stage.to(self.device, non_blocking=True, copy=True)  # copy: never hand out the staging buffer

    def to_host(self, tensors: list[torch.Tensor]) -> list[np.ndarray]:
        """The tensors as numpy arrays of their own (the staging buffers are reused next step)."""
        if not self.staged:
            return [t.detach().cpu().numpy() for t in tensors]
        staged = [
            self.buffer(f"out{i}", t.shape, t.dtype).copy_(t.detach(), non_blocking=True) for i, t in enumerate(tensors)
        ]
        if self.event is not None:
            self.event.record()
            self.event.synchronize()  # the step's one wait: CPU envs need the actions
        return [s.numpy().copy() for s in staged]
