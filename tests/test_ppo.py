"""PPO: GAE along rows, padded agents excluded from every loss, pools, learning on short budgets."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from pufferbox.registry import get_registry
from pufferbox.train.config import resolve_config
from pufferbox.train.ppo import Trainer
from pufferbox.vector.testenvs import env_spec_for


def config(env: str | None = None, *overrides: str) -> dict:
    defaults = get_registry().get(env).defaults if env else {}
    return resolve_config(defaults, overrides=["train.checkpoint_interval=0", *overrides])


def test_gae_runs_along_each_rows_own_time_axis():
    trainer = Trainer("cartpole", config("cartpole", "vec.num_envs=2", "train.num_steps=4",
                                         "train.gamma=0.9", "train.gae_lambda=0.8"))
    ro = trainer.rollout
    rng = np.random.default_rng(0)
    ro.np_rewards[:, :5] = rng.normal(size=(2, 5))
    ro.np_values[:, :5] = rng.normal(size=(2, 5))
    ro.np_starts[:, :5] = [[True, False, True, False, False], [False, False, False, True, True]]
    adv, returns = trainer.advantages(np.arange(2))
    for row in range(2):
        last, expected = 0.0, np.zeros(4)
        for t in reversed(range(4)):
            nonterminal = 1.0 - ro.np_starts[row, t + 1]
            delta = ro.np_rewards[row, t] + 0.9 * ro.np_values[row, t + 1] * nonterminal - ro.np_values[row, t]
            last = delta + 0.9 * 0.8 * nonterminal * last
            expected[t] = last
        np.testing.assert_allclose(adv[row].numpy(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(returns, adv + ro.values[:, :4])
    trainer.close()


@pytest.mark.parametrize("lstm", [False, True], ids=["mlp", "lstm"])
def test_padded_agent_slots_do_not_touch_the_update(lstm):
    """Garbage in masked (padded) slots must leave the gradient step and its statistics unchanged."""
    cfg = config(None, "vec.num_envs=4", "train.num_steps=24", f"policy.lstm={str(lstm).lower()}",
                 "policy.hidden_size=16")
    trainer = Trainer(env_spec_for("countdown"), cfg)
    segs = trainer.collect()
    ro = trainer.rollout
    assert len(segs) == 12  # 4 envs x 3 agent slots, one segment each
    masked = ~ro.np_masks[segs]
    assert masked.any() and (~masked).any(), "countdown agents leave early: some slots must be padding"
    snapshot = (copy.deepcopy(trainer.agent.state_dict()), copy.deepcopy(trainer.optimizer.state_dict()),
                trainer.generator.get_state())
    saved = [arr.copy() for arr in ro.arrays()]

    def learn() -> tuple[dict, dict]:
        trainer.agent.load_state_dict(snapshot[0])
        trainer.optimizer.load_state_dict(snapshot[1])
        trainer.generator.set_state(snapshot[2])
        stats = trainer.learn(segs)
        return stats, copy.deepcopy(trainer.agent.state_dict())

    clean_stats, clean_params = learn()
    rng = np.random.default_rng(1)
    rows, ts = np.nonzero(masked)
    rows = segs[rows]
    ro.np_obs[rows, ts] = rng.normal(scale=1e3, size=ro.np_obs[rows, ts].shape)
    ro.np_rewards[rows, ts] = rng.normal(scale=1e3, size=len(rows))
    ro.np_values[rows, ts] = rng.normal(scale=1e3, size=len(rows))
    ro.np_logprobs[rows, ts] = rng.normal(scale=10, size=len(rows))
    ro.np_actions[rows, ts] = rng.integers(0, 3, size=len(rows))
    dirty_stats, dirty_params = learn()
    for name in clean_params:
        torch.testing.assert_close(clean_params[name], dirty_params[name], msg=name)
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "explained_variance"):
        assert clean_stats[key] == pytest.approx(dirty_stats[key], rel=1e-5, abs=1e-6), key
    for arr, before in zip(ro.arrays(), saved):  # sanity: the corruption really happened
        if arr is ro.np_rewards:
            assert not np.array_equal(arr, before)
    trainer.close()


def test_async_pool_fills_rows_by_env_id():
    cfg = config("cartpole", "vec.backend=multiprocessing", "vec.native=false", "vec.num_envs=4",
                 "vec.num_workers=2", "vec.batch_size=2", "train.num_steps=16")
    try:
        trainer = Trainer("cartpole", cfg)
    except Exception as exc:  # the pool backend is another module; say why it is not tested here
        pytest.skip(f"multiprocessing backend unavailable: {exc}")
    try:
        history = trainer.train_steps(3 * 4 * 16)
        trained = np.diff([0] + [m["global_step"] for m in history])
        assert len(history) == 3 and all(n >= 4 * 16 and n % 16 == 0 for n in trained), trained
        assert all(np.isfinite(m["value_loss"]) for m in history)
        assert trainer.history[-1]["episodes"] >= 0
    finally:
        trainer.close()


@pytest.mark.parametrize("env, overrides", [
    ("spaces", ["train.total_steps=4096"]),  # Dict observation, MultiDiscrete/Box actions per the ocean plugin
    ("multiagent", ["train.total_steps=4096"]),
])
def test_trains_on_other_spaces(env, overrides):
    try:
        spec = get_registry().get(env)
    except KeyError:
        pytest.skip(f"{env} (ocean plugin) is not installed")
    trainer = Trainer(spec, config(env, "vec.num_envs=8", "train.num_steps=32", *overrides))
    history = trainer.train_steps(4096)
    assert history[-1]["global_step"] >= 4096 and np.isfinite(history[-1]["policy_loss"])
    trainer.close()


def test_cartpole_learns_on_a_short_budget():
    """Default cartpole settings; random play scores about 22, the budget is well short of solving."""
    trainer = Trainer("cartpole", config("cartpole", "train.seed=3"))
    trainer.train_steps(80_000)
    assert trainer.result().episode_return > 100, trainer.history[-1]
    trainer.close()


@pytest.mark.slow
def test_compiled_policy_trains():
    """--compile (torch.compile of act/evaluate) runs PPO updates; compiling takes ~25 s on 2 cores."""
    trainer = Trainer("cartpole", config("cartpole", "train.compile=true", "vec.num_envs=8", "train.num_steps=16"))
    history = trainer.train_steps(2 * 8 * 16)
    assert history[-1]["global_step"] == 256 and np.isfinite(history[-1]["policy_loss"])
    trainer.close()
