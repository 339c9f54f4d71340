"""Scripted opponents (issue 54): a run dir cannot make pufferbox import one (defect 2), and one that
misbehaves is named in one line (defect 3)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands

MODULE = "pbx_marker_opponent"
QUICK = ["--num-envs", "8", "--set", "train.num_steps=32", "--set", "train.checkpoint_interval=1", "--no-tensorboard"]


@pytest.fixture(scope="module")
def self_play_run(tmp_path_factory) -> Path:
    """A short ocean/connect4 self-play run with careless seats (and no scripted opponent)."""
    load_commands()
    run_dir = tmp_path_factory.mktemp("runs") / "c4"
    args = ["train", "ocean/connect4", "--run-dir", str(run_dir), "--total-steps", "512", *QUICK]
    result = CliRunner().invoke(cli, [*args, "--set", "league.random_opponent=0.5"])
    assert result.exit_code == 0, result.output
    return run_dir


def test_resume_never_imports_a_scripted_opponent_named_only_by_the_run_dir(self_play_run, tmp_path):
    lib, marker = tmp_path / "lib", tmp_path / "imported-by-pufferbox"
    lib.mkdir()
    (lib / f"{MODULE}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n\ndef move(obs, legal, rng):\n    return legal.argmax(1)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{lib}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run_dir = tmp_path / "run"
    shutil.copytree(self_play_run, run_dir)
    config = tomllib.loads((run_dir / "config.toml").read_text())
    config["league"]["scripted_opponent"] = f"{MODULE}:move"
    (run_dir / "config.toml").write_text(tomli_w.dumps(config))
    before = sorted(p.name for p in (run_dir / "checkpoints").iterdir())

    def resume(*extra: str) -> subprocess.CompletedProcess:
        args = [sys.executable, "-m", "pufferbox", "train", "--resume", str(run_dir), "--total-steps", "768", *extra]
        return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)

    proc = resume()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "config.toml" in lines[0] and f"--set league.scripted_opponent={MODULE}:move" in lines[0]
    assert not marker.exists()
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == before  # nothing lost

    proc = resume("--set", f"league.scripted_opponent={MODULE}:move")  # the user's own choice is trusted
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.exists()


def too_few(observations, legal, rng):
    """Another game's tactic: one move for the first row only."""
    return np.zeros(1, np.int64)


def off_the_board(observations, legal, rng):
    """Always a masked-out move: the first illegal one of each row (or a move past the last choice)."""
    return np.where((~legal).any(1), (~legal).argmax(1), legal.shape[1])


@pytest.mark.parametrize(
    "function, needle",
    [
        ("os:system", "league.scripted_opponent='os:system' raised TypeError"),
        (f"{__name__}:too_few", f"league.scripted_opponent='{__name__}:too_few' returned shape (1,), dtype int64"),
    ],
    ids=["raises", "wrong-shape"],
)
def test_a_scripted_opponent_that_raises_or_returns_the_wrong_shape_is_one_line(tmp_path, function, needle):
    load_commands()
    run_dir = tmp_path / "c4"
    args = ["train", "ocean/connect4", "--run-dir", str(run_dir), "--total-steps", "512", *QUICK]
    args += ["--set", "league.random_opponent=0.5", "--set", "league.scripted_share=1"]
    result = CliRunner().invoke(cli, [*args, "--set", f'league.scripted_opponent="{function}"'])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and needle in errors[0] and "Traceback" not in result.output, result.output


def test_a_scripted_opponents_illegal_moves_are_replaced_by_legal_ones_and_said_once(capsys):
    from gymnasium import spaces

    from pufferbox.spaces import ActionSpec, ObservationSpec
    from pufferbox.train.scripted_seats import ScriptedSeats

    obs_spec = ObservationSpec(
        spaces.Dict({"board": spaces.Box(0, 9, (2,), np.float32), "action_mask": spaces.Box(0, 1, (4,), np.int8)})
    )
    one = obs_spec.flatten({"board": np.zeros(2, np.float32), "action_mask": np.array([1, 0, 1, 0], np.int8)})
    obs = np.repeat(one[None], 40, axis=0)
    seats = ScriptedSeats(off_the_board, 1.0, 1.0, np.array([0, 1]), 20, obs_spec, ActionSpec(spaces.Discrete(4)), 0)
    for step in range(3):
        actions = np.full(40, 3)
        masks = seats.apply(np.arange(40), obs, np.full(40, step == 0), actions, np.ones(40, bool))
        assert set(actions[~masks].tolist()) <= {0, 2} and (~masks).sum() == 20  # legal moves only
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "illegal (masked-out) moves" in err and "off_the_board" in err
