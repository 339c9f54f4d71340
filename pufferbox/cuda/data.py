"""DataManager: every array pushed to the GPU once, then used in place as a torch tensor.

Arrays live in torch-allocated device memory; kernels receive the same memory by pointer
(``tensor.data_ptr()``), so policy, sampler and env all read and write one store with no
copies. PyCUDA runs in torch's primary context (see :mod:`pufferbox.cuda.function`).
``pushes``/``pulls`` count host↔device transfers, which tests use to prove the step loop has none.

Example (GPU only):
    >>> dm = DataManager()                               # doctest: +SKIP
    >>> dm.push("obs", np.zeros((4, 8), np.float32))     # doctest: +SKIP
    >>> dm.tensor("obs").device.type                     # doctest: +SKIP
    'cuda'
"""

from __future__ import annotations

import numpy as np
import torch

from pufferbox.cuda.device import require_gpu

__all__ = ["DataManager"]


class DataManager:
    """Device arrays by name; ``push`` copies host→device once, ``pull`` copies back on request."""

    def __init__(self, device: int | None = None):
        require_gpu()
        self.device = torch.device("cuda", torch.cuda.current_device() if device is None else device)
        self.tensors: dict[str, torch.Tensor] = {}
        self.pushes = 0
        self.pulls = 0

    def push(self, name: str, array: np.ndarray) -> None:
        if name in self.tensors:
            raise KeyError(f"{name!r} is already on the device; write to tensor({name!r}) in place instead")
        self.tensors[name] = torch.from_numpy(np.ascontiguousarray(array)).to(self.device)
        self.pushes += 1

    def allocate(self, name: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A zeroed device array made on the device (no transfer)."""
        self.tensors[name] = torch.zeros(shape, dtype=dtype, device=self.device)
        return self.tensors[name]

    def tensor(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def pointer(self, name: str) -> np.uintp:
        return np.uintp(self.tensors[name].data_ptr())

    def pull(self, name: str) -> np.ndarray:
        self.pulls += 1
        return self.tensors[name].cpu().numpy()

    def __contains__(self, name: str) -> bool:
        return name in self.tensors
