"""FunctionManager: compile a kernel source once per (source, options, GPU arch), launch by name.

Compiled cubins are cached under :func:`pufferbox.cuda.build.cache_dir` (the user's cache,
never site-packages). With nvcc present the source is compiled to a cubin and loaded with
``module_from_file``; without nvcc PyCUDA's ``SourceModule`` compiles it (same options, its
cache in the same folder). PyCUDA uses the device's *primary* context, the one torch uses, so
kernels and tensors share memory and the default stream.

Example (GPU only):
    >>> fm = FunctionManager()                                           # doctest: +SKIP
    >>> fm.compile(text, ["tag_move"]); fm.launch("tag_move", (2000, 1), 5, args)  # doctest: +SKIP
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Any

import numpy as np

from pufferbox.cuda.build import NVCC_OPTIONS, CompileError, cache_dir, cache_key, find_nvcc
from pufferbox.cuda.device import require_gpu

__all__ = ["FunctionManager", "arg_format"]

# struct codes of PyCUDA's prepared calls for the argument types kernels take: device pointers
# (np.uintp), int32 counts and uint32 RNG keys, float32 parameters
ARG_CODES = {np.dtype(np.uintp): "P", np.dtype(np.int32): "i", np.dtype(np.uint32): "I", np.dtype(np.float32): "f"}


def arg_format(args: Sequence[Any]) -> str:
    """PyCUDA's ``prepare`` format of a launch's arguments, e.g. ``"PPi"``.

    >>> arg_format([np.uintp(1), np.uintp(2), np.int32(3)])
    'PPi'
    """
    try:
        return "".join(ARG_CODES[np.asarray(arg).dtype] for arg in args)
    except KeyError as err:
        raise TypeError(f"kernel argument of type {err.args[0]}: pass np.uintp, np.int32, np.uint32 or np.float32") from None


class FunctionManager:
    """Kernels of one compiled module, launched on torch's current device in its primary context."""

    def __init__(self) -> None:
        require_gpu()
        import pycuda.driver as drv
        import torch

        torch.cuda.init()
        self.drv = drv
        self.device = drv.Device(torch.cuda.current_device())
        self.context = self.device.retain_primary_context()
        major, minor = self.device.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.modules: list[Any] = []
        self.functions: dict[str, Any] = {}
        # A prepared call packs the arguments with one struct format instead of inspecting each
        # one per launch: kernel envs of few agents per env are bound by launch cost on the host.
        self.prepared = True
        self.formats: dict[str, str] = {}

    def compile(self, text: str, names: Sequence[str]) -> None:
        key = cache_key(text, NVCC_OPTIONS, self.arch)
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        self.context.push()
        try:
            nvcc = find_nvcc()
            if nvcc is not None:
                cubin = folder / f"{key}-{self.arch}.cubin"
                if not cubin.exists():
                    src = cubin.with_suffix(".cu")
                    src.write_text(text)
                    tmp = cubin.with_suffix(".cubin.tmp")
                    proc = subprocess.run(
                        [nvcc, f"-arch={self.arch}", "-cubin", *NVCC_OPTIONS, str(src), "-o", str(tmp)],
                        capture_output=True,
                        text=True,
                    )
                    if proc.returncode != 0:
                        raise CompileError(f"nvcc failed for {self.arch}:\n{proc.stderr.strip()}")
                    tmp.replace(cubin)
                module = self.drv.module_from_file(str(cubin))
            else:
                from pycuda.compiler import SourceModule

                module = SourceModule(
                    text, options=list(NVCC_OPTIONS), no_extern_c=True, arch=self.arch, cache_dir=str(folder)
                )
        finally:
            self.context.pop()
        self.modules.append(module)
        for name in names:
            self.functions[name] = module.get_function(name)

    def launch(self, name: str, grid: tuple[int, int], block: int, args: Sequence[Any]) -> None:
        self.context.push()
        try:
            function = self.functions[name]
            if not self.prepared:
                function(*args, grid=(int(grid[0]), int(grid[1]), 1), block=(int(block), 1, 1))
                return
            if name not in self.formats:  # a kernel always takes the same argument types
                self.formats[name] = arg_format(args)
                function.prepare(self.formats[name])
            function.prepared_call((int(grid[0]), int(grid[1]), 1), (int(block), 1, 1), *args)
        finally:
            self.context.pop()
