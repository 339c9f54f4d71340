"""Leaderboard readers never write (read-only storage works); empty/corrupt databases and failed or
never-started tournaments are one-line errors. No Ray needed: every case fails before pods start."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.tournament.leaderboard import Entry, Leaderboard

PUFFERBOX = [sys.executable, "-m", "pufferbox"]


def invoke(*args: str):
    load_commands()
    return CliRunner().invoke(cli, list(args))


def assert_one_line(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def board_dir(tmp_path) -> Path:
    run_dir = tmp_path / "t"
    board = Leaderboard(run_dir, capacity=4)
    board.start({"env": "cartpole"}, {}, {"steps": 0})
    for i, score in enumerate([10.0, 30.0, 20.0]):
        board.insert(
            Entry(pod=i, score=score, score_std=1.0, episodes=2, steps=100 * (i + 1), checkpoint=b"ckpt"),
            total_steps=100 * (i + 1),
        )
    board.close()
    return run_dir


def test_readers_never_write_the_database(board_dir):
    before = {p.name: p.read_bytes() for p in board_dir.iterdir() if p.is_file()}
    board = Leaderboard.open_read_only(board_dir)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        board.db.execute("CREATE TABLE intruder (x)")
    board.close()
    assert invoke("leaderboard", str(board_dir), "--json").exit_code == 0
    assert invoke("plot", str(board_dir), "-o", str(board_dir.parent / "c.png")).exit_code == 0
    assert {p.name: p.read_bytes() for p in board_dir.iterdir() if p.is_file()} == before


def can_mount() -> bool:
    return (
        shutil.which("unshare") is not None
        and subprocess.run(
            ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True
        ).returncode
        == 0
    )


@pytest.mark.skipif(not can_mount(), reason="needs `unshare -m` and mount (root or CAP_SYS_ADMIN) for read-only storage")
def test_leaderboard_and_plot_work_on_read_only_storage(board_dir, tmp_path):
    png = tmp_path / "out" / "c.png"
    png.parent.mkdir()
    py = " ".join(PUFFERBOX)
    script = (
        f"mount --bind {board_dir} {board_dir} && mount -o remount,bind,ro {board_dir} && "
        f"{py} leaderboard {board_dir} --json && {py} plot {board_dir} -o {png}"
    )
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"score": 30.0' in proc.stdout and png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("content, needle", [(b"", "empty file"), (b"not a database" * 100, "not a readable")])
def test_empty_or_corrupt_database_is_one_line_naming_the_file(tmp_path, content, needle):
    run_dir = tmp_path / "t"
    run_dir.mkdir()
    db = run_dir / "leaderboard.sqlite"
    db.write_bytes(content)
    assert_one_line(invoke("leaderboard", str(run_dir)), str(db), needle)
    assert_one_line(invoke("plot", str(run_dir), "-o", str(tmp_path / "c.png")), str(db), needle)
    assert_one_line(invoke("tournament", "--resume", "--run-dir", str(run_dir)), str(db), needle)
    assert db.read_bytes() == content  # never silently re-initialised


@pytest.mark.parametrize("args", [["cartpol"], ["cartpole", "--set", "train.no_such_key=1"]])
def test_a_failed_start_leaves_no_database(tmp_path, args):
    run_dir = tmp_path / "t"
    result = invoke("tournament", *args, "--pods", "1", "--total-steps", "1000", "--run-dir", str(run_dir))
    assert result.exit_code == 2, result.output
    assert not (run_dir / "leaderboard.sqlite").exists()


def test_a_never_started_tournament_is_refused_by_resume_and_accepted_by_a_retry(tmp_path):
    run_dir = tmp_path / "t"
    Leaderboard(run_dir).close()  # what a start that failed before recording its settings used to leave
    assert_one_line(invoke("tournament", "--resume", "--run-dir", str(run_dir)), "never started", "without --resume")
    retry = invoke("tournament", "cartpol", "--pods", "1", "--total-steps", "1000", "--run-dir", str(run_dir))
    assert_one_line(retry, "unknown env 'cartpol'")  # got past the "already holds a tournament" check
