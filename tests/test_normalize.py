"""Observation/reward normalization: statistics match numpy, only float leaves change, checkpoints carry
the statistics to --resume and eval, and normalized PPO still learns CartPole."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from pufferbox.registry import get_registry
from pufferbox.spaces import ObservationSpec
from pufferbox.train.config import ConfigError, resolve_config
from pufferbox.train.evaluate import evaluate
from pufferbox.train.normalize import Normalizer, RewardScaler, RunningMeanStd
from pufferbox.train.trainer import Trainer


def test_running_stats_match_numpy_over_batches():
    data = np.random.default_rng(0).normal(3.0, 2.0, size=(1000, 3))
    stats = RunningMeanStd((3,), epsilon=0.0)
    for chunk in np.array_split(data, 7):
        stats.update(chunk)
    np.testing.assert_allclose(stats.mean, data.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(stats.var, data.var(axis=0), rtol=1e-10)


def test_pooled_learners_hold_the_statistics_of_one_normalizer_fed_every_row():
    spec, rng = ObservationSpec(spaces.Box(-50, 50, (3,))), np.random.default_rng(1)
    make = lambda rows: Normalizer(spec, rows, obs=True, reward=True, gamma=0.9)
    whole, learners = make(8), [make(4), make(4)]  # learner r's rows are the whole's rows 4r..4r+3
    warm = rng.normal(10.0, 3.0, (8, 3)).astype(np.float32)  # the statistics all three start from
    for norm in (whole, *learners):
        norm.observe(warm)
    before = whole.state_dict()
    for _ in range(3):
        for rank, (norm, loc) in enumerate(zip(learners, (-20.0, 40.0))):  # different data on each learner
            obs, rewards = rng.normal(loc, 3.0, (4, 3)).astype(np.float32), rng.normal(1.0, 2.0, 4).astype(np.float32)
            for target, rows in ((norm, np.arange(4)), (whole, np.arange(4) + 4 * rank)):
                target.observe(obs)
                target.scale(rewards, rows, np.zeros(4, bool))
    added = []  # what each learner contributes to the all-reduce
    for norm in learners:
        probe = make(4)
        probe.load_state_dict(norm.state_dict())
        probe.pool(before, lambda moments: added.append(moments) or moments)
    for norm in learners:
        norm.pool(before, lambda _: added[0] + added[1])
    assert set(whole.state_dict()) == {f"obs.0.{k}" for k in ("mean", "var", "count")} | {
        f"reward.{k}" for k in ("mean", "var", "count")
    }
    for norm in learners:
        for key, value in whole.state_dict().items():
            np.testing.assert_allclose(norm.state_dict()[key].numpy(), value.numpy(), rtol=1e-9, err_msg=key)
    assert not np.allclose(whole.state_dict()["obs.0.mean"].numpy(), before["obs.0.mean"].numpy())


def test_reward_scale_is_std_of_discounted_return_reset_at_episode_start():
    scaler = RewardScaler(num_rows=2, gamma=0.5, clip=100.0)
    scaler.stats.count = 0.0
    seen = []
    returns = np.zeros(2)
    for t in range(6):
        rewards = np.array([1.0, 2.0])
        scaler(rewards, np.arange(2))
        returns = returns * 0.5 + rewards
        seen.extend(returns.tolist())
        if t == 2:  # row 1's episode ends here
            scaler.episode_start(np.array([1]))
            returns[1] = 0.0
    assert scaler.stats.var == pytest.approx(np.var(seen))
    out = scaler(np.array([4.0, 4.0]), np.arange(2), update=False)
    np.testing.assert_allclose(out, 4.0 / np.sqrt(np.var(seen) + 1e-8))


def test_only_float_leaves_are_normalized_and_clipped():
    space = spaces.Dict(
        {"image": spaces.Box(0, 255, (2, 2), np.uint8), "pos": spaces.Box(-1e3, 1e3, (2,)), "id": spaces.Discrete(5)}
    )
    spec = ObservationSpec(space)
    norm = Normalizer(spec, num_rows=64, obs=True, reward=False, clip_obs=3.0)
    rng = np.random.default_rng(1)
    flat = spec.zeros(64)
    for row in range(64):
        spec.write(
            flat,
            row,
            {
                "image": rng.integers(0, 255, (2, 2), dtype=np.uint8),
                "pos": rng.normal(100.0, 10.0, 2).astype(np.float32),
                "id": row % 5,
            },
        )
    flat_before = flat.copy()
    views_in, views_out = spec.leaf_views(flat), spec.leaf_views(norm.observe(flat))
    names = [leaf.fields[-1] for leaf in spec.leaves]
    for name, before, after in zip(names, views_in, views_out):
        if name == "pos":
            assert abs(after.mean()) < 1e-3 and after.std() == pytest.approx(1.0, abs=1e-2)
        else:
            np.testing.assert_array_equal(before, after)
    np.testing.assert_array_equal(flat, flat_before)  # the env's buffer is never written
    spike = flat.copy()
    spec.leaf_views(spike)[names.index("pos")][0] = 1e6
    assert spec.leaf_views(norm.observe(spike))[names.index("pos")].max() == 3.0


def test_bad_clip_values_are_refused():
    with pytest.raises(ConfigError, match="train.clip_obs: must be > 0"):
        resolve_config(overrides=["train.clip_obs=0"])
    with pytest.raises(ConfigError, match="train.norm_obs: expected bool"):
        resolve_config(overrides=["train.norm_obs=1"])


def normalized(*extra: str) -> dict:
    return resolve_config(
        get_registry().get("cartpole").training.config,
        overrides=["train.norm_obs=true", "train.norm_reward=true", "train.checkpoint_interval=0", *extra],
    )


def test_statistics_round_trip_through_checkpoints_and_eval_uses_them_frozen(tmp_path):
    trainer = Trainer("cartpole", normalized("vec.num_envs=4", "train.num_steps=16"), run_dir=tmp_path)
    trainer.train_steps(256)
    saved = trainer.normalizer.state_dict()
    path = trainer.save_checkpoint()
    trainer.close()
    resumed = Trainer("cartpole", normalized("vec.num_envs=4", "train.num_steps=16"))
    assert not torch.equal(resumed.normalizer.state_dict()["obs.0.mean"], saved["obs.0.mean"])
    resumed.load_checkpoint(path)
    for key, value in saved.items():
        assert torch.equal(resumed.normalizer.state_dict()[key], value), key
    resumed.close()

    from pufferbox.train import evaluate as evaluate_module

    frozen = []
    original = evaluate_module.frozen_normalizer

    def spy(*args):
        frozen.append(original(*args))
        return frozen[-1]

    evaluate_module.frozen_normalizer = spy
    try:
        evaluate("cartpole", path, episodes=2, num_envs=2)
    finally:
        evaluate_module.frozen_normalizer = original
    (norm,) = frozen
    assert norm.frozen
    for key, value in saved.items():  # played two episodes, statistics unchanged
        assert torch.equal(norm.state_dict()[key], value), key


def test_collector_feeds_the_policy_normalized_obs_and_scaled_rewards():
    trainer = Trainer("cartpole", normalized("vec.num_envs=4", "train.num_steps=64"))
    batch = trainer.collector.collect().batch
    obs, rewards = batch["obs"].numpy(), batch["rewards"][:, :-1].numpy()
    assert abs(obs.mean()) < 0.5 and 0.3 < obs.std() < 2.0  # raw CartPole velocities are not unit-scaled
    assert np.all(rewards > 0) and not np.allclose(rewards, 1.0)  # CartPole pays 1 per step, scaled
    trainer.close()


@pytest.mark.slow
def test_normalized_training_still_learns_cartpole():
    # one torch thread: the learning curve is then the same on every machine (sums split over threads differ)
    trainer = Trainer("cartpole", normalized("train.seed=3", "train.torch_threads=1"))
    trainer.train_steps(80_000)
    assert trainer.result().episode_return > 100, trainer.history[-1]
    trainer.close()
