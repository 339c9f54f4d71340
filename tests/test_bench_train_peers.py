"""benchmarks/bench_train_peers.py: what it computes from the trainers' logs, and its errors (no training here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_train_peers as bench
import peer_venvs


def test_steady_sps_excludes_the_first_update():
    # the first update took 10 s (start-up, first calls); the next two took 1 s each
    run = bench.Run(marks=[(1024, 10.0), (2048, 11.0), (3072, 12.0)])
    assert run.steady_sps() == pytest.approx(1024.0)
    assert bench.Run(marks=[(1024, 10.0)]).steady_sps() is None  # one update: no steady state to report


def test_final_return_uses_the_last_quarter_of_the_budget():
    run = bench.Run(episodes=[(100, 50.0), (700, 1.0), (800, 3.0), (1000, 5.0)])
    assert run.final_return(1000) == (pytest.approx(4.0), 2)
    assert bench.Run().final_return(1000) == (None, 0)


def test_curve_splits_the_episodes_into_quarters_of_the_budget():
    run = bench.Run(episodes=[(100, 50.0), (250, 10.0), (251, 2.0), (800, 3.0), (1000, 5.0), (1100, 7.0)])
    # step 250 ends the first quarter; episodes past the budget (the last update overshoots) count in the last
    assert run.curve(1000) == [(30.0, 2), (2.0, 1), (None, 0), (5.0, 3)]


def test_budgets_per_env_and_unknown_env():
    assert bench.parse_budgets(["nethack=4096"], ["nethack", "breakout"]) == {"nethack": 4096, "breakout": 20_000}
    assert bench.parse_budgets(["3000"], ["bigfish"]) == {"bigfish": 3000}
    with pytest.raises(SystemExit, match="Error: --budget pong=1: unknown env 'pong'"):
        bench.parse_budgets(["pong=1"], ["breakout"])


def test_missing_peer_venv_names_setup(tmp_path, monkeypatch):
    monkeypatch.setattr(peer_venvs, "PUFFERLIB_VENV", tmp_path / "pufferlib")
    with pytest.raises(SystemExit, match=r"Error: peer venv .*pufferlib is missing: run .*--setup"):
        bench.check_peers(["nethack"])


def test_pufferbox_arm_reads_metrics_and_phases(tmp_path, monkeypatch):
    """Phases are the cumulative timers' growth after update 1; the matched arm passes the peer's settings."""
    seen = {}

    def fake_run(cmd, cwd, env, log):
        seen["cmd"] = cmd
        run_dir = Path(cmd[cmd.index("--run-dir") + 1])
        run_dir.mkdir()
        rows = [
            {
                "global_step": 1024 * k,
                "wall_time": 5.0 + k,
                "episode_return": 2.0 * k,
                "episodes": k,
                "time_env": 0.5 * k,
                "time_inference": 1.0 * k,
                "time_learn": 3.0 * k,
            }
            for k in (1, 2, 3, 4)
        ]
        (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
        return [], 9.0

    monkeypatch.setattr(bench, "run_logged", fake_run)
    run = bench.run_pufferbox(bench.PEERS["breakout"], True, 1, 4096, None, tmp_path)
    assert run.steady_sps() == pytest.approx(1024.0)
    assert run.phases == pytest.approx({"env": 1.5, "inference": 3.0, "update": 9.0})
    assert run.final_return(4096) == (pytest.approx(8.0), 4)  # only update 4 (step 4096) is in the last quarter
    assert run.return_unit == "clipped, per life"  # no raw score in these metrics: not CleanRL's unit
    sets = [seen["cmd"][i + 1] for i, a in enumerate(seen["cmd"]) if a == "--set"]
    assert sets == [
        "vec.num_envs=8",
        "train.num_steps=128",
        "train.update_epochs=4",
        "train.num_minibatches=4",
        "train.learning_rate=0.00025",
    ]


def test_table_ratio_against_the_peer():
    rows = [
        {
            "env": "nethack",
            "arm": arm,
            "steady_sps": sps,
            "phases": None,
            "return_last_quarter": None,
            "episodes_last_quarter": 0,
            "load_before": [1.0],
            "load_after": [1.0],
        }
        for arm, sps in (("peer", 100.0), ("defaults", 250.0))
    ]
    text = bench.table(rows)
    assert "| nethack | pufferbox defaults | 250 | 2.50x | not reported | n/a (0) |" in text


def test_main_writes_the_table_it_prints(monkeypatch, capsys):
    """--write writes results/train_peers.json with the same rows as the table it prints."""
    import results

    written = {}

    def fake_arm(arm, peer, seed, budget, threads, work, pufferbox, parts):
        return {
            "env": peer.env,
            "arm": arm,
            "seed": seed,
            "steady_sps": 100.0 * seed,
            "phases": {"env": 1.0, "inference": 2.0, "update": 3.0},
            "return_last_quarter": 5.0,
            "episodes_last_quarter": 2,
            "return_unit": "NetHackScore",
            "load_before": [0.5],
            "load_after": [0.7],
        }

    monkeypatch.setattr(bench, "run_arm", fake_arm)
    monkeypatch.setattr(results, "write_table", lambda name, columns, rows, meta, **kw: written.update({name: rows}))
    monkeypatch.setattr(
        sys, "argv", ["bench_train_peers.py", "--envs", "nethack", "--arms", "defaults", "--seeds", "1", "3", "--write"]
    )
    bench.main()
    line = "| nethack | pufferbox defaults | 200 | n/a | 1.0 / 2.0 / 3.0 | 5.00 (4) | NetHackScore | 0.5→0.7, 0.5→0.7 |"
    assert line in capsys.readouterr().out
    assert written["train_peers"] == [line.strip("| ").split(" | ")]


def test_unknown_arm_is_an_error(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_train_peers.py", "--arms", "peer,fast"])
    with pytest.raises(SystemExit, match="Error: --arms: unknown fast"):
        bench.main()


def test_raw_game_scores_are_weighted_by_the_games_that_reported_them(tmp_path, monkeypatch):
    """With episodic life an update ends many lives but few games: the games count, not the lives."""

    def fake_run(cmd, cwd, env, log):
        run_dir = Path(cmd[cmd.index("--run-dir") + 1])
        run_dir.mkdir()
        rows = [
            {
                "global_step": 1024,
                "wall_time": 1.0,
                "episodes": 10,
                "episode_raw_episode_return": 4.0,
                "episodes_raw_episode_return": 1,
            },
            {
                "global_step": 2048,
                "wall_time": 2.0,
                "episodes": 10,
                "episode_raw_episode_return": 1.0,
                "episodes_raw_episode_return": 3,
            },
        ]
        (run_dir / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
        return [], 2.0

    monkeypatch.setattr(bench, "run_logged", fake_run)
    run = bench.run_pufferbox(bench.PEERS["breakout"], False, 1, 2048, None, tmp_path)
    assert run.return_unit == "raw game score"
    assert run.final_return(1024) == (pytest.approx(7.0 / 4), 4)  # 4 games, not 20 lives


def test_an_extra_arm_adds_its_settings_to_the_defaults(monkeypatch):
    seen = []
    monkeypatch.setattr(bench, "ARM_SETTINGS", dict(bench.ARM_SETTINGS))
    monkeypatch.setattr(bench, "run_arm", lambda arm, *args, **kw: seen.append((arm, bench.ARM_SETTINGS.get(arm))) or {})
    monkeypatch.setattr(bench, "table_rows", lambda results: [])
    argv = ["bench_train_peers.py", "--envs", "breakout", "--arms", "e2", "--arm", "e2=train.update_epochs=2,vec.num_envs=4"]
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    assert seen == [("e2", ("train.update_epochs=2", "vec.num_envs=4"))]
    monkeypatch.setattr(sys, "argv", ["bench_train_peers.py", "--arm", "e2"])
    with pytest.raises(SystemExit, match="Error: --arm e2: expected NAME=KEY=VALUE"):
        bench.main()


def test_keep_runs_in_the_named_directory_and_leaves_it(tmp_path, monkeypatch):
    """--keep: the runs' files stay where the user asked (long runs can be inspected while they go)."""
    seen = []

    def fake_arm(arm, peer, seed, budget, threads, work, pufferbox, parts):
        (work / f"{arm}-{seed}.log").write_text("trained")
        seen.append((work, parts))
        return {}

    monkeypatch.setattr(bench, "run_arm", fake_arm)
    monkeypatch.setattr(bench, "table_rows", lambda results: [])
    keep = tmp_path / "runs" / "bigfish-3M"
    argv = ["bench_train_peers.py", "--envs", "bigfish", "--arms", "defaults", "--keep", str(keep), "--parts", "10"]
    monkeypatch.setattr(sys, "argv", argv)
    bench.main()
    assert seen == [(keep, 10)]
    assert (keep / "defaults-1.log").read_text() == "trained"
    with pytest.raises(SystemExit, match="Error: --keep .*bigfish-3M: not empty; name a new or empty directory"):
        bench.main()  # a second run into the same directory would overwrite the first one's run dirs
    assert (keep / "defaults-1.log").read_text() == "trained"
    monkeypatch.setattr(sys, "argv", [*argv[:-4], "--keep", str(keep / "defaults-1.log")])
    with pytest.raises(SystemExit, match="Error: --keep .*defaults-1.log: is a file"):
        bench.main()


def test_parts_adds_a_finer_curve_to_the_row(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "run_cleanrl", lambda *a: bench.Run(episodes=[(100, 1.0), (600, 3.0), (1000, 5.0)]))
    row = bench.run_arm("peer", bench.PEERS["bigfish"], 1, 1000, None, tmp_path, parts=5)
    assert row["return_by_quarter"] == [(1.0, 1), (None, 0), (3.0, 1), (5.0, 1)]
    assert row["return_by_5ths"] == [(1.0, 1), (None, 0), (3.0, 1), (None, 0), (5.0, 1)]  # step 600 ends span 3
    assert "return_by_5ths" not in bench.run_arm("peer", bench.PEERS["bigfish"], 1, 1000, None, tmp_path)
    monkeypatch.setattr(sys, "argv", ["bench_train_peers.py", "--parts", "0"])
    with pytest.raises(SystemExit, match="Error: --parts 0: needs at least 1 span"):
        bench.main()
