"""Truncation is not termination: final observations survive the autoreset on every backend,
and the collectors bootstrap a truncated step's value target from them."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch

import pufferbox.vector as vector
from pufferbox.conformance.checks import CheckConfig, ConformanceError, check_native, check_truncation
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.registry import EnvBuild, EnvSpec, Registry
from pufferbox.train.collector import DeviceCollector, HostCollector
from pufferbox.train.config import PolicyConfig
from pufferbox.train.learner import gae
from pufferbox.train.policies import build_agent

LIMIT = 4  # CartPole steps before truncation: short enough that no episode terminates first


def cartpole() -> EnvSpec:
    return Registry(only=["classic"]).get("cartpole")


def reference_envs(num_envs: int, seed: int) -> list[gymnasium.Env]:
    envs = [gymnasium.make("CartPole-v1", max_episode_steps=LIMIT) for _ in range(num_envs)]
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    return envs


def drive(venv, steps: int, seed: int = 3) -> int:
    """Step ``venv`` (any backend, pools included) beside one Gymnasium CartPole per env; check every
    truncated row's final observation against the reference's last observation. Returns truncations seen."""
    refs = reference_envs(venv.num_envs, seed)
    pending: dict[int, int] = {}
    venv.async_reset(seed)
    seen = 0
    for t in range(steps):
        _, _, terminals, truncations, _, env_ids, _ = venv.recv()
        final = venv.final_observations()
        for row, env in enumerate(env_ids.tolist()):
            if env not in pending:
                continue
            obs, _, term, trunc, _ = refs[env].step(pending.pop(env))
            assert (bool(terminals[row]), bool(truncations[row])) == (term, trunc), f"step {t}, env {env}"
            if trunc and not term:
                seen += 1
                np.testing.assert_array_equal(final[row], obs, err_msg=f"step {t}, env {env}")
                refs[env].reset()
        actions = np.array([(t + env) % 2 for env in env_ids.tolist()])
        pending.update(zip(env_ids.tolist(), actions.tolist()))
        venv.send(actions)
    return seen


@pytest.mark.parametrize(
    "backend, kwargs",
    [
        ("serial", {"native": False}),
        ("serial", {"native": True, "env_kwargs": {"kernel": "numpy"}}),
        ("serial", {"native": True}),
        ("multiprocessing", {"native": False, "num_workers": 2}),
        ("multiprocessing", {"native": True, "num_workers": 2, "batch_size": 2}),  # a pool: batches of any workers
    ],
    ids=["serial-emulated", "serial-numpy", "serial-c", "multiprocessing", "multiprocessing-pool"],
)
def test_final_observation_is_the_truncated_episodes_last(backend: str, kwargs: dict) -> None:
    env_kwargs = {"max_episode_steps": LIMIT, **kwargs.pop("env_kwargs", {})}
    with vector.make(cartpole(), backend=backend, num_envs=4, env_kwargs=env_kwargs, **kwargs) as venv:
        assert drive(venv, steps=8 * LIMIT + 2) >= 8


@pytest.mark.slow
def test_ray_backend_ships_final_observations(local_ray) -> None:
    env_kwargs = {"max_episode_steps": LIMIT}
    with vector.make(cartpole(), backend="ray", num_envs=4, num_workers=2, env_kwargs=env_kwargs) as venv:
        assert drive(venv, steps=3 * LIMIT + 1) >= 8


def test_a_block_without_final_observations_says_so() -> None:
    """A native block that never declared final observations gives None, not stale rows."""
    from pufferbox_classic.native import CartPoleNative

    class Forgetful(CartPoleNative):
        writes_final_observations = False

    spec = EnvSpec(name="forgetful", build=EnvBuild(binding=cartpole().build.binding, native=Forgetful))
    with vector.make(spec, backend="serial", num_envs=2, env_kwargs={"max_episode_steps": LIMIT}) as venv:
        venv.reset(seed=0)
        assert venv.final_observations() is None
    with pytest.raises(ConformanceError, match="keeps no final observations"):
        check_native(spec, CheckConfig(steps=2 * LIMIT, num_envs=2, env_kwargs=(("max_episode_steps", LIMIT),)))


def agent_for(venv) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_agent(venv.obs_spec, venv.act_spec, PolicyConfig(hidden_size=16))


@pytest.mark.parametrize("gamma", [0.0, 0.9])
def test_value_target_bootstraps_from_the_final_observation(gamma: float) -> None:
    """The stored reward of a truncated step is r + gamma * V(final obs), so GAE's return there is exactly
    that; terminated steps (none here) and ordinary steps keep r."""
    env_kwargs = {"max_episode_steps": LIMIT}
    horizon = 3 * LIMIT
    with vector.make(cartpole(), backend="serial", num_envs=2, env_kwargs=env_kwargs) as venv:
        agent = agent_for(venv)
        collector = HostCollector(venv, agent, horizon=horizon, bootstrap_gamma=gamma)
        collector.reset(seed=7)
        got = collector.collect()
    batch = got.batch
    # Replay the rollout's actions on a second vector env to read the final observations independently.
    finals: dict[tuple[int, int], np.ndarray] = {}
    with vector.make(cartpole(), backend="serial", num_envs=2, env_kwargs=env_kwargs) as replay:
        replay.reset(seed=7)
        for t in range(horizon):
            _, _, term, trunc, _ = replay.step(batch["actions"][:, t].numpy())
            for row in np.flatnonzero(trunc & ~term):
                finals[(int(row), t)] = replay.final_observations()[row].copy()
    assert len(finals) == 2 * (horizon // LIMIT)
    rewards = batch["rewards"].numpy()
    for (row, t), final in finals.items():
        assert batch["starts"][row, t + 1], "the truncated episode ends there: the next obs starts one"
        with torch.no_grad():
            value = float(agent.act(torch.from_numpy(final[None]))[3])
        assert rewards[row, t] == pytest.approx(1.0 + gamma * value, abs=1e-6)
    others = np.ones_like(rewards[:, :horizon], dtype=bool)
    for row, t in finals:
        others[row, t] = False
    assert (rewards[:, :horizon][others] == 1.0).all()
    _, returns = gae(batch["rewards"], batch["values"], batch["starts"], 0.99, 0.95)
    for row, t in finals:
        assert float(returns[row, t]) == pytest.approx(float(rewards[row, t]), abs=1e-6), "the value target"


class OverrunsItsLimit(gymnasium.Env):
    """Declares a 3-step limit and ends every episode as *terminated* there (the bug the check catches)."""

    observation_space = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)
    spec = gymnasium.envs.registration.EnvSpec("Overruns-v0", max_episode_steps=3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), 0.0, self.t >= 3, False, {}


def make_overruns() -> OverrunsItsLimit:
    return OverrunsItsLimit()


def test_conformance_catches_a_time_limit_reported_as_termination() -> None:
    with pytest.raises(ConformanceError, match="reached the time limit \\(3 steps\\) ended terminated"):
        check_truncation(EnvSpec(name="overruns", build=EnvBuild(binding=make_overruns)), CheckConfig(steps=10))
    check_truncation(cartpole(), CheckConfig(steps=50, env_kwargs=(("max_episode_steps", LIMIT),)))


needs_cxx = pytest.mark.skipif(find_cxx() is None, reason="the host kernel simulator needs a C++ compiler (g++)")


@needs_cxx
def test_cuda_backend_keeps_the_observation_before_the_reset() -> None:
    """Tag's 4th feature is t / episode_length: 1 in the final observation of a truncated episode,
    0 in the first observation of the next one (the kernels run on the host simulator)."""
    with vector.make("tag", backend="cuda", device="host", num_envs=3, env_kwargs={"episode_length": 4}) as venv:
        venv.reset(seed=0)
        for _ in range(4):
            venv.send(torch.zeros(venv.num_agents, dtype=torch.int32))
            obs, _, terminals, truncations, _, _, _ = venv.recv()
        cut = truncations & ~terminals
        assert cut.any()
        final = venv.final_observations()
        assert torch.equal(final[cut, 3], torch.ones(int(cut.sum())))
        assert torch.equal(obs[cut, 3], torch.zeros(int(cut.sum())))


@needs_cxx
@pytest.mark.parametrize("gamma", [0.0, 0.9])
def test_device_collector_bootstraps_from_the_kernels_final_observation(gamma: float) -> None:
    """As for the host collector: a truncated step's stored reward is r + gamma * V(final obs), read
    back from a second kernel env replaying the same actions; every other reward stays 1."""
    env_kwargs, horizon = {"max_steps": LIMIT}, 3 * LIMIT
    with vector.make("cuda_cartpole", backend="cuda", device="host", num_envs=2, env_kwargs=env_kwargs) as venv:
        agent = agent_for(venv)
        collector = DeviceCollector(venv, agent, horizon=horizon, bootstrap_gamma=gamma)
        collector.reset(seed=7)
        batch = {k: v.clone() for k, v in collector.collect().batch.items()}
    finals: dict[tuple[int, int], torch.Tensor] = {}
    with vector.make("cuda_cartpole", backend="cuda", device="host", num_envs=2, env_kwargs=env_kwargs) as replay:
        for t in range(horizon):
            replay.send(batch["actions"][:, t])
            _, _, term, trunc, _, _, _ = replay.recv()
            for row in torch.nonzero(trunc & ~term).flatten().tolist():
                finals[(row, t)] = replay.final_observations()[row].clone()
    assert len(finals) == 2 * (horizon // LIMIT)
    rewards = batch["rewards"]
    for (row, t), final in finals.items():
        assert batch["starts"][row, t + 1]
        with torch.no_grad():
            value = float(agent.act(final[None])[3])
        assert float(rewards[row, t]) == pytest.approx(1.0 + gamma * value, abs=1e-6)
    others = torch.ones_like(rewards[:, :horizon], dtype=torch.bool)
    for row, t in finals:
        others[row, t] = False
    assert bool((rewards[:, :horizon][others] == 1.0).all())
