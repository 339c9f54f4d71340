"""Tournaments on a local Ray: a run, a pod killed mid-slice, a driver killed and resumed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from pufferbox.tournament.leaderboard import Leaderboard

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray", reason="the tournament runs on Ray (pip install 'pufferbox[ray]')")

SLICE = 4096  # two cartpole updates with the plugin's defaults (64 envs x 32 steps)
PUFFERBOX = [sys.executable, "-m", "pufferbox"]


def assert_board_consistent(run_dir: Path) -> list:
    board = Leaderboard(run_dir)
    entries = board.entries()
    scores = [e.score for e in entries]
    assert scores == sorted(scores, reverse=True)
    assert all(e.checkpoint and os.path.exists(e.checkpoint) for e in entries)
    best = [h[2] for h in board.history()]
    assert best == sorted(best), f"leaderboard best decreased: {best}"
    board.close()
    return entries


def test_tournament_runs_and_fills_the_board(local_ray, tmp_path):
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands
    from pufferbox.tournament.orchestrator import run_tournament

    events = []
    result = run_tournament("cartpole", pods=2, run_dir=tmp_path / "t", total_steps=4 * SLICE, slice_steps=SLICE,
                            eval_episodes=2, capacity=3, on_event=events.append)
    assert result.slices == 4 and result.lost_slices == 0
    assert result.total_steps >= 4 * SLICE
    assert 0.0 <= result.overhead < 1.0 and result.train_time > 0
    entries = assert_board_consistent(tmp_path / "t")
    assert len(entries) == 3  # capacity
    started = [e for e in events if e["event"] == "slice_started"]
    assert {e["slot"] for e in started} == {0, 1}, "both pods got work"
    assert any(e["parent"] is not None for e in started), "the generator seeded a pod from the board"

    load_commands()
    out = CliRunner().invoke(cli, ["leaderboard", str(tmp_path / "t"), "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [r["rank"] for r in rows] == [1, 2, 3] and rows[0]["score"] == entries[0].score

    from pufferbox.train.plot import plot_runs, read_curve

    steps, walls, best = read_curve(tmp_path / "t")
    assert len(steps) == 4 and best == sorted(best) and best[-1] == entries[0].score
    png = plot_runs([tmp_path / "t"], tmp_path / "t.png")
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pod_killed_mid_slice_loses_only_that_slice(local_ray, tmp_path):
    from pufferbox.tournament.orchestrator import run_tournament

    killed = []
    long_slice = 32 * SLICE  # several seconds of training: the kill lands mid-slice

    def kill_first_pod(event: dict) -> None:
        if event["event"] == "slice_started" and not killed:
            killed.append(event["actor"])
            threading.Timer(3.0, lambda: ray.kill(ray.get_actor(event["actor"]), no_restart=True)).start()

    result = run_tournament("cartpole", pods=2, run_dir=tmp_path / "k", total_steps=2 * long_slice,
                            slice_steps=long_slice, eval_episodes=2, on_event=kill_first_pod)
    assert killed
    assert result.lost_slices == 1
    assert result.slices == 2 and result.total_steps >= 2 * long_slice
    assert_board_consistent(tmp_path / "k")


def test_pods_can_vectorize_on_ray(local_ray, tmp_path):
    from pufferbox.tournament.orchestrator import run_tournament

    events = []
    result = run_tournament("cartpole", pods=2, run_dir=tmp_path / "r", total_steps=2 * SLICE, slice_steps=SLICE,
                            eval_episodes=2, overrides=["vec.backend=ray", "vec.num_workers=2", "vec.num_envs=8"],
                            on_event=events.append)
    done = [e for e in events if e["event"] == "slice_done"]
    assert result.slices == 2 and {e["backend"] for e in done} == {"ray"}


def process_tree_kill(proc: subprocess.Popen) -> None:
    family = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGKILL)
    for child in family:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)


def count_entries(run_dir: Path) -> int:
    db = run_dir / "leaderboard.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_driver_killed_and_resumed(tmp_path):
    run_dir = tmp_path / "d"
    total = 8 * SLICE
    args = [*PUFFERBOX, "tournament", "cartpole", "--pods", "2", "--total-steps", str(total),
            "--slice-steps", str(SLICE), "--eval-episodes", "2", "--run-dir", str(run_dir)]
    env = {**os.environ, "RAY_ADDRESS": ""}
    proc = subprocess.Popen(args, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 180
    while count_entries(run_dir) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, f"the driver ended before it could be killed: {proc.stderr.read()}"
    process_tree_kill(proc)
    before = {e.id: e.score for e in Leaderboard(run_dir, capacity=8).entries(on_board_only=False)}
    assert len(before) >= 2

    resumed = subprocess.run([*PUFFERBOX, "tournament", "--resume", "--run-dir", str(run_dir), "--json"],
                             env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert summary["total_steps"] >= total
    after = {e.id: e.score for e in Leaderboard(run_dir, capacity=8).entries(on_board_only=False)}
    assert all(after[i] == s for i, s in before.items()), "entries written before the kill survived unchanged"
    # At most the slices in flight (one per pod) were lost: every finished slice is on record.
    assert len(after) * SLICE >= total
    assert_board_consistent(run_dir)


def test_resume_and_budget_errors_are_one_line(tmp_path):
    out = subprocess.run([*PUFFERBOX, "tournament", "--resume", "--run-dir", str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"Error: --resume {tmp_path}: no leaderboard.sqlite there; "
                                               "start a tournament without --resume"]
    out = subprocess.run([*PUFFERBOX, "tournament", "cartpole"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "exactly one budget" in out.stderr
