"""``pufferbox doctor`` reports every check with ok/missing and a fix; exit 0 unless --strict."""

import json

from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.cli.doctor import Check, check_shm

load_commands()
NAMES = [
    "driver",
    "cuda runtime",
    "nvcc",
    "pycuda",
    "compute capability",
    "torch cuda",
    "train device",
    "scaling plan",
    "/dev/shm",
    "ray",
]


def test_doctor_json_lists_every_check_with_fixes():
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    checks = json.loads(result.output)
    assert [c["name"] for c in checks] == NAMES
    assert all(c["fix"] for c in checks if not c["ok"])


def test_doctor_strict_fails_when_something_is_missing(monkeypatch):
    import pufferbox.cli.doctor as doctor

    monkeypatch.setattr(doctor, "CHECKS", (lambda: Check("driver", False, "none", "get one"),))
    runner = CliRunner()
    assert runner.invoke(cli, ["doctor"]).exit_code == 0
    result = runner.invoke(cli, ["doctor", "--strict"])
    assert result.exit_code == 1 and "missing driver" in result.output and "fix: get one" in result.output


def test_small_shm_says_how_to_grow_it(monkeypatch, tmp_path):
    import os

    class Small:
        f_frsize, f_blocks = 4096, 1000

    monkeypatch.setattr(os, "statvfs", lambda path: Small)
    check = check_shm(str(tmp_path))
    assert not check.ok and "--shm-size" in check.fix


def test_doctor_says_what_autocast_auto_resolves_to(monkeypatch):
    import torch

    from pufferbox.cli.doctor import check_train_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for native, expected in ((True, "autocast auto -> bf16"), (False, "autocast auto -> none")):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda native=native: native)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
        assert expected in check_train_device().detail


DOCTOR_WITH_TORCH_CUDA = """
import sys, torch
import pufferbox.cli.doctor as doctor
from click.testing import CliRunner
from pufferbox.cli import cli, load_commands
load_commands()
doctor.CHECKS = (doctor.check_driver,)
for cuda in sys.argv[1:]:
    torch.version.cuda = cuda or None  # as a CUDA (or CPU) build of torch reports it
    print(CliRunner().invoke(cli, ["doctor"]).output, end="=====\\n")
"""


def fake_driver(tmp_path, cuda_version: int) -> dict:
    """A libcuda.so.1 whose cuDriverGetVersion reports ``cuda_version`` (12040: CUDA 12.4) and an
    nvidia-smi naming the GPU and the driver, found first by the loader and on PATH."""
    import os
    import subprocess

    from pufferbox.cuda.hostsim import find_cxx

    source = tmp_path / "libcuda.c"
    source.write_text(f"int cuDriverGetVersion(int *v) {{ *v = {cuda_version}; return 0; }}\n")
    library = tmp_path / "libcuda.so.1"
    subprocess.run([find_cxx(), "-shared", "-fPIC", "-x", "c", str(source), "-o", str(library)], check=True)
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H100 80GB HBM3, 550.54.15'\n")
    smi.chmod(0o755)
    return dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), PATH=f"{tmp_path}:{os.environ['PATH']}")


def test_doctor_names_a_driver_too_old_for_torchs_cuda_build_in_one_line(tmp_path):
    """Issue 43: the tank's torch 2.13.0 is PyPI's CUDA 13.0 build; on a CUDA 12.4 driver (550) doctor says
    so with the floor, and passes a CUDA 13.0 driver or a CPU build of torch."""
    import subprocess
    import sys

    import pytest

    from pufferbox.cuda.hostsim import find_cxx

    if find_cxx() is None:
        pytest.skip("building a stand-in libcuda.so.1 needs a C compiler")
    env = fake_driver(tmp_path, 12040)
    out = subprocess.run(
        [sys.executable, "-c", DOCTOR_WITH_TORCH_CUDA, "13.0", "12.8", ""],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    too_old, cuda12, cpu = out.stdout.split("=====\n")[:3]
    old = too_old.splitlines()
    assert old[0].startswith("missing driver") and "NVIDIA H100 80GB HBM3, 550.54.15" in old[0], old
    assert old[0].endswith(
        "the driver supports CUDA 12.4, but torch is a CUDA 13.0 build: it needs a driver >= 580.65.06 (CUDA 13)"
    )
    assert old[1].strip() == "fix: upgrade the NVIDIA driver to >= 580.65.06, or train on the CPU (--device cpu)"
    assert cuda12.startswith("ok      driver"), "a CUDA 12 build runs on a CUDA 12.4 driver"
    assert cpu.startswith("ok      driver"), "a CPU build of torch needs no driver at all"
