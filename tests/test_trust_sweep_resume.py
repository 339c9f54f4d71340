"""Sweeps continued or stopped (issue 54, defect 13): a continued sweep keeps its fixed settings (another
`--set` is one line), and SIGTERM ends the sweep with 143 as it ends `train`."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

pytest.importorskip("optuna", reason="optuna is the pufferbox[sweep] extra")

from pufferbox.cli import cli, load_commands

TINY = ["--set", "vec.num_envs=8", "--set", "train.checkpoint_interval=0"]


def test_continuing_a_sweep_with_other_fixed_settings_is_one_line(tmp_path):
    """Before: the second command replaced the sweep's fixed budget, one study mixing two budgets."""
    load_commands()
    run_dir = tmp_path / "sw"
    args = ["sweep", "cartpole", "--trials", "1", "--run-dir", str(run_dir), "--pruner", "none", *TINY]
    first = CliRunner().invoke(cli, [*args, "--set", "train.total_steps=1024"])
    assert first.exit_code == 0, first.output
    before = (run_dir / "sweep.toml").read_text()
    again = CliRunner().invoke(cli, [*args[:3], "2", *args[4:], "--set", "train.total_steps=4096"])
    assert again.exit_code == 2, again.output
    lines = again.output.strip().splitlines()
    assert len(lines) == 1 and "this sweep fixes" in lines[0] and "--set train.total_steps=1024" in lines[0], lines
    assert (run_dir / "sweep.toml").read_text() == before and not (run_dir / "trials" / "1").exists()


@pytest.mark.timeout(240)
def test_sigterm_ends_a_sweep_with_143(tmp_path):
    """Before: the trial stopped and saved, but the sweep exited 0."""
    run_dir = tmp_path / "sw"
    cmd = [sys.executable, "-m", "pufferbox", "sweep", "cartpole", "--trials", "3", "--run-dir", str(run_dir)]
    cmd += ["--pruner", "none", *TINY, "--set", "train.total_steps=2000000", "--set", "train.stop_on_solve=false"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    metrics, deadline = run_dir / "trials" / "0" / "metrics.jsonl", time.time() + 120
    while not (metrics.is_file() and metrics.read_text()) and time.time() < deadline:  # training, not starting
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, output
    assert "trial 0: interrupted" in output and "Traceback" not in output
    assert not (run_dir / "trials" / "1").exists()


def test_tournament_resume_takes_a_new_budget_and_records_it(tmp_path):
    """Before: `tournament --resume --total-steps N` ran on with the recorded budget, ignoring N."""
    from pufferbox.tournament.leaderboard import Leaderboard
    from pufferbox.tournament.orchestrator import reopen
    from pufferbox.tournament.settings import TournamentSettings
    from pufferbox.tournament.state import Progress
    from pufferbox.train.config import resolve_run_config

    board = Leaderboard(tmp_path, capacity=8, keep_recent=2)
    recorded = TournamentSettings(env="cartpole", pods=2, total_steps=1000)
    board.start(recorded.as_dict(), resolve_run_config().to_dict(), Progress().as_dict())
    board.close()
    for asked, expected in [(TournamentSettings(total_steps=5000), 5000), (TournamentSettings(), 5000)]:
        board, settings, _ = reopen(tmp_path, asked)
        board.close()
        assert settings.total_steps == expected and settings.pods == 2  # the rest stays as recorded
    board, settings, _ = reopen(tmp_path, TournamentSettings(hours=0.5))
    board.close()
    assert settings.hours == 0.5 and settings.total_steps is None
