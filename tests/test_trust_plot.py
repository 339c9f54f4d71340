"""``pufferbox plot`` on what live, killed and read-only runs leave (issue 38, defect 8): a half-written
last metrics line is skipped with a warning; a plot it cannot write is one line naming ``--output``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands

QUICK = ["--num-envs", "4", "--set", "train.num_steps=32", "--total-steps", "1024", "--no-tensorboard"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    load_commands()
    path = tmp_path_factory.mktemp("runs") / "cp"
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(path), *QUICK])
    assert result.exit_code == 0, result.output
    return path


def torn_copy(run_dir: Path, where: Path) -> Path:
    """A copy of the run whose metrics.jsonl ends mid-line, as a run killed mid-write leaves it."""
    copy = where / "torn"
    shutil.copytree(run_dir, copy)
    lines = (copy / "metrics.jsonl").read_text().splitlines(keepends=True)
    (copy / "metrics.jsonl").write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    return copy


def test_a_half_written_last_line_is_skipped_with_a_warning(run_dir, tmp_path):
    torn = torn_copy(run_dir, tmp_path)
    result = CliRunner().invoke(cli, ["plot", str(torn), "-o", str(tmp_path / "c.png")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert result.stderr.strip() == (
        f"warning: {torn / 'metrics.jsonl'}: skipped its last line, which is incomplete (a run still writing it, or killed)"
    )


def test_a_damaged_line_before_the_last_is_one_line_naming_it(run_dir, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(run_dir, bad)
    lines = (bad / "metrics.jsonl").read_text().splitlines(keepends=True)
    (bad / "metrics.jsonl").write_text(lines[0] + "{garbage\n" + "".join(lines[1:]))
    result = CliRunner().invoke(cli, ["plot", str(bad), "-o", str(tmp_path / "c.png")])
    assert result.exit_code == 2 and result.stderr.strip() == (
        f"Error: {bad / 'metrics.jsonl'}: line 2 is not JSON (the file is damaged)"
    )


def test_a_plot_that_cannot_be_written_is_one_line_naming_output(run_dir, tmp_path):
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "plots" / "c.png"  # a file where a folder should be
    result = CliRunner().invoke(cli, ["plot", str(run_dir), "-o", str(target)])
    assert result.exit_code == 2, result.output
    assert (
        result.stderr.strip()
        == f"Error: {target}: cannot write the plot (Not a directory); pass --output PATH where you can write"
    )


def can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"]
    return subprocess.run(probe, capture_output=True).returncode == 0


@pytest.mark.skipif(not can_mount(), reason="needs `unshare -m` and mount (root or CAP_SYS_ADMIN) for read-only storage")
def test_plot_of_a_run_on_read_only_storage(run_dir, tmp_path):
    store = tmp_path / "ro"
    shutil.copytree(run_dir, store / "run")
    py = f"{sys.executable} -m pufferbox"
    ro = f"mount --bind {store} {store} && mount -o remount,bind,ro {store}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    script = f"{ro} && {py} plot {store}/run; echo rc=$?; {py} plot {store}/run -o {tmp_path}/out.png"
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    reason = "cannot write the plot (Read-only file system); pass --output PATH where you can write"
    assert proc.stderr.strip() == f"Error: {store}/run/curves.png: {reason}"
    assert "rc=2" in proc.stdout and proc.returncode == 0, proc.stdout
    assert (tmp_path / "out.png").read_bytes()[:4] == b"\x89PNG" and not (store / "run" / "curves.png").exists()
