"""Export's storage faults (issue 54, defect 8): read-only or full storage is one line and leaves nothing;
an empty DIR (a container volume's mount point) is filled in place, never removed; of two exports into one
DIR the second is one line; the exported folder and files get the umask's modes, not private ones."""

from __future__ import annotations

import errno
import os
import pathlib
import stat
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import pufferbox.export as export
from pufferbox.cli import cli, load_commands


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    load_commands()
    run = tmp_path_factory.mktemp("export") / "run"
    quick = ["--num-envs", "4", "--set", "train.num_steps=32", "--no-tensorboard", "--total-steps", "256"]
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(run), *quick])
    assert result.exit_code == 0, result.output
    return run


def one_line_error(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_an_empty_dir_such_as_a_mount_point_is_filled_in_place(run_dir, tmp_path, monkeypatch):
    out = tmp_path / "volume"
    out.mkdir()
    inode = out.stat().st_ino
    real_rmdir = pathlib.Path.rmdir

    def busy(self):  # a mount point cannot be removed
        if self == out:
            raise OSError(errno.EBUSY, "Device or resource busy", str(self))
        return real_rmdir(self)

    monkeypatch.setattr(pathlib.Path, "rmdir", busy)
    result = CliRunner().invoke(cli, ["export", str(run_dir), "--to", "onnx", str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_ino == inode and (out / "policy.onnx").is_file()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []  # no staging left


def test_read_only_storage_is_one_line_and_leaves_nothing(run_dir, tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path))

    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    result = CliRunner().invoke(cli, ["export", str(run_dir), "--to", "onnx", str(tmp_path / "out")])
    one_line_error(result, "EROFS", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_the_second_of_two_exports_into_one_dir_is_one_line(run_dir, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real = export.write_graphs

    def other_export_finishes_first(*args, **kwargs):
        graphs = real(*args, **kwargs)
        out.mkdir()
        (out / "theirs.onnx").write_text("the other export's file\n")
        return graphs

    monkeypatch.setattr(export, "write_graphs", other_export_finishes_first)
    result = CliRunner().invoke(cli, ["export", str(run_dir), "--to", "onnx", str(out)])
    one_line_error(result, str(out), "another export filled it first")
    assert [p.name for p in out.iterdir()] == ["theirs.onnx"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging folder left


def test_an_exported_folder_and_its_files_get_the_umask_modes(run_dir, tmp_path):
    old = os.umask(0o022)
    try:
        result = CliRunner().invoke(cli, ["export", str(run_dir), "--to", "hub", str(tmp_path / "hub"), "--episodes", "1"])
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((tmp_path / "hub").stat().st_mode) == 0o755
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "hub").iterdir()}
    assert set(modes.values()) == {0o644}, modes


def test_a_hub_export_that_cannot_write_its_gif_fails_in_one_line(run_dir, tmp_path, monkeypatch):
    import pufferbox.train.evaluate as evaluate

    def full(frames, path, fps=30):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(evaluate, "save_video", full)
    result = CliRunner().invoke(cli, ["export", str(run_dir), "--to", "hub", str(tmp_path / "hub"), "--episodes", "1"])
    one_line_error(result, "ENOSPC", "replay.gif")
    assert list(tmp_path.iterdir()) == []  # nothing published


def test_sigterm_mid_export_is_one_line_exit_143_and_leaves_nothing(run_dir, tmp_path):
    """Also found: SIGTERM mid-export left a private `.DIR.xxxx` staging folder behind, and no word."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "hub"
    cmd = [sys.executable, "-m", "pufferbox", "export", str(run_dir), "--to", "hub", str(out), "--episodes", "200"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not list(tmp_path.glob(".hub.*")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.strip().splitlines() == ["Error: SIGTERM: export stopped; nothing was written"], err
    assert list(tmp_path.iterdir()) == []
