"""Creates the training peers' own venvs (CleanRL 1.2.0, PufferLib 3.0.0) outside the repo.

Each peer runs its published code with the versions it was written for, which cannot share
pufferbox's venv (CleanRL needs gym 0.23.1; PufferLib needs gymnasium<=0.29.1). Everything goes
under ``$PUFFERBOX_PEERS_DIR`` (default ``/tmp/pufferbox-peers``):

    cleanrl/            venv: torch 2.13.0 (CPU), gym 0.23.1, envpool 0.8.4, procgen-mirror 0.10.7, tensorboard
    cleanrl-scripts/    the unmodified scripts from the cleanrl==1.2.0 wheel
    pufferlib/          venv: PufferLib 3.0.0 built from its sdist, nle 1.3.0

    .venv/bin/python benchmarks/bench_train_peers.py --setup

The recipe (and why each pin) is in ../shared/notes/machine.md and benchmarks/RESULTS.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

PEERS_DIR = Path(os.environ.get("PUFFERBOX_PEERS_DIR", "/tmp/pufferbox-peers"))
CLEANRL_VENV = PEERS_DIR / "cleanrl"
CLEANRL_SCRIPTS = PEERS_DIR / "cleanrl-scripts"
PUFFERLIB_VENV = PEERS_DIR / "pufferlib"
TORCH = "torch==2.13.0"  # unpinned torch resolves to a multi-GB CUDA build
CLEANRL_PACKAGES = [TORCH, "numpy<2", "gym==0.23.1", "envpool==0.8.4", "tensorboard"]
# procgen-mirror declares gym 0.26.2, but its gym3 env works with CleanRL's gym 0.23.1: install without deps
PROCGEN_PACKAGES = ["procgen-mirror==0.10.7", "gym3==0.3.3"]
PROCGEN_DEPS = ["filelock", "cffi", "imageio<3", "glfw<2", "moderngl<6"]
PUFFERLIB_BUILD = [TORCH, "numpy<2", "setuptools", "wheel", "Cython", "gymnasium==0.29.1", "pettingzoo==1.24.1"]
# What its trainer imports: heavyball for its default optimizer (Muon; 1.7.2 is of PufferLib 3.0's time),
# pyro-ppl for its sweep module (imported by pufferl), gym 0.23.0 (it declares gym<=0.23), ray for
# pufferlib.vector.Ray (bench_ray.py's peer rows; the version pufferbox pins)
PUFFERLIB_RUNTIME = [
    TORCH,
    "ray==2.60.0",
    "gym==0.23.0",
    "heavyball==1.7.2",
    "pyro-ppl==1.9.1",
    "shimmy[gym-v21]==1.3.0",
    "psutil",
    "rich",
    "rich_argparse",
]
PUFFERLIB_SDIST_URL = (
    "https://files.pythonhosted.org/packages/7c/e1/5292f9b69c6263707b40ba04a87e6b9bcc177281d31092f77afd90c412f1/"
    "pufferlib-3.0.0.tar.gz"
)
PUFFERLIB_SDIST_SHA256 = "7df3a3e3f5f894d78d2a1f5374097890aec01473183e748abefe4f3faa10eaa9"
# PufferLib's setup.py downloads these from GitHub unless the folders exist (we build no raylib/box2d envs)
PUFFERLIB_PLACEHOLDERS = ["raylib-5.5_webassembly", "box2d-web", "box2d-linux-amd64"]


class PeerMissing(RuntimeError):
    """A peer venv or script is absent; the message says how to create it."""


def python_of(venv: Path) -> Path:
    """The venv's interpreter, or PeerMissing naming ``--setup``."""
    python = venv / "bin" / "python"
    if not python.exists():
        raise PeerMissing(
            f"peer venv {venv} is missing: run `python benchmarks/bench_train_peers.py --setup` "
            f"(or set PUFFERBOX_PEERS_DIR to where it lives)"
        )
    return python


def cleanrl_script(name: str) -> Path:
    """Path of an unmodified CleanRL 1.2.0 script, e.g. ``cleanrl_script("ppo_procgen.py")``."""
    path = CLEANRL_SCRIPTS / "cleanrl" / name
    if not path.exists():
        raise PeerMissing(f"{path} is missing: run `python benchmarks/bench_train_peers.py --setup`")
    return path


def _run(*cmd: str | Path, env: dict | None = None, cwd: Path | None = None) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, env=env, cwd=cwd)


def _venv(path: Path) -> Path:
    if not (path / "bin" / "python").exists():
        _run(sys.executable, "-m", "venv", "--clear", path)  # pufferbox's venv python is a plain CPython 3.11
    _run(path / "bin" / "python", "-m", "pip", "install", "-q", "--upgrade", "pip")
    return path / "bin" / "python"


def setup_cleanrl() -> None:
    """CleanRL's venv and its scripts, taken unmodified from the cleanrl==1.2.0 wheel."""
    downloads = PEERS_DIR / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    _run(
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--ignore-requires-python",
        "cleanrl==1.2.0",
        "-d",
        downloads,
    )
    with zipfile.ZipFile(next(downloads.glob("cleanrl-1.2.0-*.whl"))) as wheel:
        for name in ("cleanrl/ppo_atari_envpool.py", "cleanrl/ppo_procgen.py"):
            wheel.extract(name, CLEANRL_SCRIPTS)
    python = _venv(CLEANRL_VENV)
    _run(python, "-m", "pip", "install", "-q", *CLEANRL_PACKAGES)
    _run(python, "-m", "pip", "install", "-q", "--no-deps", *PROCGEN_PACKAGES)
    _run(python, "-m", "pip", "install", "-q", *PROCGEN_DEPS)
    _run(python, "-c", "import envpool, gym, procgen, torch; print('cleanrl venv ok: gym', gym.__version__)")


def _download_sdist(downloads: Path) -> Path:
    """The pufferlib-3.0.0 sdist, checked against its PyPI hash.

    `pip download` cannot fetch it: preparing its metadata runs setup.py, which needs the
    build folders and downloads that this offline build replaces.
    """
    path = downloads / "pufferlib-3.0.0.tar.gz"
    if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != PUFFERLIB_SDIST_SHA256:
        print("+ download", PUFFERLIB_SDIST_URL, flush=True)
        with urllib.request.urlopen(PUFFERLIB_SDIST_URL, timeout=120) as response:
            path.write_bytes(response.read())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != PUFFERLIB_SDIST_SHA256:
        raise RuntimeError(f"{path}: sha256 {digest} is not PyPI's {PUFFERLIB_SDIST_SHA256}; delete it and retry")
    return path


def setup_pufferlib() -> None:
    """PufferLib 3.0.0 from its sdist, built offline (placeholders instead of raylib/box2d downloads)."""
    downloads = PEERS_DIR / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    python = _venv(PUFFERLIB_VENV)
    _run(python, "-m", "pip", "install", "-q", *PUFFERLIB_BUILD)
    sdist_path = _download_sdist(downloads)
    src = PEERS_DIR / "pufferlib-src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(PEERS_DIR / "pufferlib-3.0.0", ignore_errors=True)
    with tarfile.open(sdist_path) as sdist:
        sdist.extractall(PEERS_DIR, filter="data")
    (PEERS_DIR / "pufferlib-3.0.0").rename(src)
    for name in PUFFERLIB_PLACEHOLDERS:
        (src / name).mkdir(exist_ok=True)
    shutil.rmtree(src / "pufferlib" / "ocean" / "impulse_wars", ignore_errors=True)  # the one env linking box2d
    # with nvcc on PATH its setup insists on CUDA_HOME; this is a CPU build
    path = ":".join(p for p in os.environ["PATH"].split(":") if p not in ("/usr/local/bin", "/usr/local/cuda/bin"))
    env = {**os.environ, "PATH": f"{python.parent}:{path}"}
    _run(python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", ".", env=env, cwd=src)
    _run(python, "-m", "pip", "install", "-q", *PUFFERLIB_RUNTIME)
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "nle==1.3.0")  # nle pins gymnasium 1.2.0; runs on 0.29.1
    _run(python, "-c", "import pufferlib, nle; print('pufferlib venv ok', pufferlib.__version__)")


def setup(which: list[str]) -> None:
    """Creates the venvs named in ``which`` ("cleanrl", "pufferlib")."""
    PEERS_DIR.mkdir(parents=True, exist_ok=True)
    if "cleanrl" in which:
        setup_cleanrl()
    if "pufferlib" in which:
        setup_pufferlib()
