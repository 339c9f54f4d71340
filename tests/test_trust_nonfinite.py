"""Non-finite observations and logits (issue 38, defect 6): one line naming the env and the step, like
NaN rewards, never torch's 60-line ``probability tensor contains either inf, nan`` traceback. The -inf
logits of masked actions are legal and never flagged."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from click.testing import CliRunner
from gymnasium import spaces
from torch.distributions import Categorical

from pufferbox import EnvBuild, EnvSpec
from pufferbox.cli import cli, load_commands
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.registry import get_registry
from pufferbox.train.act import check_finite
from pufferbox.train.collector import NonFiniteInput
from pufferbox.train.config import resolve_config
from pufferbox.train.nonfinite import NonFiniteError
from pufferbox.train.trainer import Trainer
from pufferbox.vector.base import LOGITS_NOT_FINITE, OBSERVATION_NOT_FINITE

pytestmark = pytest.mark.usefixtures("fresh_registry")  # tests/conftest.py


class BadObservation(gymnasium.Env):
    """A 4-float observation; from step ``at`` on it holds ``value`` (NaN, inf or a huge finite)."""

    def __init__(self, value: float = float("nan"), at: int = 20):
        self.observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.value, self.at, self.t = value, at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.zeros(4, np.float32)
        if self.t >= self.at:
            obs[2] = self.value
        return obs, 1.0, False, False, {}


def make_bad_observation(value: float = float("nan"), at: int = 20) -> BadObservation:
    return BadObservation(value, at)


def spec_of(value: float) -> EnvSpec:
    return EnvSpec("badobs", EnvBuild(make_bad_observation, kwargs={"value": value}))


CONFIG = ["vec.num_envs=4", "vec.backend=serial", "train.num_steps=8", "train.checkpoint_interval=0"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_observation_names_the_env_and_the_step(value):
    trainer = Trainer(spec_of(value), resolve_config({}, overrides=CONFIG))
    try:
        with pytest.raises(NonFiniteError) as caught:
            trainer.train_steps(4 * 8 * 10)
    finally:
        trainer.close()
    message = str(caught.value)
    assert message.startswith("badobs: env 0 (agent row 0) returned an observation with NaN/inf during update 3 ")
    assert "(after step 64)" in message and "--check-obs" in message  # 2 updates of 4 x 8 steps before it


def test_non_finite_logits_on_finite_observations_are_one_line():
    trainer = Trainer(spec_of(0.0), resolve_config({}, overrides=CONFIG))  # the env is fine
    with torch.no_grad():
        trainer.agent.actor.linear.weight[0, 0] = float("nan")  # what an overflowing update leaves
    try:
        with pytest.raises(NonFiniteError) as caught:
            trainer.train_steps(4 * 8)
    finally:
        trainer.close()
    assert str(caught.value) == (
        "badobs: the policy's logits are NaN/inf on this step's observations during update 1 (after step 0); "
        "the policy's weights are not finite: lower train.learning_rate"
    )


def test_masked_minus_infinity_logits_are_legal():
    logits = torch.tensor([[-float("inf"), 0.3, -float("inf")], [1.0, -float("inf"), 2.0]])
    dist = Categorical(logits=logits)
    logprob = dist.log_prob(dist.sample()).numpy()
    check_finite(logprob, np.arange(2), 1, LOGITS_NOT_FINITE)  # no error: a sampled action is always a legal one
    with pytest.raises(NonFiniteInput, match="logits are NaN/inf on the observation of env 1"):
        check_finite(np.array([0.0, np.nan], np.float32), np.arange(2), 1, LOGITS_NOT_FINITE)
    check_finite(np.full((2, 3), 255, np.uint8), np.arange(2), 1, OBSERVATION_NOT_FINITE)  # integers: nothing to check
    obs = np.zeros((8, 3), np.float32)
    obs[5, 1] = np.nan
    with pytest.raises(NonFiniteInput, match=r"^env 2 \(agent row 5\) returned an observation with NaN/inf$"):
        check_finite(obs, np.arange(8), 2, OBSERVATION_NOT_FINITE)  # two agents per env: row 5 is env 2's


def test_cli_train_on_nan_observations_is_one_line_exit_2(monkeypatch, tmp_path):
    registry = get_registry()
    real_get = registry.get
    monkeypatch.setattr(
        registry, "get", lambda name, plugin=None: spec_of(float("nan")) if name == "badobs" else real_get(name, plugin)
    )
    load_commands()
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        cli, ["train", "badobs", "--run-dir", str(run_dir), "--no-tensorboard", *(a for c in CONFIG for a in ("--set", c))]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith("Error: badobs: env 0 (agent row 0) returned an observation with NaN/inf")


class PoisonedObservations:
    """A ``cuda``-backend vector env whose observation of ``row`` turns NaN from its ``at``-th ``recv``."""

    def __init__(self, venv, row: int, at: int):
        self.venv, self.row, self.at, self.calls = venv, row, at, 0

    def __getattr__(self, name):
        return getattr(self.venv, name)

    def recv(self):
        out = list(self.venv.recv())
        self.calls += 1
        if self.calls >= self.at:
            out[0] = out[0].clone()
            out[0][self.row, 1] = float("nan")
        return tuple(out)


@pytest.mark.skipif(find_cxx() is None, reason="the host kernel simulator needs a C++ compiler (g++)")
@pytest.mark.parametrize("fault", ["observation", "logits"])
def test_the_device_collector_names_non_finite_input_once_per_collect(fault):
    """The cuda backend's collector flags NaN/inf on the device each step and reads the flags once per
    collect; the poisoned observation never reaches the policy's sampler."""
    import pufferbox.vector as vector
    from pufferbox.train.collector import DeviceCollector
    from pufferbox.train.config import PolicyConfig
    from pufferbox.train.policies import build_agent

    with vector.make("cuda_cartpole", backend="cuda", device="host", num_envs=4) as venv:
        agent = build_agent(venv.obs_spec, venv.act_spec, PolicyConfig(hidden_size=8))
        poisoned = PoisonedObservations(venv, row=2, at=5) if fault == "observation" else venv
        if fault == "logits":
            with torch.no_grad():
                next(agent.parameters()).fill_(float("nan"))
        collector = DeviceCollector(poisoned, agent, horizon=8)
        collector.reset(seed=1)
        expected = {
            "observation": r"^env 2 \(agent row 2\) returned an observation with NaN/inf$",
            "logits": r"^the policy's logits are NaN/inf on the observation of env 0$",
        }[fault]
        with pytest.raises(NonFiniteInput, match=expected):
            collector.collect()
        if fault == "observation":
            assert torch.isfinite(collector.obs).all(), "the policy saw (and stored) zeros, never the NaN"
