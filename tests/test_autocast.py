"""``train.autocast = "bf16"``: the update's forward passes in bfloat16, the losses, weights and Adam in float32."""

from __future__ import annotations

import copy

import pytest
import torch
from click.testing import CliRunner
from tiny import tiny_agent, tiny_batch

from pufferbox.cli import cli, load_commands
from pufferbox.train.config import TrainConfig
from pufferbox.train.learner import Learner


def updated(autocast: str) -> tuple[dict[str, float], torch.nn.Module]:
    agent = tiny_agent(seed=3)
    torch.manual_seed(0)
    batch = tiny_batch(segments=8, horizon=16)
    metrics = Learner(agent, TrainConfig(autocast=autocast, update_epochs=2, num_minibatches=2), seed=1).update(batch)
    return metrics, agent


def test_bf16_update_stays_float32_and_close_to_the_float32_update():
    before = copy.deepcopy(tiny_agent(seed=3))
    full, full_agent = updated("none")
    low, low_agent = updated("bf16")
    assert all(p.dtype == torch.float32 for p in low_agent.parameters())  # weights (and Adam's moments) stay float32
    assert low["nonfinite_updates"] == 0 and all(torch.isfinite(torch.tensor(v)) for v in low.values())
    for name, p in low_agent.named_parameters():
        moved = (p - dict(before.named_parameters())[name]).abs().max()
        assert moved > 0, f"{name} did not learn under bf16"
    # the same step, up to bfloat16's 8-bit mantissa in the forward pass
    assert low["policy_loss"] == pytest.approx(full["policy_loss"], abs=0.02)
    assert low["value_loss"] == pytest.approx(full["value_loss"], rel=0.05)
    drift = max((a - b).abs().max().item() for a, b in zip(low_agent.parameters(), full_agent.parameters()))
    assert drift < 5e-3


def test_autocast_choices_are_checked(tmp_path):
    load_commands()
    result = CliRunner().invoke(cli, ["train", "cartpole", "--set", "train.autocast=fp16", "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "train.autocast" in result.output and "bf16" in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_cartpole_learns_with_bf16(tmp_path):
    load_commands()
    run = tmp_path / "run"
    args = ["train", "cartpole", "--run-dir", str(run), "--total-steps", "40960", "--set", "train.autocast=bf16"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    import json

    returns = [json.loads(line).get("episode_return") for line in (run / "metrics.jsonl").read_text().splitlines()]
    returns = [r for r in returns if r is not None]
    assert returns[-1] > 2 * returns[0], returns  # CartPole's return doubles within 40k steps, as in float32
