"""``--plugin`` on ``pufferbox sweep`` and ``pufferbox tournament`` (issue 38, defect 1): the stranger
(tests/plugins/aadup_plugin) offers a ``cartpole`` whose episodes end after 5 steps, refused by default
for pufferbox-classic's; ``--plugin aadup-envs`` trains the stranger's, the choice is recorded, and a
continued sweep or resumed tournament trains the same env without the flag."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.registry import get_registry

_helper = importlib.util.spec_from_file_location("plugin_dists", Path(__file__).parent / "plugins" / "plugin_dists.py")
plugin_dists = importlib.util.module_from_spec(_helper)
_helper.loader.exec_module(plugin_dists)

TINY = ["vec.num_envs=4", "train.num_steps=16", "train.checkpoint_interval=0", "policy.hidden_size=16"]
SETS = [arg for setting in TINY for arg in ("--set", setting)]

pytestmark = pytest.mark.usefixtures("fresh_registry")  # tests/conftest.py


@pytest.fixture
def stranger(tmp_path, monkeypatch, request) -> Path:
    """The stranger installed for this test (in this process and, through PYTHONPATH, in the ones it starts)."""
    monkeypatch.delenv("PUFFERBOX_PREFER", raising=False)  # restored after the test (--plugin sets it)
    monkeypatch.setenv("PUFFERBOX_PLUGINS", "aadup,classic")
    plugin_dists.install("aadup_plugin", tmp_path, monkeypatch, request)
    load_commands()
    return tmp_path / "site-aadup_plugin"


def forget_preference(monkeypatch) -> None:
    """What a later command without ``--plugin`` sees: no preference, a freshly loaded registry."""
    monkeypatch.delenv("PUFFERBOX_PREFER", raising=False)
    get_registry.cache_clear()


def longest_episode(trial_dir: Path) -> float:
    rows = [json.loads(line) for line in (trial_dir / "metrics.jsonl").read_text().splitlines()]
    return max(row["episode_length"] for row in rows if row.get("episode_length") is not None)


def sweep(*args: str):
    return CliRunner().invoke(cli, ["sweep", "cartpole", "--pruner", "none", "--objective", "return", *args, *SETS])


def test_sweep_plugin_trains_the_strangers_env_and_a_continued_sweep_keeps_it(stranger, monkeypatch, tmp_path):
    pytest.importorskip("optuna", reason="optuna is the pufferbox[sweep] extra")
    run_dir = tmp_path / "sw"
    common = ["--run-dir", str(run_dir), "--set", "train.total_steps=256"]
    result = sweep("--trials", "1", "--plugin", "aadup-envs", *common)
    assert result.exit_code == 0, result.output
    assert tomllib.loads((run_dir / "sweep.toml").read_text())["distribution"] == "aadup-envs"
    assert longest_episode(run_dir / "trials" / "0") <= 5  # the stranger's CartPole; classic's lasts longer

    forget_preference(monkeypatch)  # continued without --plugin: sweep.toml says whose env it is
    result = sweep("--trials", "2", *common)
    assert result.exit_code == 0, result.output
    trial = run_dir / "trials" / "1"
    assert tomllib.loads((trial / "config.toml").read_text())["run"]["distribution"] == "aadup-envs"
    assert longest_episode(trial) <= 5

    forget_preference(monkeypatch)
    result = sweep("--trials", "3", "--plugin", "pufferbox-classic", *common)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "this sweep has distribution 'aadup-envs', not 'pufferbox-classic'" in result.output
    assert not (run_dir / "trials" / "2").exists()


def test_sweep_plugin_that_does_not_offer_the_env_is_one_line(stranger, tmp_path):
    pytest.importorskip("optuna", reason="optuna is the pufferbox[sweep] extra")
    result = CliRunner().invoke(cli, ["sweep", "pendulum", "--plugin", "aadup-envs", "--run-dir", str(tmp_path / "x")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert result.output.startswith("Error: plugin 'aadup-envs' offers no env 'pendulum'")
    assert not (tmp_path / "x").exists()


def recorded_board(run_dir: Path, plugin: str) -> None:
    """A tournament board as a start with ``--plugin PLUGIN`` records it (no Ray needed to refuse a resume)."""
    from pufferbox.tournament.leaderboard import Leaderboard
    from pufferbox.tournament.settings import TournamentSettings
    from pufferbox.tournament.state import Progress

    settings = TournamentSettings("cartpole", pods=1, total_steps=256, slice_steps=128, plugin=plugin)
    board = Leaderboard(run_dir)
    board.start(settings.as_dict(), {"train": {}, "vec": {"num_envs": 4}}, Progress().as_dict())
    board.close()


def test_tournament_resume_with_another_plugin_is_refused_in_one_line(stranger, tmp_path):
    run_dir = tmp_path / "t"
    recorded_board(run_dir, "aadup-envs")
    result = CliRunner().invoke(cli, ["tournament", "--resume", "--run-dir", str(run_dir), "--plugin", "pufferbox-classic"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "this tournament trains cartpole from aadup-envs, not from pufferbox-classic" in result.output


def tournament(args: list[str], env: dict) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "pufferbox", "tournament", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def scores(run_dir: Path) -> dict[int, float]:
    from pufferbox.tournament.leaderboard import Leaderboard

    board = Leaderboard.open_read_only(run_dir)
    try:
        return {e.id: e.score for e in board.entries(on_board_only=False)}
    finally:
        board.close()


@pytest.mark.slow
def test_tournament_plugin_trains_the_strangers_env_and_resume_keeps_it(stranger, tmp_path):
    """Pods are Ray actors in other processes: they find the stranger through PYTHONPATH, and train the
    recorded plugin's env whatever their registry prefers."""
    pytest.importorskip("ray", reason="the tournament runs on Ray (pip install 'pufferbox[ray]')")
    from pufferbox.tournament.leaderboard import Leaderboard

    run_dir, source = tmp_path / "t", Path(__file__).parent / "plugins" / "aadup_plugin"
    ray_root = tempfile.mkdtemp(prefix="pbt-", dir="/tmp")  # short (socket paths) and ours to delete
    env = {k: v for k, v in os.environ.items() if k != "PUFFERBOX_PREFER"}
    env |= {"PYTHONPATH": os.pathsep.join([str(stranger), str(source)]), "RAY_ADDRESS": "", "PUFFERBOX_RAY_TMPDIR": ray_root}
    try:
        budget = ["--pods", "1", "--total-steps", "128", "--slice-steps", "64", "--first-slice-steps", "64"]
        first = [*budget, "--eval-episodes", "4", "--truncate-below", "0", "--run-dir", str(run_dir)]
        tournament(["cartpole", "--plugin", "aadup-envs", *first, *SETS], env)
        board = Leaderboard(run_dir)
        settings = board.get_state("settings")
        assert settings["plugin"] == "aadup-envs"
        board.set_state("settings", {**settings, "total_steps": 256})  # room for more slices on resume
        board.close()
        before = scores(run_dir)
        assert before and all(score <= 5 for score in before.values()), before  # the stranger's 5-step episodes

        tournament(["--resume", "--run-dir", str(run_dir)], env)  # no --plugin, no PUFFERBOX_PREFER
        after = scores(run_dir)
        assert len(after) > len(before) and all(score <= 5 for score in after.values()), after
    finally:
        shutil.rmtree(ray_root, ignore_errors=True)
