"""A checkpoint is data: its embedded config can never make pufferbox import code; garbage is a one-line error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w
import torch
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.train.checkpoint import latest_checkpoint

QUICK = ["--num-envs", "4", "--set", "train.num_steps=32", "--set", "train.checkpoint_interval=2", "--no-tensorboard"]
MODULE = "pbx_marker_encoder"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    load_commands()
    run_dir = tmp_path_factory.mktemp("runs") / "cp"
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(run_dir), "--total-steps", "256", *QUICK])
    assert result.exit_code == 0, result.output
    return run_dir


@pytest.fixture
def hostile(tmp_path) -> tuple[dict, Path]:
    """A module whose import writes a marker file (and which is a working encoder, so trusting it works)."""
    lib, marker = tmp_path / "lib", tmp_path / "imported-by-pufferbox"
    lib.mkdir()
    (lib / f"{MODULE}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nfrom pufferbox.train.policies import MLPEncoder as Encoder\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{lib}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return env, marker


def pufferbox(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pufferbox", *args], capture_output=True, text=True, env=env, timeout=120)


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_eval_never_imports_an_encoder_named_only_by_the_checkpoint(trained, tmp_path, hostile):
    env, marker = hostile
    state = torch.load(latest_checkpoint(trained / "checkpoints"), weights_only=True)
    config = tomllib.loads(state["config"])
    config["policy"]["encoder"] = f"{MODULE}:Encoder"
    state["config"] = tomli_w.dumps(config)
    crafted = tmp_path / "ckpt-00000099.pt"
    torch.save(state, crafted)

    proc = pufferbox(env, "eval", "cartpole", "--checkpoint", str(crafted), "--episodes", "1")
    assert_one_line_error(proc, str(crafted), f"{MODULE}:Encoder", f"--encoder {MODULE}:Encoder")
    assert not marker.exists()

    proc = pufferbox(
        env, "eval", "cartpole", "--checkpoint", str(crafted), "--episodes", "1", "--encoder", f"{MODULE}:Encoder"
    )
    assert proc.returncode == 0, proc.stderr  # the user's explicit choice is honoured
    assert marker.exists()


def test_resume_never_imports_an_encoder_named_only_by_the_run_dir(trained, tmp_path, hostile):
    env, marker = hostile
    run_dir = tmp_path / "run"
    shutil.copytree(trained, run_dir)
    config = tomllib.loads((run_dir / "config.toml").read_text())
    config["policy"]["encoder"] = f"{MODULE}:Encoder"
    (run_dir / "config.toml").write_text(tomli_w.dumps(config))

    proc = pufferbox(env, "train", "--resume", str(run_dir), "--total-steps", "384")
    assert_one_line_error(proc, "config.toml", f"--set policy.encoder={MODULE}:Encoder")
    assert not marker.exists()

    proc = pufferbox(
        env, "train", "--resume", str(run_dir), "--total-steps", "384", "--set", f"policy.encoder={MODULE}:Encoder"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.exists()


def test_plugin_registered_encoders_are_trusted():
    from pufferbox.train.checkpoint import check_encoder_is_trusted, registered_encoders

    for name in registered_encoders():  # e.g. pufferbox_atari.policy:NatureCNN where installed
        check_encoder_is_trusted(name, "ckpt")
    check_encoder_is_trusted("cnn", "ckpt")


@pytest.mark.parametrize("content", [b"garbage bytes" * 300, b"hello\n", b""])
def test_eval_on_a_garbage_file_is_one_line_and_never_advises_weights_only_false(tmp_path, content):
    load_commands()
    path = tmp_path / "model.pt"
    path.write_bytes(content)
    result = CliRunner().invoke(cli, ["eval", "cartpole", "--checkpoint", str(path)])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert result.output.startswith(f"Error: {path}: not a loadable pufferbox checkpoint")
    assert "weights_only" not in result.output
