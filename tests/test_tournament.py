"""Tournaments on a local Ray: a run, a pod killed mid-slice, a driver killed and resumed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
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
    from pufferbox.tournament.orchestrator import TournamentSettings, run_tournament

    events = []
    result = run_tournament(
        TournamentSettings("cartpole", pods=2, total_steps=4 * SLICE, slice_steps=SLICE, eval_episodes=2, capacity=3),
        run_dir=tmp_path / "t",
        on_event=events.append,
    )
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

    from pufferbox.tournament.curves import read_curve, read_curves
    from pufferbox.train.plot import plot_runs

    steps, walls, best = read_curve(tmp_path / "t")
    assert len(steps) == 4 and best == sorted(best) and best[-1] == entries[0].score
    png = plot_runs([tmp_path / "t"], tmp_path / "t.png", read=read_curves)
    assert Path(png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pod_killed_mid_slice_loses_only_that_slice(local_ray, tmp_path):
    from pufferbox.tournament.orchestrator import TournamentSettings, run_tournament

    killed = []
    long_slice = 32 * SLICE  # 64 updates: the kill lands after the first, with the rest of the slice to go

    def kill_after_first_update(name: str) -> None:
        actor = ray.get_actor(name)
        while ray.get(actor.progress.remote())["steps"] == 0:  # its own thread answers while the slice trains
            time.sleep(0.02)
        ray.kill(actor, no_restart=True)

    def kill_first_pod(event: dict) -> None:
        if event["event"] == "slice_started" and not killed:
            killed.append(event["actor"])
            threading.Thread(target=kill_after_first_update, args=(event["actor"],), daemon=True).start()

    result = run_tournament(
        TournamentSettings(
            "cartpole",
            pods=2,
            total_steps=2 * long_slice,
            slice_steps=long_slice,
            first_slice_steps=long_slice,
            eval_episodes=2,
        ),
        run_dir=tmp_path / "k",
        on_event=kill_first_pod,
    )
    assert killed
    assert result.lost_slices == 1
    assert result.slices == 2 and result.total_steps >= 2 * long_slice
    assert_board_consistent(tmp_path / "k")


def test_pods_can_vectorize_on_ray(local_ray, tmp_path):
    from pufferbox.tournament.orchestrator import TournamentSettings, run_tournament

    events = []
    result = run_tournament(
        TournamentSettings(
            "cartpole", pods=2, total_steps=2 * SLICE, slice_steps=SLICE, first_slice_steps=SLICE, eval_episodes=2
        ),
        run_dir=tmp_path / "r",
        overrides=["vec.backend=ray", "vec.num_workers=2", "vec.num_envs=8"],
        on_event=events.append,
    )
    done = [e for e in events if e["event"] == "slice_done"]
    assert result.slices == 2 and {e["backend"] for e in done} == {"ray"}


def test_slice_schedule_and_halving(local_ray, tmp_path):
    """Slices start short and double with the generation; with halving, generation g never has more
    than ceil(pods / 2**g) slices in flight, and the first `pods` slices found separate lineages."""
    import math

    from pufferbox.tournament.generator import slice_length
    from pufferbox.tournament.orchestrator import TournamentSettings, run_tournament

    events, running = [], {}
    peak: dict[int, int] = {}

    def on_event(event: dict) -> None:
        events.append(event)
        if event["event"] == "slice_started":
            running[event["slot"]] = event["generation"]
            for g in set(running.values()):
                peak[g] = max(peak.get(g, 0), sum(1 for x in running.values() if x >= g))
        elif event["event"] in ("slice_done", "slice_truncated", "slice_lost"):
            running.pop(event["slot"], None)

    result = run_tournament(
        TournamentSettings(
            "cartpole",
            pods=4,
            total_steps=12 * SLICE,
            slice_steps=SLICE,
            first_slice_steps=SLICE // 4,
            halving=True,
            cpus_per_pod=0.5,
            eval_episodes=2,
        ),
        run_dir=tmp_path / "h",
        on_event=on_event,
    )
    started = [e for e in events if e["event"] == "slice_started"]
    assert [e["parent"] for e in started[:4]] == [None] * 4, "four founding lineages"
    assert all(e["parent"] is not None for e in started[4:])
    assert all(e["steps"] == slice_length(e["generation"], SLICE // 4, SLICE) for e in started)
    assert {e["steps"] for e in started} >= {SLICE // 4, SLICE}, "short first slices, longer later ones"
    assert max(peak.values()) <= 4 and peak[0] > 1, "the founders ran side by side"
    assert all(n <= max(1, math.ceil(4 / 2**g)) for g, n in peak.items() if g > 0), peak
    assert result.total_steps >= 12 * SLICE
    assert_board_consistent(tmp_path / "h")


def test_lagging_pod_is_truncated_and_its_steps_counted(local_ray, tmp_path):
    """A board whose best is far out of reach: every child trains a few updates, is judged behind
    on its training returns, stops mid-slice without an evaluation, and its steps still count."""
    from pufferbox.tournament.leaderboard import Entry
    from pufferbox.tournament.orchestrator import TournamentSettings, run_tournament

    run_dir, longest = tmp_path / "lag", 16 * SLICE
    run_tournament(
        TournamentSettings(
            "cartpole", pods=1, total_steps=SLICE, slice_steps=longest, first_slice_steps=SLICE, eval_episodes=2
        ),
        run_dir=run_dir,
    )
    board = Leaderboard(run_dir)
    trained = board.best()
    board.insert(
        Entry(
            pod=99,
            score=10_000.0,
            score_std=0.0,
            episodes=10,
            steps=trained.steps,
            generation=6,
            hyperparams=trained.hyperparams,
            checkpoint=trained.checkpoint,
        )
    )  # untrained weights, top score
    settings, before = board.get_state("settings"), board.get_state("progress")["steps"]
    board.set_state("settings", {**settings, "total_steps": SLICE + 2 * longest})
    board.close()

    events = []
    result = run_tournament(TournamentSettings("cartpole"), run_dir=run_dir, resume=True, on_event=events.append)
    truncated = [e for e in events if e["event"] == "slice_truncated"]
    started = [e for e in events if e["event"] == "slice_started"]
    assert truncated and result.truncated_slices == len(truncated)
    assert all(e["steps"] == longest for e in started), "generation 7 trains the longest slice"
    assert all(0 < e["slice_steps"] < longest for e in truncated), "stopped mid-slice"
    done = [e for e in events if e["event"] == "slice_done"]
    # Every step counts: the first run's, the truncated slices' and those of any slice that ran to its end.
    assert result.total_steps == before + sum(e["slice_steps"] for e in truncated + done)
    assert result.total_steps >= SLICE + 2 * longest, "the budget was spent"
    assert len(Leaderboard(run_dir).entries(on_board_only=False)) == 2 + len(done), "truncated slices add no entry"
    assert_board_consistent(run_dir)


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
    args = [
        *PUFFERBOX,
        "tournament",
        "cartpole",
        "--pods",
        "2",
        "--total-steps",
        str(total),
        "--slice-steps",
        str(SLICE),
        "--eval-episodes",
        "2",
        "--run-dir",
        str(run_dir),
    ]
    ray_root = tempfile.mkdtemp(prefix="pbt-", dir="/tmp")  # short (socket paths) and ours to delete
    env = {**os.environ, "RAY_ADDRESS": "", "PUFFERBOX_RAY_TMPDIR": ray_root}
    proc = subprocess.Popen(
        args, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 180
    while count_entries(run_dir) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, f"the driver ended before it could be killed: {proc.stderr.read()}"
    process_tree_kill(proc)
    shutil.rmtree(ray_root, ignore_errors=True)  # a SIGKILLed driver cannot remove its Ray dir
    ray_root = tempfile.mkdtemp(prefix="pbt-", dir="/tmp")
    env["PUFFERBOX_RAY_TMPDIR"] = ray_root
    before = {e.id: e.score for e in Leaderboard(run_dir, capacity=8).entries(on_board_only=False)}
    assert len(before) >= 2

    resumed = subprocess.run(
        [*PUFFERBOX, "tournament", "--resume", "--run-dir", str(run_dir), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert summary["total_steps"] >= total
    assert 0.0 <= summary["overhead"] < 1.0, "pod time of the killed session was counted while it ran"
    shutil.rmtree(ray_root, ignore_errors=True)
    after = {e.id: e.score for e in Leaderboard(run_dir, capacity=8).entries(on_board_only=False)}
    assert all(after[i] == s for i, s in before.items()), "entries written before the kill survived unchanged"
    # At most the slices in flight (one per pod) were lost: every finished slice is on record,
    # as an entry or (for a slice stopped because it lagged) in the truncated count.
    truncated = Leaderboard(run_dir).get_state("progress")["truncated"]
    assert (len(after) + truncated) * SLICE >= total
    assert_board_consistent(run_dir)


def test_resume_and_budget_errors_are_one_line(tmp_path):
    out = subprocess.run(
        [*PUFFERBOX, "tournament", "--resume", "--run-dir", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"Error: --resume {tmp_path}: no leaderboard.sqlite there; start a tournament without --resume"
    ]
    out = subprocess.run([*PUFFERBOX, "tournament", "cartpole"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "exactly one budget" in out.stderr
