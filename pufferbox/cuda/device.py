"""Is there a CUDA GPU PyCUDA can use here? One place that answers, with the reason when not.

Example:
    >>> reason = gpu_unavailable_reason()
    >>> reason is None or reason.startswith("no CUDA GPU")
    True
"""

from __future__ import annotations

import functools

from pufferbox.errors import PufferboxError

__all__ = ["gpu_unavailable_reason", "require_gpu", "NoGPUError"]


class NoGPUError(PufferboxError, RuntimeError):
    """No CUDA GPU (or no PyCUDA / CUDA torch): the message says what is missing and what to do."""


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """``None`` when PyCUDA, a driver, a GPU and CUDA torch are all present, else one line why not."""
    try:
        import pycuda  # noqa: F401
    except ImportError:
        return "no CUDA GPU: PyCUDA is not installed (pip install 'pufferbox[cuda]')"
    try:
        import pycuda.driver as drv
    except ImportError as exc:  # no libcuda.so.1: no NVIDIA driver on this machine
        return f"no CUDA GPU: pycuda.driver cannot load ({exc})"
    try:
        drv.init()
        if drv.Device.count() == 0:
            return "no CUDA GPU: the driver reports 0 devices"
    except Exception as exc:  # pycuda.driver.Error subclasses
        return f"no CUDA GPU: cuInit failed ({exc})"
    import torch

    if not torch.cuda.is_available():
        return f"no CUDA GPU usable by torch {torch.__version__} (a CPU build?): install a CUDA torch"
    return None


def require_gpu() -> None:
    reason = gpu_unavailable_reason()
    if reason is not None:
        raise NoGPUError(reason)
