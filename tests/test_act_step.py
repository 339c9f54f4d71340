"""The one act step (train/act.py) on every backend: serial, multiprocessing, Ray actors, the cuda kernels.

Each backend collects a rollout with the same recurrent policy and torch seed; replaying the stored
observations and episode starts through a fresh :class:`ActStep` on that policy, from that seed, gives
the stored actions, log-probabilities, values and LSTM states. The CPU backends step the same CartPole
envs from the same env seeds, so their rollouts are also equal to each other.
"""

from __future__ import annotations

import pytest
import torch

import pufferbox.vector as vector
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.registry import get_registry
from pufferbox.train.act import ActStep, rollout_schema
from pufferbox.train.config import PolicyConfig
from pufferbox.train.policies import build_agent

HORIZON, ENVS, ENV_SEED, TORCH_SEED = 32, 4, 7, 0  # TORCH_SEED: a Ray actor w's is seed * 1_000_003 + w


def policy(obs_spec, act_spec):
    torch.manual_seed(123)
    return build_agent(obs_spec, act_spec, PolicyConfig(hidden_size=16, lstm=True, lstm_size=8))


def collect_host(backend: str, env_kwargs: dict, gamma: float) -> tuple[dict, object, object]:
    from pufferbox.train.collector import HostCollector

    with vector.make("cartpole", backend=backend, num_envs=ENVS, native=False, env_kwargs=env_kwargs) as venv:
        agent = policy(venv.obs_spec, venv.act_spec)
        collector = HostCollector(venv, agent, horizon=HORIZON, bootstrap_gamma=gamma)
        collector.reset(ENV_SEED)
        torch.manual_seed(TORCH_SEED)
        return collector.collect().batch, agent, venv


def collect_ray(env_kwargs: dict, gamma: float) -> tuple[dict, object, object]:
    from pufferbox.train.ray_collector import RayCollector
    from pufferbox.vector.base import EnvFactory
    from pufferbox.vector.ray_rollout import RayRollouts

    factory = EnvFactory(get_registry().get("cartpole"), env_kwargs, use_native=False)
    with RayRollouts(factory, ENVS, 1, seed=TORCH_SEED) as r:
        agent = policy(r.obs_spec, r.act_spec)
        collector = RayCollector(r, agent, horizon=HORIZON, bootstrap_gamma=gamma)  # the actor seeds torch itself
        collector.reset(ENV_SEED)
        return collector.collect().batch, agent, r


def collect_device() -> tuple[dict, object, object]:
    from pufferbox.train.collector import DeviceCollector

    with vector.make("cuda_cartpole", backend="cuda", device="host", num_envs=ENVS) as venv:
        agent = policy(venv.obs_spec, venv.act_spec)
        collector = DeviceCollector(venv, agent, horizon=HORIZON)
        collector.use_sampler = False  # torch's sampler: replayable from the torch seed (the kernel's is not)
        collector.reset(ENV_SEED)
        torch.manual_seed(TORCH_SEED)
        batch = collector.collect().batch
        return {k: v.clone() for k, v in batch.items()}, agent, venv


def collect(backend: str, env_kwargs: dict | None = None, gamma: float = 0.0) -> tuple[dict, object, object]:
    """``(batch, policy, envs)`` of one rollout on ``backend`` (the envs closed, their specs kept);
    ``gamma`` > 0 bootstraps truncated steps (CartPole's backends)."""
    if backend == "ray":
        return collect_ray(env_kwargs or {}, gamma)
    if backend == "cuda-host":
        return collect_device()
    return collect_host(backend, env_kwargs or {}, gamma)


@torch.no_grad()
def replay(agent, act_spec, batch: dict, seed: int = TORCH_SEED) -> dict[str, torch.Tensor]:
    """The act step on the stored observations and starts, slot by slot, from the collectors' torch seed."""
    step = ActStep(agent, act_spec)
    torch.manual_seed(seed)
    state = agent.initial_state(len(batch["obs"]))
    out: dict[str, list] = {k: [] for k in ("actions", "logprobs", "values", "h", "c")}
    for t in range(HORIZON + 1):
        out["h"].append(state[0])
        out["c"].append(state[1])
        acted = step(batch["obs"][:, t], state, batch["starts"][:, t])
        out["actions"].append(acted.actions)
        out["logprobs"].append(acted.logprobs)
        out["values"].append(acted.values)
        state = acted.state
    return {k: torch.stack(v, dim=1) for k, v in out.items()}


needs_cxx = pytest.mark.skipif(find_cxx() is None, reason="the cuda host simulator needs a C++ compiler (g++)")
BACKENDS = [
    "serial",
    "multiprocessing",
    pytest.param("ray", marks=pytest.mark.slow),  # a local Ray (tests/conftest.py's local_ray) takes seconds
    pytest.param("cuda-host", marks=needs_cxx),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_stored_rollout_is_the_act_step_replayed(backend: str, request: pytest.FixtureRequest) -> None:
    if backend == "ray":
        request.getfixturevalue("local_ray")
    batch, agent, venv = collect(backend)
    assert list(batch) == list(rollout_schema(venv.obs_spec, venv.act_spec, 8))
    assert batch["starts"][:, 0].all() and batch["obs"].shape[:2] == (ENVS, HORIZON + 1)
    again = replay(agent, venv.act_spec, batch)
    torch.testing.assert_close(batch["actions"].long(), again["actions"].long(), rtol=0, atol=0)
    for name in ("logprobs", "values", "h", "c"):
        torch.testing.assert_close(batch[name], again[name], msg=name)
    other = replay(agent, venv.act_spec, batch, seed=TORCH_SEED + 1)  # not vacuous: another seed, other actions
    assert not torch.equal(batch["actions"].long(), other["actions"].long())


@pytest.mark.parametrize("backend", ["multiprocessing", pytest.param("ray", marks=pytest.mark.slow)])
def test_cpu_backends_store_the_serial_rollout(backend: str, request: pytest.FixtureRequest) -> None:
    """Same envs, env seeds, policy and torch seed: the same rollout, whichever backend steps and acts,
    truncated steps' bootstrapped rewards included (a time limit of 9 steps cuts episodes short)."""
    if backend == "ray":
        request.getfixturevalue("local_ray")
    limit = {"max_episode_steps": 9}
    expected, _, _ = collect("serial", limit, gamma=0.9)
    got, _, _ = collect(backend, limit, gamma=0.9)
    assert got["starts"][:, 1:].any(), "an episode ends inside the rollout (resets and LSTM state resets covered)"
    assert (got["rewards"][:, :HORIZON] != 1).any(), "some truncated step's reward is bootstrapped: r + 0.9 V"
    for name, value in expected.items():
        torch.testing.assert_close(
            got[name], value, rtol=0 if name == "actions" else None, atol=0 if name == "actions" else None, msg=name
        )
