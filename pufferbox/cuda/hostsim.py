"""Run kernel sources on the CPU: the ``.cu`` text compiled as host C++, one call per thread.

The kernels only use plain C and the ``PB_*`` index macros, so g++ compiles the *same*
source that nvcc compiles for the GPU (``pufferbox_common.cuh`` maps ``blockIdx`` and
friends to globals this driver sets). Kernel phases run one after another, so ``__syncthreads``
is never needed. This gives a real kernel-vs-reference check without a GPU; it is slow and
only meant for tests.

Example:
    >>> sim = HostFunctionManager()                                   # doctest: +SKIP
    >>> sim.compile(text); sim.launch("k", (2, 1), 32, [np.uintp(p)])  # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pufferbox.cuda.build import CompileError, cache_dir, cache_key

__all__ = ["HostFunctionManager", "HostDataManager", "find_cxx"]

# Defines the index globals that pufferbox_common.cuh declares in host builds.
SHIM_TAIL = """
extern "C" { pb_dim3 blockIdx, threadIdx, blockDim; }
extern "C" void pb_set_index(unsigned int bx, unsigned int by, unsigned int tx, unsigned int bdx) {
    blockIdx.x = bx; blockIdx.y = by; blockIdx.z = 0; threadIdx.x = tx; threadIdx.y = 0; threadIdx.z = 0;
    blockDim.x = bdx; blockDim.y = 1; blockDim.z = 1;
}
"""
CXX_OPTIONS = ("-x", "c++", "-std=c++17", "-O1", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC")
_LOCK = threading.Lock()


def find_cxx() -> str | None:
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def ctype_of(arg: Any) -> Any:
    if isinstance(arg, np.uintp):
        return ctypes.c_void_p
    if isinstance(arg, np.uint32):
        return ctypes.c_uint32
    if isinstance(arg, np.int32):
        return ctypes.c_int32
    raise TypeError(f"kernel argument {arg!r}: pass np.uintp (pointer), np.int32 or np.uint32")


class HostFunctionManager:
    """The FunctionManager interface (``compile``, ``launch``) backed by a g++ build of the kernels."""

    def __init__(self, cxx: str | None = None):
        found = cxx or find_cxx()
        if found is None:
            raise FileNotFoundError("no C++ compiler (g++, c++ or clang++) on PATH")
        self.cxx: str = found
        self.libs: list[ctypes.CDLL] = []
        self.functions: dict[str, Any] = {}

    def compile(self, text: str, names: Sequence[str]) -> None:
        text = text + SHIM_TAIL
        key = cache_key(text, CXX_OPTIONS, "host")
        target = cache_dir() / f"host-{key}.so"
        with _LOCK:
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                src = target.with_suffix(".cpp")
                src.write_text(text)
                tmp = target.with_suffix(".so.tmp")
                proc = subprocess.run([self.cxx, *CXX_OPTIONS, str(src), "-o", str(tmp)], capture_output=True, text=True)
                if proc.returncode != 0:
                    raise CompileError(f"host build of the kernels failed:\n{proc.stderr.strip()}")
                tmp.replace(target)
        lib = ctypes.CDLL(str(target))
        self.libs.append(lib)
        self.set_index = lib.pb_set_index
        self.set_index.argtypes = [ctypes.c_uint32] * 4
        for name in names:
            self.functions[name] = getattr(lib, name)

    def launch(self, name: str, grid: tuple[int, int], block: int, args: Sequence[Any]) -> None:
        fn = self.functions[name]
        fn.argtypes = [ctype_of(a) for a in args]
        fn.restype = None
        values = [int(a) for a in args]
        for bx in range(grid[0]):
            for by in range(grid[1]):
                for tx in range(block):
                    self.set_index(bx, by, tx, block)
                    fn(*values)


class HostDataManager:
    """The DataManager interface over numpy arrays (``tensor`` shares their memory through torch)."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.pushes = 0
        self.pulls = 0

    def push(self, name: str, array: np.ndarray) -> None:
        self.arrays[name] = np.ascontiguousarray(array).copy()
        self.pushes += 1

    def pointer(self, name: str) -> np.uintp:
        return np.uintp(self.arrays[name].ctypes.data)

    def tensor(self, name: str) -> torch.Tensor:
        return torch.from_numpy(self.arrays[name])

    def pull(self, name: str) -> np.ndarray:
        self.pulls += 1
        return self.arrays[name].copy()

    def __contains__(self, name: str) -> bool:
        return name in self.arrays
