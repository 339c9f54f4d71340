"""PyCUDA kernel envs: data manager, function manager + compile cache, core kernels, episode
statistics kept on the device (:mod:`pufferbox.cuda.episodes`), checker.

Importing this package never needs PyCUDA or a GPU; the GPU parts check on use and say what
is missing (:func:`gpu_unavailable_reason`). Without a GPU, kernel sources still compile-check
with nvcc and run on the CPU through :mod:`pufferbox.cuda.hostsim`.

Example:
    >>> from pufferbox.cuda import CudaImplementation, gpu_unavailable_reason
"""

from pufferbox.cuda.device import NoGPUError, gpu_unavailable_reason, require_gpu
from pufferbox.cuda.spec import CudaImplementation

__all__ = ["CudaImplementation", "NoGPUError", "gpu_unavailable_reason", "require_gpu"]
