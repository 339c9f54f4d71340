"""Scripted opponents (issue 54): a run dir cannot make pufferbox import one (defect 2), and one that
misbehaves is named in one line (defect 3)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

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
