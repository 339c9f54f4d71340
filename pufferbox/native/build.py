"""Compiling a plugin's C games: its headers and the shared binding (``c/binding.c``) as one extension.

The extension is built on first use with the system C compiler and kept in the user's cache
(``$PUFFERBOX_CACHE/native`` or ``~/.cache/pufferbox/native``), keyed by the text of every source it
reads, the flags, the compiler and the Python ABI: an edited header rebuilds, an unchanged one loads
in milliseconds, and a plugin needs no build step of its own (pip installs it as plain Python with its
headers as package data). Flags: ``-O3 -ffp-contract=off`` and no ``-ffast-math``, so a game rounds
exactly as its Python reference does.

A header that does not compile raises :class:`NativeBuildError` with one line: the header and the
compiler's first error.

Example:
    >>> source = generated_source("mypkg_games", [Path("/src/c/pong.h")])
    >>> print(source.splitlines()[-2])
    #define OCEAN_GAME_ROWS PONG_GAME
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from pufferbox.errors import PufferboxError

__all__ = ["SDK_DIR", "CFLAGS", "NativeBuildError", "generated_source", "find_cc", "build", "load"]

SDK_DIR = Path(__file__).parent / "c"  # ocean.h (the game API), binding.c, ocean_kernels.cuh
CFLAGS = ("-O3", "-ffp-contract=off", "-fno-fast-math", "-std=gnu11", "-fPIC", "-shared", "-Wall", "-Wextra")
# a call to an undeclared function is an error here, naming the header, not an undefined symbol at load
STRICT = ("-Werror=implicit-function-declaration",)
COMPILE_SECONDS = 600
FIRST_ERROR = re.compile(r"^(?P<where>[^\s:][^:]*:\d+(?::\d+)?): (?:fatal )?error: (?P<what>.*)$", re.MULTILINE)


class NativeBuildError(PufferboxError, RuntimeError):
    """A plugin's C games could not be compiled or loaded (one line: the file and the first error)."""


def generated_source(module: str, headers: list[Path]) -> str:
    """The translation unit: each header, the table of their ``NAME_GAME`` rows, then the binding."""
    rows = " ".join(f"{h.stem.upper()}_GAME" for h in headers)
    return (
        "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"
        + "".join(f'#include "{h}"\n' for h in headers)
        + f"#define OCEAN_MODULE {module}\n#define OCEAN_GAME_ROWS {rows}\n"
        + '#include "binding.c"\n'
    )


def find_cc() -> str | None:
    """The C compiler: ``$CC``, else cc, gcc or clang on PATH."""
    if os.environ.get("CC"):
        return shutil.which(os.environ["CC"].split()[0])
    return next((found for name in ("cc", "gcc", "clang") if (found := shutil.which(name))), None)


def cache_root() -> Path:
    if os.environ.get("PUFFERBOX_CACHE"):
        return Path(os.environ["PUFFERBOX_CACHE"]) / "native"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pufferbox" / "native"


def build_key(source: str, headers: list[Path], cc: str, flags: tuple[str, ...]) -> str:
    """A digest of everything the build reads: sources, the SDK's files, flags, compiler, Python ABI."""
    digest = hashlib.sha256()
    texts = [source, *(h.read_text() for h in sorted({*headers, *sibling_headers(headers)}))]
    texts += [p.read_text() for p in sorted(SDK_DIR.iterdir()) if p.suffix in (".h", ".c")]
    for part in (*texts, cc, "\0".join(flags), sysconfig.get_config_var("EXT_SUFFIX") or "", sys.version):
        digest.update(part.encode())
        digest.update(b"\1")
    return digest.hexdigest()[:24]


def sibling_headers(headers: list[Path]) -> list[Path]:
    """Every header beside the games' (helpers they include rebuild the extension when edited too)."""
    return sorted({p for h in headers for p in h.parent.glob("*.h")})


def compile_flags(headers: list[Path]) -> list[str]:
    includes = {str(SDK_DIR), sysconfig.get_paths()["include"], *(str(h.parent) for h in headers)}
    extra = ["-undefined", "dynamic_lookup"] if sys.platform == "darwin" else []
    return [*CFLAGS, *STRICT, *extra, *(f"-I{d}" for d in sorted(includes))]


def first_error(stderr: str) -> str:
    """The compiler's first error as ``file:line:col: message`` (else its first non-empty line)."""
    found = FIRST_ERROR.search(stderr)
    if found:
        return f"{found['where']}: {found['what'].strip()}"
    return next((line.strip() for line in stderr.splitlines() if line.strip()), "no diagnostics")


def build(module: str, headers: list[Path]) -> Path:
    """The compiled extension of ``headers`` (from the cache, or compiled into it now)."""
    cc = find_cc()
    if cc is None:
        raise NativeBuildError(
            f"{module}: no C compiler to build {', '.join(h.name for h in headers)}; fix: install gcc (or set CC)"
        )
    source = generated_source(module, headers)
    flags = compile_flags(headers)
    key = build_key(source, headers, cc, tuple(flags))
    root = cache_root()
    target = root / f"{module}-{key}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    if target.is_file():
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = open(root / f"{module}.lock", "w")  # noqa: SIM115 - held until the build is in place
    except OSError as exc:
        raise NativeBuildError(f"{module}: cannot write the build cache {root}: {exc}; fix: set PUFFERBOX_CACHE") from None
    with lock:
        with contextlib.suppress(OSError):  # no locking there: processes may compile twice, harmlessly
            fcntl.flock(lock, fcntl.LOCK_EX)  # one process compiles; the others then find it built
        if not target.is_file():
            compile_to(cc, flags, source, target, module)
    return target


def compile_to(cc: str, flags: list[str], source: str, target: Path, module: str) -> None:
    with tempfile.TemporaryDirectory(prefix="pufferbox-native-", dir=target.parent) as tmp:
        src, out = Path(tmp) / f"{module}.c", Path(tmp) / target.name
        src.write_text(source)
        env = {**os.environ, "LC_ALL": "C"}  # plain quotes in the diagnostics, whatever the user's locale
        try:
            command = [cc, *flags, str(src), "-o", str(out)]
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=COMPILE_SECONDS)
        except subprocess.TimeoutExpired:
            raise NativeBuildError(
                f"{module}: {cc} did not finish within {COMPILE_SECONDS} s; fix: simplify the headers"
            ) from None
        if done.returncode != 0:
            error = first_error(done.stderr).replace(str(src), f"the table generated for {module}")
            fix = "; fix: install Python's headers (python3-dev)" if "Python.h" in error else ""
            raise NativeBuildError(f"C game does not compile: {error}{fix}")
        os.replace(out, target)


def load(module: str, headers: list[Path]) -> ModuleType:
    """Build (or find) and import the extension of ``headers`` as ``module``."""
    path = build(module, headers)
    loader = importlib.machinery.ExtensionFileLoader(module, str(path))
    spec = importlib.util.spec_from_file_location(module, path, loader=loader)
    if spec is None:
        raise NativeBuildError(f"{module}: cannot load {path}; fix: delete it and retry")
    try:
        extension = importlib.util.module_from_spec(spec)
        loader.exec_module(extension)
    except ImportError as exc:  # a symbol the headers use but nothing defines
        raise NativeBuildError(f"C game does not load: {exc}; fix: define it in the header (static inline)") from None
    return extension
