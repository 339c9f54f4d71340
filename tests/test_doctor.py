"""``pufferbox doctor`` reports every check with ok/missing and a fix; exit 0 unless --strict."""

import json

from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.cli.cuda import Check, check_shm

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
    import pufferbox.cli.cuda as doctor

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

    from pufferbox.cli.cuda import check_train_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for native, expected in ((True, "autocast auto -> bf16"), (False, "autocast auto -> none")):
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda native=native: native)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
        assert expected in check_train_device().detail
