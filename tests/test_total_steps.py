"""``--total-steps`` is the budget a run trains, not a number rounded up to whole rollouts.

The last rollout is cut short so a run stops at ``total_steps``; a budget that is not a multiple of
the agent rows stepped together ends within one step per row, and says so before training.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pufferbox.cuda.hostsim import find_cxx
from pufferbox.registry import get_registry
from pufferbox.train.config import resolve_config
from pufferbox.train.runner import run
from pufferbox.train.trainer import Trainer


def cartpole(*overrides: str) -> dict:
    return resolve_config(
        get_registry().get("cartpole").training.config,
        overrides=[
            "vec.num_envs=4",
            "train.num_steps=128",
            "train.checkpoint_interval=0",
            "policy.hidden_size=16",
            *overrides,
        ],
    )


def test_a_budget_between_rollouts_ends_exactly_with_a_short_last_rollout():
    trainer = Trainer("cartpole", cartpole("train.total_steps=1100"))  # 2 whole rollouts of 512, then 76
    try:
        assert trainer.planned_steps() == 1100
        result = trainer.train()
        steps = [m["global_step"] for m in trainer.history]
        assert steps == [512, 1024, 1100] and result.global_step == 1100
        assert np.isfinite(trainer.history[-1]["policy_loss"])
    finally:
        trainer.close()


def test_the_rollout_after_a_short_one_continues_where_it_stopped():
    """A short rollout's last obs starts the next rollout (as after a whole one): train_steps can go on."""
    trainer = Trainer("cartpole", cartpole("train.total_steps=600"))
    try:
        trainer.train()
        assert trainer.global_step == 600
        last_obs = trainer.collector.rollout.np_obs[:4, 0].copy()  # carried from slot 22 of the short rollout
        batch = trainer.collector.collect().batch
        np.testing.assert_array_equal(batch["obs"][:, 0].numpy(), last_obs)
        assert batch["obs"].shape[1] == 129
    finally:
        trainer.close()


def test_a_budget_that_is_not_a_multiple_of_the_rows_is_announced(tmp_path, capsys):
    result = run(
        "cartpole",
        overrides=["vec.num_envs=4", "train.num_steps=128", "train.total_steps=1101", "policy.hidden_size=16"],
        run_dir=tmp_path / "r",
        dashboard=False,
        tensorboard=False,
    )
    out = capsys.readouterr().out
    assert "train.total_steps=1,101 is not a multiple of the 4 agent rows" in out and "ends at 1,104" in out
    assert result.global_step == 1104
    metrics = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1]["global_step"] == 1104


def test_an_exact_budget_prints_no_note(tmp_path, capsys):
    run(
        "cartpole",
        overrides=["vec.num_envs=4", "train.num_steps=128", "train.total_steps=1100", "policy.hidden_size=16"],
        run_dir=tmp_path / "r",
        dashboard=False,
        tensorboard=False,
    )
    assert "note:" not in capsys.readouterr().out


@pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler to build kernels for the host")
def test_the_device_collector_stops_at_the_budget_too():
    cfg = resolve_config(
        get_registry().get("cuda_cartpole").training.config,
        overrides=[
            "vec.backend=cuda",
            "vec.device=host",
            "vec.num_envs=8",
            "train.num_steps=16",
            "train.checkpoint_interval=0",
            "policy.hidden_size=16",
            "train.total_steps=168",
        ],
    )  # one rollout of 128, then 5 steps per env
    trainer = Trainer("cuda_cartpole", cfg)
    try:
        trainer.train()
        assert [m["global_step"] for m in trainer.history] == [128, 168]
        assert np.isfinite(trainer.history[-1]["value_loss"])
        got = trainer.collector.collect()  # and a whole rollout can follow the short one
        assert got.steps == 128 and got.batch["obs"].shape[1] == 17
    finally:
        trainer.close()
