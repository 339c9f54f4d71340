"""Damaged checkpoints (issue 38, defect 9): a truncated newest checkpoint is skipped with a warning
naming it, and a run whose every checkpoint is unreadable says so (not "every one holds NaN/inf")."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.train.checkpoint import list_checkpoints

QUICK = ["--num-envs", "4", "--set", "train.num_steps=32", "--set", "train.checkpoint_interval=2", "--no-tensorboard"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    load_commands()
    run_dir = tmp_path_factory.mktemp("runs") / "done"
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(run_dir), "--total-steps", "1024", *QUICK])
    assert result.exit_code == 0, result.output
    assert len(list_checkpoints(run_dir / "checkpoints")) == 3
    return run_dir


def copy_with(finished: Path, where: Path, damage: dict[int, str]) -> tuple[Path, list[Path]]:
    """A copy of the run whose checkpoints (by index, oldest first) are ``truncated`` or ``poisoned``."""
    run_dir = where / "run"
    shutil.copytree(finished, run_dir)
    ckpts = list_checkpoints(run_dir / "checkpoints")
    for index, how in damage.items():
        if how == "truncated":
            data = ckpts[index].read_bytes()
            ckpts[index].write_bytes(data[: len(data) // 3])
        else:
            state = torch.load(ckpts[index], weights_only=True)
            next(iter(state["model"].values())).fill_(math.inf)
            torch.save(state, ckpts[index])
    return run_dir, ckpts


def test_a_truncated_newest_checkpoint_is_skipped_with_a_warning_naming_it(finished, tmp_path):
    run_dir, ckpts = copy_with(finished, tmp_path, {2: "truncated"})
    result = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--total-steps", "1280", "--no-tensorboard"])
    assert result.exit_code == 0, result.output
    warning = f"warning: {ckpts[2]}: skipped (unreadable: truncated or corrupt); using {ckpts[1].name}"
    assert result.stderr.strip().splitlines() == [warning]
    shutil.copytree(finished, tmp_path / "run2")
    newest = list_checkpoints(tmp_path / "run2" / "checkpoints")[-1]
    newest.write_bytes(newest.read_bytes()[:100])
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(tmp_path / "run2"), "--episodes", "1"])
    assert result.exit_code == 0, result.output
    assert f"warning: {newest}: skipped (unreadable: truncated or corrupt)" in result.stderr


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ({0: "truncated", 1: "truncated", 2: "truncated"}, "3 unreadable: truncated or corrupt"),
        ({0: "poisoned", 1: "truncated", 2: "truncated"}, "2 unreadable: truncated or corrupt; 1 with NaN/inf weights"),
    ],
    ids=["all-unreadable", "unreadable-and-poisoned"],
)
def test_no_usable_checkpoint_says_why_for_resume_and_eval(finished, tmp_path, damage, reason):
    run_dir, _ = copy_with(finished, tmp_path, damage)
    expected = f"Error: {run_dir / 'checkpoints'}: no usable checkpoint ({reason}); start a new run"
    result = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--total-steps", "1280"])
    assert result.exit_code == 2 and result.stderr.strip() == expected, result.output
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(run_dir), "--episodes", "1"])
    assert result.exit_code == 2 and result.stderr.strip() == expected, result.output
