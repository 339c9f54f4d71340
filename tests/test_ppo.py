"""PPO: GAE along rows, padded agents excluded from every loss, pools, learning on short budgets."""

from __future__ import annotations

import copy

import gymnasium
import numpy as np
import pytest
import torch

from pufferbox.episodes import Episodes
from pufferbox.registry import get_registry
from pufferbox.train.config import resolve_config
from pufferbox.train.learner import gae
from pufferbox.train.trainer import Scoreboard, Trainer
from pufferbox.vector.testenvs import env_spec_for


def config(env: str | None = None, *overrides: str) -> dict:
    defaults = get_registry().get(env).training.config if env else {}
    return resolve_config(defaults, overrides=["train.checkpoint_interval=0", *overrides])


def test_gae_runs_along_each_rows_own_time_axis():
    rng = np.random.default_rng(0)
    rewards = torch.from_numpy(rng.normal(size=(2, 5)).astype(np.float32))
    values = torch.from_numpy(rng.normal(size=(2, 5)).astype(np.float32))
    starts = torch.tensor([[True, False, True, False, False], [False, False, False, True, True]])
    adv, returns = gae(rewards, values, starts, 0.9, 0.8)
    for row in range(2):
        last, expected = 0.0, np.zeros(4)
        for t in reversed(range(4)):
            nonterminal = 1.0 - float(starts[row, t + 1])
            delta = float(rewards[row, t]) + 0.9 * float(values[row, t + 1]) * nonterminal - float(values[row, t])
            last = delta + 0.9 * 0.8 * nonterminal * last
            expected[t] = last
        np.testing.assert_allclose(adv[row].numpy(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(returns, adv + values[:, :4])


def test_trainer_gae_sees_each_rows_own_segment():
    """The collector's batch is one row's consecutive steps per segment: each row's rewards are its own."""
    trainer = Trainer("cartpole", config("cartpole", "vec.num_envs=2", "train.num_steps=4"))
    batch = trainer.collector.collect().batch
    assert batch["obs"].shape[:2] == (2, 5) and batch["starts"][:, 0].all()
    np.testing.assert_array_equal(batch["obs"][:, 4].numpy(), trainer.collector.rollout.np_obs[:2, 0])  # carried
    trainer.close()


@pytest.mark.parametrize("lstm", [False, True], ids=["mlp", "lstm"])
def test_padded_agent_slots_do_not_touch_the_update(lstm):
    """Garbage in masked (padded) slots must leave the gradient step and its statistics unchanged."""
    cfg = config(None, "vec.num_envs=4", "train.num_steps=24", f"policy.lstm={str(lstm).lower()}", "policy.hidden_size=16")
    trainer = Trainer(env_spec_for("countdown"), cfg)
    batch = trainer.collector.collect().batch
    learner = trainer.learner
    assert len(batch["obs"]) == 12  # 4 envs x 3 agent slots, one segment each
    masked = ~batch["masks"].numpy()
    assert masked.any() and (~masked).any(), "countdown agents leave early: some slots must be padding"
    snapshot = (
        copy.deepcopy(trainer.agent.state_dict()),
        copy.deepcopy(learner.optimizer.state_dict()),
        learner.generator.get_state(),
    )

    def learn(batch) -> tuple[dict, dict]:
        trainer.agent.load_state_dict(snapshot[0])
        learner.optimizer.load_state_dict(snapshot[1])
        learner.generator.set_state(snapshot[2])
        stats = learner.update(batch)
        return stats, copy.deepcopy(trainer.agent.state_dict())

    clean_stats, clean_params = learn(batch)
    dirty = {k: v.clone() for k, v in batch.items()}
    rng = np.random.default_rng(1)
    rows, ts = np.nonzero(masked)
    dirty["obs"][rows, ts] = torch.from_numpy(rng.normal(scale=1e3, size=dirty["obs"][rows, ts].shape)).to(
        dirty["obs"].dtype
    )
    dirty["rewards"][rows, ts] = torch.from_numpy(rng.normal(scale=1e3, size=len(rows))).float()
    dirty["values"][rows, ts] = torch.from_numpy(rng.normal(scale=1e3, size=len(rows))).float()
    dirty["logprobs"][rows, ts] = torch.from_numpy(rng.normal(scale=10, size=len(rows))).float()
    dirty["actions"][rows, ts] = torch.from_numpy(rng.integers(0, 3, size=len(rows))).to(dirty["actions"].dtype)
    dirty_stats, dirty_params = learn(dirty)
    for name in clean_params:
        torch.testing.assert_close(clean_params[name], dirty_params[name], msg=name)
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "explained_variance"):
        assert clean_stats[key] == pytest.approx(dirty_stats[key], rel=1e-5, abs=1e-6), key
    assert not torch.equal(dirty["rewards"], batch["rewards"])  # sanity: the corruption really happened
    trainer.close()


def test_async_pool_fills_rows_by_env_id():
    cfg = config(
        "cartpole",
        "vec.backend=multiprocessing",
        "vec.native=false",
        "vec.num_envs=4",
        "vec.num_workers=2",
        "vec.batch_size=2",
        "train.num_steps=16",
    )
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


@pytest.mark.parametrize(
    "env, overrides",
    [
        ("spaces", ["train.total_steps=4096"]),  # Dict observation, MultiDiscrete/Box actions per the ocean plugin
        ("multiagent", ["train.total_steps=4096"]),
    ],
)
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


def test_compile_mode_reaches_both_compiled_steps(monkeypatch):
    """train.compile_mode goes to torch.compile for the collector's act and the learner's forward and loss
    (reduce-overhead: CUDA graphs on a GPU); recorded here without compiling anything."""
    modes = {}

    def record(fn, mode=None):
        modes[fn.__name__] = mode
        return fn

    monkeypatch.setattr(torch, "compile", record)
    cfg = config("cartpole", "train.compile=true", "train.compile_mode=reduce-overhead", "vec.num_envs=4")
    trainer = Trainer("cartpole", cfg)
    trainer.close()
    assert modes == {"act": "reduce-overhead", "forward_loss": "reduce-overhead"}
    with pytest.raises(Exception, match="compile_mode"):
        config("cartpole", "train.compile_mode=fastest")


def test_learner_update_is_pure_on_a_batch_of_tensors():
    """No env, no collector: a batch of segments in, metrics out, the weights moved, nothing else touched."""
    from tiny import tiny_agent, tiny_batch

    from pufferbox.train.config import TrainConfig
    from pufferbox.train.learner import Learner

    agent, batch = tiny_agent(), tiny_batch(segments=3, horizon=5)
    before = {k: v.clone() for k, v in batch.items()}
    weights = copy.deepcopy(agent.state_dict())
    metrics = Learner(agent, TrainConfig(num_minibatches=1, update_epochs=2)).update(batch, progress=0.5)
    assert metrics["learning_rate"] == pytest.approx(TrainConfig().learning_rate * 0.5)
    assert metrics["value_loss"] > 0 and metrics["nonfinite_updates"] == 0
    assert any(not torch.equal(weights[k], v) for k, v in agent.state_dict().items())
    assert all(torch.equal(before[k], batch[k]) for k in batch)


class CoinEnv(gymnasium.Env):
    """Ends every 5 steps with ``info["coins"] = 2``: a plugin's own per-episode metric."""

    observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        done = self.t >= 5
        return np.zeros(2, np.float32), 1.0, False, done, ({"coins": 2.0} if done else {})


def make_coin_env():
    return CoinEnv()


def test_episode_metrics_of_the_env_reach_the_update_metrics():
    from pufferbox.registry import EnvBuild, EnvSpec

    spec = EnvSpec(
        name="coins", build=EnvBuild(binding=make_coin_env, episode_metrics=("coins",))
    )  # declared metrics are logged
    trainer = Trainer(
        spec,
        resolve_config(
            overrides=["vec.num_envs=2", "train.num_steps=16", "policy.hidden_size=8", "train.checkpoint_interval=0"]
        ),
    )
    try:
        metrics = trainer.train_update()
        assert metrics["episodes"] > 0 and metrics["episode_coins"] == 2.0 and metrics["episode_length"] == 5.0
    finally:
        trainer.close()


def test_a_plugin_metric_that_only_some_episodes_report_is_averaged_and_counted_over_those():
    # Atari's whole-game score comes with a game's last life only: the other lives report NaN
    lives = Episodes.from_arrays(
        [0, 1, 0, 1], [1.0, 2.0, 3.0, 4.0], [10, 10, 10, 10], {"raw_episode_return": [np.nan, 12.0, np.nan, 30.0]}
    )
    out = Scoreboard(window=20, solved_return=None).add(lives, step=100, wall=1.0)
    assert out["episodes"] == 4 and out["episode_return"] == 2.5
    assert out["episode_raw_episode_return"] == 21.0 and out["episodes_raw_episode_return"] == 2
