"""NaN and inf never reach the model or a checkpoint: config values, rewards, losses, resume.

Each test provokes the fault: a non-finite config value, an env whose rewards turn NaN, a loss
that overflows, a model poisoned in place, a poisoned newest checkpoint in a run directory.
"""

from __future__ import annotations

import copy
import math

import gymnasium
import numpy as np
import pytest
import torch

from pufferbox.registry import EnvBuild, EnvSpec
from pufferbox.train import snapshot
from pufferbox.train.checkpoint import CheckpointError, latest_checkpoint, list_checkpoints, save_checkpoint
from pufferbox.train.config import ConfigError, resolve_config
from pufferbox.train.nonfinite import NonFiniteError
from pufferbox.train.runner import run
from pufferbox.train.trainer import Trainer


class NanRewardEnv(gymnasium.Env):
    """A 4-float observation, 2 actions, reward 1; from global step ``nan_after`` on the reward is NaN."""

    observation_space = gymnasium.spaces.Box(-1, 1, (4,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, nan_after: int = 10**9, reward: float = float("nan")):
        self.nan_after, self.bad_reward, self.t, self.episode_t = nan_after, reward, 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode_t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        self.episode_t += 1
        reward = self.bad_reward if self.t > self.nan_after else 1.0
        return self.np_random.uniform(-1, 1, 4).astype(np.float32), reward, False, self.episode_t >= 20, {}


def make_nan_env(**kwargs):
    return NanRewardEnv(**kwargs)


def spec(**kwargs) -> EnvSpec:
    return EnvSpec(name="nan_reward", build=EnvBuild(binding=make_nan_env, kwargs=kwargs))


def config(*overrides: str) -> dict:
    return resolve_config(
        overrides=[
            "vec.num_envs=2",
            "train.num_steps=8",
            "policy.hidden_size=8",
            "train.checkpoint_interval=0",
            "vec.native=false",
            *overrides,
        ]
    )


@pytest.mark.parametrize(
    "override", ["train.learning_rate=inf", "train.gamma=nan", "train.ent_coef=-inf", "train.max_grad_norm=nan"]
)
def test_non_finite_config_values_are_refused_naming_the_key(override):
    key = override.split("=")[0]
    with pytest.raises(ConfigError) as err:
        resolve_config(overrides=[override])
    message = str(err.value)
    assert message.startswith(f"{key}: must be a finite number") and "\n" not in message


def params(trainer: Trainer) -> dict[str, torch.Tensor]:
    return copy.deepcopy(trainer.agent.state_dict())


def test_nan_rewards_never_step_the_optimizer_and_stop_after_k_updates():
    # every env steps 8 times per update: NaN rewards start in the third update
    trainer = Trainer(spec(nan_after=16), config("train.max_nonfinite_updates=3"))
    try:
        good = trainer.train_steps(2 * 16)
        assert [m["nonfinite_updates"] for m in good] == [0, 0]
        before, adam_steps = params(trainer), trainer.learner.optimizer.step_count
        for k in (1, 2):
            metrics = trainer.train_update()
            assert metrics["nonfinite_updates"] == k and "policy_loss" not in metrics
        for name, value in params(trainer).items():
            torch.testing.assert_close(value, before[name], rtol=0, atol=0, msg=name)
        assert trainer.learner.optimizer.step_count == adam_steps
        with pytest.raises(NonFiniteError, match=r"3 updates in a row .* not finite.*model was left unchanged"):
            trainer.train_update()
        assert all(torch.isfinite(v).all() for v in params(trainer).values())
    finally:
        trainer.close()


def test_a_finite_update_resets_the_count():
    trainer = Trainer(spec(), config())
    try:
        trainer.train_update()
        trainer.learner.nonfinite = 2
        assert trainer.train_update()["nonfinite_updates"] == 0
    finally:
        trainer.close()


def test_an_overflowing_loss_is_skipped_not_stepped():
    """Finite rewards and returns (about 1e31), but the squared value error overflows float32 to inf:
    the loss check, not the reward check, must refuse the step."""
    trainer = Trainer(spec(nan_after=0, reward=1e30), config("train.max_nonfinite_updates=5"))
    try:
        before = params(trainer)
        metrics = trainer.train_update()
        assert metrics["nonfinite_updates"] == 1
        for name, value in params(trainer).items():
            torch.testing.assert_close(value, before[name], rtol=0, atol=0, msg=name)
    finally:
        trainer.close()


def test_a_checkpoint_with_non_finite_weights_is_never_written(tmp_path):
    trainer = Trainer(spec(), config(), run_dir=tmp_path)
    try:
        trainer.train_update()
        good = trainer.save_checkpoint()
        with torch.no_grad():
            next(trainer.agent.parameters()).view(-1)[0] = math.nan
        trainer.update += 1
        with pytest.raises(NonFiniteError, match="not finite"):
            trainer.save_checkpoint()
        assert list_checkpoints(tmp_path / "checkpoints") == [tmp_path / "checkpoints" / good.split("/")[-1]]
        with pytest.raises(CheckpointError, match="not finite"):  # the file-level guard, for any writer
            save_checkpoint(snapshot.take(trainer), tmp_path / "other", update=9)
        assert not (tmp_path / "other" / "ckpt-00000009.pt").exists()
    finally:
        trainer.close()


def test_resume_takes_the_newest_checkpoint_with_finite_weights(tmp_path):
    run_dir = tmp_path / "run"
    overrides = [
        "vec.num_envs=2",
        "train.num_steps=8",
        "train.checkpoint_interval=1",
        "train.total_steps=32",
        "policy.hidden_size=8",
    ]
    run("cartpole", overrides=overrides, run_dir=run_dir, dashboard=False, tensorboard=False)
    newest = latest_checkpoint(run_dir / "checkpoints")
    state = torch.load(newest, weights_only=True)
    assert state["update"] == 2
    for value in state["model"].values():
        value.fill_(math.nan)
    torch.save(state, newest.with_name("ckpt-00000003.pt"))  # a poisoned checkpoint written behind our back
    result = run(resume=run_dir, flags={"train.total_steps": 48}, dashboard=False, tensorboard=False)
    assert result.updates == 3 and result.global_step == 48  # continued from update 2, not the poisoned 3
    resumed = torch.load(latest_checkpoint(run_dir / "checkpoints"), weights_only=True)
    assert all(torch.isfinite(v).all() for v in resumed["model"].values())


def test_resume_with_only_poisoned_checkpoints_is_a_one_line_error(tmp_path):
    run_dir = tmp_path / "run"
    run(
        "cartpole",
        overrides=["vec.num_envs=2", "train.num_steps=8", "train.total_steps=16", "policy.hidden_size=8"],
        run_dir=run_dir,
        dashboard=False,
        tensorboard=False,
    )
    for path in list_checkpoints(run_dir / "checkpoints"):
        state = torch.load(path, weights_only=True)
        next(iter(state["model"].values())).fill_(math.inf)
        torch.save(state, path)
    with pytest.raises(CheckpointError, match=r"no usable checkpoint \(\d+ with NaN/inf weights\); start a new run") as err:
        run(resume=run_dir, dashboard=False, tensorboard=False)
    assert "\n" not in str(err.value)
