"""Turning a kernel source into something runnable: constants, includes, nvcc, the compile cache.

A kernel source is made self-contained before compiling: the env's compile-time constants
become ``#define`` lines and quoted includes of pufferbox's shared headers are inlined, so
the text alone (plus options and GPU architecture) keys the cache.

Example:
    >>> text = assemble("PB_KERNEL void k() {}", {"NUM_ENVS": 4, "DT": 0.5})
    >>> text.splitlines()[:2]
    ['#define NUM_ENVS 4', '#define DT 0x1.0000000000000p-1f']
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from pufferbox.errors import PufferboxError

__all__ = [
    "KERNEL_DIR",
    "CORE_SOURCE",
    "NVCC_OPTIONS",
    "assemble",
    "c_literal",
    "find_nvcc",
    "compile_check",
    "cache_dir",
    "cache_key",
    "CompileError",
]

KERNEL_DIR = Path(__file__).parent / "kernels"
CORE_SOURCE = KERNEL_DIR / "core.cu"
# No fused multiply-add: keeps float results identical to the numpy reference and the host build.
NVCC_OPTIONS = ("--fmad=false",)
# a quoted include, a trailing comment allowed (C allows one; a host-only build would pass where this failed)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*(?://.*|/\*.*?\*/\s*)?$', re.MULTILINE)


class CompileError(PufferboxError, RuntimeError):
    """nvcc rejected a kernel source (the message holds its diagnostics)."""


def c_literal(value: int | float | bool) -> str:
    """A C literal with the exact float32 value numpy uses (hex float), or an int."""
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return float(np.float32(value)).hex() + "f"


def assemble(source: str, constants: dict[str, int | float], search: tuple[Path, ...] = ()) -> str:
    """``#define`` lines for ``constants``, then ``source`` with its quoted includes inlined once each
    (as a C compiler looks for them: beside the including file first, then in ``search``)."""
    seen: set[Path] = set()

    def inlined(text: str, here: Path | None) -> str:
        def inline(match: re.Match) -> str:
            name = match.group(1)
            dirs = (*(() if here is None else (here,)), *search, KERNEL_DIR)
            path = next((Path(folder) / name for folder in dirs if (Path(folder) / name).is_file()), None)
            if path is None:
                raise CompileError(f'#include "{name}" not found in {", ".join(map(str, dirs))}')
            if path.resolve() in seen:
                return ""
            seen.add(path.resolve())
            return inlined(path.read_text(), path.parent)

        return INCLUDE.sub(inline, text)

    defines = "".join(f"#define {key} {c_literal(value)}\n" for key, value in constants.items())
    return defines + inlined(source, None)


def find_nvcc() -> str | None:
    """nvcc on PATH, under $CUDA_HOME, or in /usr/local/cuda/bin."""
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    return None


def compile_check(text: str, arch: str = "sm_90", output: str = "ptx", nvcc: str | None = None) -> bytes:
    """Compile ``text`` with nvcc (``-ptx`` or ``-cubin``) for ``arch``; the output bytes.

    Raises :class:`CompileError` with nvcc's diagnostics, or ``FileNotFoundError`` without nvcc.
    """
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin")
    if output not in ("ptx", "cubin"):
        raise ValueError(f"output must be 'ptx' or 'cubin', got {output!r}")
    with tempfile.TemporaryDirectory(prefix="pufferbox-nvcc-") as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / f"kernel.{output}"
        src.write_text(text)
        proc = subprocess.run(
            [nvcc, f"-arch={arch}", f"-{output}", *NVCC_OPTIONS, str(src), "-o", str(out)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise CompileError(f"nvcc -arch={arch} -{output} failed:\n{proc.stderr.strip()}")
        return out.read_bytes()


def cache_dir() -> Path:
    """Compiled modules live in the user's cache (``$PUFFERBOX_CACHE``, ``$XDG_CACHE_HOME``), never site-packages."""
    if os.environ.get("PUFFERBOX_CACHE"):
        root = Path(os.environ["PUFFERBOX_CACHE"])
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pufferbox"
    return root / "cuda"


def cache_key(text: str, options: tuple[str, ...], arch: str) -> str:
    digest = hashlib.sha256()
    for part in (text, "\0".join(options), arch):
        digest.update(part.encode())
        digest.update(b"\1")
    return digest.hexdigest()[:32]
