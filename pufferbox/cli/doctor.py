"""``pufferbox doctor``: is this machine ready for the GPU parts? Each check ok/missing with its fix.

A report, so it exits 0 even when GPU parts are missing, unless ``--strict``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass

import click

from pufferbox.cli import cli

SHM_MIN = 1 << 30


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


# The oldest Linux driver that runs each CUDA major's builds (NVIDIA's minor-version compatibility table).
DRIVER_FLOOR = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


def driver_cuda_version(lib: ctypes.CDLL) -> tuple[int, int] | None:
    """The newest CUDA version the loaded driver supports (``cuDriverGetVersion``), or None if it fails."""
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return version.value // 1000, version.value % 1000 // 10


def driver_too_old(driver_cuda: tuple[int, int] | None, torch_cuda: str | None) -> str:
    """Why this driver cannot run torch's CUDA build ("" when it can, or when either is unknown).

    >>> driver_too_old((12, 4), "13.0")
    'supports CUDA 12.4, but torch is a CUDA 13.0 build: it needs a driver >= 580.65.06 (CUDA 13)'
    >>> driver_too_old((13, 0), "13.0"), driver_too_old((12, 4), None)
    ('', '')
    """
    if driver_cuda is None or not torch_cuda:
        return ""
    major = int(torch_cuda.split(".")[0])
    if driver_cuda[0] >= major:  # minor-version compatibility: any driver of the major runs its builds
        return ""
    floor = DRIVER_FLOOR.get(major, f"one for CUDA {major}")
    return (
        f"supports CUDA {driver_cuda[0]}.{driver_cuda[1]}, but torch is a CUDA {torch_cuda} build: "
        f"it needs a driver >= {floor} (CUDA {major})"
    )


def check_driver() -> Check:
    smi = shutil.which("nvidia-smi")
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return Check(
            "driver",
            False,
            "libcuda.so.1 not loadable (no NVIDIA driver)",
            "run on a GPU machine; in a container use --gpus all (docker) or the nvidia CDI device (podman)",
        )
    detail = "libcuda.so.1 loads"
    if smi:
        out = subprocess.run(
            [smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
        detail += f"; {out.stdout.strip() or out.stderr.strip()}"
    import torch

    torch_cuda = torch.version.cuda or ""
    too_old = driver_too_old(driver_cuda_version(lib), torch_cuda)
    if too_old:
        return Check(
            "driver",
            False,
            f"{detail}; the driver {too_old}",
            f"upgrade the NVIDIA driver to >= {DRIVER_FLOOR.get(int(torch_cuda.split('.')[0]), '?')}, "
            "or train on the CPU (--device cpu)",
        )
    return Check("driver", True, detail)


def check_runtime() -> Check:
    for name in ("libcudart.so.12", "libcudart.so.13", "libcudart.so"):
        try:
            ctypes.CDLL(name)
            return Check("cuda runtime", True, f"{name} loads")
        except OSError:
            continue
    import torch

    if torch.version.cuda:
        return Check("cuda runtime", True, f"bundled with torch (CUDA {torch.version.cuda})")
    return Check(
        "cuda runtime", False, "no libcudart and a CPU-only torch", "install a CUDA torch build or the CUDA toolkit"
    )


def check_nvcc() -> Check:
    from pufferbox.cuda.build import find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        return Check(
            "nvcc",
            False,
            "not on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin",
            "install the CUDA toolkit (a CUDA *devel* image) to compile kernels",
        )
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    return Check("nvcc", True, f"{nvcc} ({out[-1] if out else '?'})")


def check_pycuda() -> Check:
    if importlib.util.find_spec("pycuda") is None:
        return Check("pycuda", False, "not installed", "pip install 'pufferbox[cuda]' (on a CUDA devel image)")
    try:
        import pycuda.driver as drv

        drv.init()
        return Check("pycuda", True, f"pycuda.driver loads, {drv.Device.count()} device(s)")
    except Exception as exc:
        return Check("pycuda", False, f"installed, but pycuda.driver fails: {exc}", "needs an NVIDIA driver and GPU")


def check_compute_capability() -> Check:
    import torch

    if not torch.cuda.is_available():
        return Check("compute capability", False, "no GPU visible to torch", "run on a GPU machine")
    major, minor = torch.cuda.get_device_capability()
    ok = major >= 7
    return Check(
        "compute capability",
        ok,
        f"{torch.cuda.get_device_name()}: sm_{major}{minor}",
        "" if ok else "pufferbox kernels are tested on sm_80 and sm_90",
    )


def check_torch_cuda() -> Check:
    import torch

    if torch.cuda.is_available():
        return Check("torch cuda", True, f"torch {torch.__version__}, CUDA {torch.version.cuda}")
    kind = "CPU build" if not torch.version.cuda else f"CUDA {torch.version.cuda} build, no device"
    return Check(
        "torch cuda",
        False,
        f"torch {torch.__version__} ({kind})",
        "install a CUDA build of the pinned torch (the tank image on a CUDA base has one)",
    )


def check_shm(path: str = "/dev/shm") -> Check:
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return Check("/dev/shm", False, str(exc), "mount a tmpfs at /dev/shm")
    size = st.f_frsize * st.f_blocks
    ok = size >= SHM_MIN
    return Check(
        "/dev/shm",
        ok,
        f"{size / 2**30:.1f} GiB",
        "" if ok else "multiprocessing/ray need >= 1 GiB: docker run --shm-size=8g, or shm_size: 8gb in compose.yaml",
    )


def check_ray() -> Check:
    if importlib.util.find_spec("ray") is None:
        return Check("ray", False, "not installed", "pip install 'pufferbox[ray]'")
    from importlib.metadata import version

    return Check("ray", True, f"ray {version('ray')}")


def check_train_device() -> Check:
    """What ``pufferbox train`` resolves ``train.device = "auto"``, ``torch_threads = 0`` and ``autocast = "auto"``
    to here (always ok: training falls back to the CPU and float32)."""
    import torch

    from pufferbox.train.hardware import SMALL_POLICY_MACS, auto_threads, pick_autocast, pick_device, usable_cores

    device, cores = pick_device("auto"), usable_cores()
    name = f"cuda ({torch.cuda.get_device_name()})" if device.type == "cuda" else "cpu"
    return Check(
        "train device",
        True,
        f"auto -> {name}; torch_threads 0 -> {auto_threads(cores, 'serial', 0)} of {cores} cores "
        f"(serial backend; minus one per env worker process; 1 for policies under "
        f"{SMALL_POLICY_MACS:,} multiply-adds per sample); autocast auto -> {pick_autocast('auto', device)}",
    )


def check_scaling_plan() -> Check:
    """What ``pufferbox train`` scales the plugin defaults to on this machine (always ok: see
    pufferbox/train/plan.py; ``pufferbox info ENV`` shows one env's plan)."""
    from pufferbox.train.plan import Machine, machine_summary

    return Check("scaling plan", True, machine_summary(Machine.here()))


CHECKS = (
    check_driver,
    check_runtime,
    check_nvcc,
    check_pycuda,
    check_compute_capability,
    check_torch_cuda,
    check_train_device,
    check_scaling_plan,
    check_shm,
    check_ray,
)


def run_checks() -> list[Check]:
    out = []
    for check in CHECKS:
        try:
            out.append(check())
        except Exception as exc:  # a check that breaks is itself a finding
            out.append(Check(check.__name__.removeprefix("check_"), False, f"check failed: {exc}"))
    return out


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 when any check is missing.")
def doctor(as_json: bool, strict: bool) -> None:
    """Check driver, CUDA runtime, nvcc, PyCUDA, compute capability, torch CUDA, the train device and its
    scaling plan, /dev/shm and Ray."""
    checks = run_checks()
    if as_json:
        click.echo(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for c in checks:
            status = "ok     " if c.ok else "missing"
            click.echo(f"{status} {c.name:<19} {c.detail}" + (f"\n        fix: {c.fix}" if not c.ok and c.fix else ""))
    if strict and not all(c.ok for c in checks):
        raise SystemExit(1)
