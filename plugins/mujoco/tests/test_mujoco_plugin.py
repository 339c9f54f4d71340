"""The MuJoCo plugin: names, continuous spaces, conformance, missing-dependency errors, smoke training."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from pufferbox_mujoco.plugin import TASKS

import pufferbox.vector
from pufferbox.api import MLPEncoder, build_agent, get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train


def test_every_task_is_a_gymnasium_v5_id_with_its_threshold_under_two_names():
    for name, (gym_id, solved) in TASKS.items():
        spec = get_registry().get(name)
        assert spec is get_registry().get(f"mujoco/{name}") and spec.build.kwargs == {"gym_id": gym_id}
        assert gymnasium.spec(gym_id).reward_threshold == solved
    assert {"hopper", "halfcheetah", "walker2d", "ant", "humanoid"} <= set(TASKS)


@pytest.mark.parametrize("name", ["hopper", "ant", "humanoid", "invertedpendulum"])
def test_actions_are_continuous_boxes(name):
    env = get_registry().get(name).make_raw()
    assert isinstance(env.action_space, gymnasium.spaces.Box) and env.action_space.dtype == np.float32
    env.close()


@pytest.mark.parametrize("name", ["hopper", "halfcheetah", "walker2d", "ant", "humanoid", "reacher"])
def test_pufferbox_conformance_suite_passes(name):
    assert_conforms(get_registry().get(name), steps=100)


def test_vector_env_matches_gymnasium_in_lock_step():
    venv = pufferbox.vector.make("hopper", backend="serial", num_envs=2)
    raws = [gymnasium.make("Hopper-v5") for _ in range(2)]
    obs, _ = venv.reset(seed=10)
    refs = [raw.reset(seed=10 + i)[0] for i, raw in enumerate(raws)]
    rng = np.random.default_rng(0)
    for _ in range(50):
        for i in range(2):
            np.testing.assert_array_equal(venv.obs_spec.unflatten(obs[i : i + 1])[0], refs[i])
        actions = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
        obs, rewards, terminals, truncations, _ = venv.step(actions)
        for i, raw in enumerate(raws):
            refs[i], r, t, u, _ = raw.step(actions[i])
            assert (rewards[i], terminals[i], truncations[i]) == (np.float32(r), t, u)
            if t or u:
                refs[i], _ = raw.reset()
                break
        if terminals.any() or truncations.any():
            break
    venv.close()


def test_default_policy_is_the_tanh_mlp_with_a_gaussian_head():
    spec = get_registry().get("ant")
    venv = pufferbox.vector.make("ant", backend="serial", num_envs=2)
    obs, _ = venv.reset(seed=0)
    agent = build_agent(venv.obs_spec, venv.act_spec, spec.training.config["policy"])
    assert isinstance(agent.encoder, MLPEncoder)
    action, *_ = agent.act(torch.from_numpy(obs))
    assert action.shape == (2, 8) and action.dtype == torch.float32
    venv.close()


def test_envs_are_unavailable_without_mujoco_and_making_one_says_how_to_install():
    rows, error = assert_unavailable_without(["mujoco/hopper", "mujoco/humanoid"], hide=["mujoco"], made="hopper")
    assert "pip install -c tank/constraints.txt 'mujoco==3.3.7'" in rows["mujoco/humanoid"]["reason"]
    assert error.startswith("Error: env 'mujoco/hopper' is unavailable: missing mujoco==3.3.7")


def test_info_shows_spaces_and_the_pin():
    data = info_json("halfcheetah")
    assert data["action_space"] == "Box(-1.0, 1.0, (6,), float32)"
    assert data["requires"] == {"mujoco==3.3.7": "3.3.7"}


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("hopper", tmp_path / "run", total_steps=2048, num_envs=2)
