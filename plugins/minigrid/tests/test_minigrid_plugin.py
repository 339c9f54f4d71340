"""The MiniGrid plugin: names, mission bytes, conformance, encoder, missing-dependency errors, smoke training."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from pufferbox_minigrid.plugin import MISSION_BYTES, TASKS, encode_mission, env_name, make_minigrid
from pufferbox_minigrid.policy import MiniGridEncoder

import pufferbox.vector
from pufferbox.api import get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train


def test_every_task_is_a_minigrid_id_under_a_lowercase_name():
    import minigrid

    gymnasium.register_envs(minigrid)
    assert all(gym_id in gymnasium.registry for gym_id in TASKS)
    assert env_name("MiniGrid-DoorKey-5x5-v0") == "minigrid/doorkey-5x5"
    assert env_name("BabyAI-GoToRedBall-v0") == "babyai/gotoredball"
    for gym_id in TASKS:
        assert get_registry().get(env_name(gym_id)).build.kwargs == {"gym_id": gym_id}


def test_mission_is_utf8_bytes_zero_padded_and_cut_at_the_limit():
    assert bytes(encode_mission("go to the red ball")).rstrip(b"\0") == b"go to the red ball"
    long = encode_mission("x" * (MISSION_BYTES + 40))
    assert long.shape == (MISSION_BYTES,) and long.dtype == np.uint8 and (long == ord("x")).all()


def test_observation_carries_the_raw_envs_grid_direction_and_mission():
    env, raw = make_minigrid("BabyAI-GoToLocal-v0"), gymnasium.make("BabyAI-GoToLocal-v0")
    obs, _ = env.reset(seed=5)
    ref, _ = raw.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(30):
        np.testing.assert_array_equal(obs["image"], ref["image"])
        assert obs["direction"] == ref["direction"]
        assert bytes(obs["mission"]).rstrip(b"\0").decode() == ref["mission"]
        action = int(rng.integers(7))
        obs, r1, t1, u1, _ = env.step(action)
        ref, r2, t2, u2, _ = raw.step(action)
        assert (r1, t1, u1) == (r2, t2, u2)
    assert obs in env.observation_space


@pytest.mark.parametrize("name", ["minigrid/doorkey-5x5", "minigrid/fourrooms", "babyai/gotolocal"])
def test_pufferbox_conformance_suite_passes(name):
    assert_conforms(get_registry().get(name), steps=100)


def test_encoder_reads_the_mission_on_a_batch_from_the_vector_env():
    venv = pufferbox.vector.make("babyai/gotolocal", backend="serial", num_envs=2)
    obs, _ = venv.reset(seed=0)
    encoder = MiniGridEncoder(venv.obs_spec, venv.act_spec, hidden_size=64)
    out = encoder(torch.from_numpy(obs))
    assert out.shape == (2, 64) and torch.isfinite(out).all()
    out.sum().backward()
    assert encoder.char_embedding.weight.grad.abs().sum() > 0, "the mission must reach the features"
    assert encoder.cell_embedding.weight.grad.abs().sum() > 0
    # Two rows that differ only in their mission bytes get different features.
    other = obs.copy()
    sample = venv.obs_spec.unflatten(obs[1:2])
    sample = {key: value[0] for key, value in sample.items()}
    sample["mission"] = encode_mission("pick up the purple key")
    venv.obs_spec.write(other, 1, sample)
    assert not np.array_equal(other[1], obs[1])
    with torch.no_grad():
        a, b = encoder(torch.from_numpy(obs)), encoder(torch.from_numpy(other))
    assert torch.equal(a[0], b[0]) and not torch.allclose(a[1], b[1])
    venv.close()


def test_trainer_picks_the_minigrid_encoder_by_default():
    from pufferbox.api import build_agent, resolve

    spec = get_registry().get("minigrid/doorkey-5x5")
    venv = pufferbox.vector.make("minigrid/doorkey-5x5", backend="serial", num_envs=1)
    agent = build_agent(venv.obs_spec, venv.act_spec, {"hidden_size": 32}, resolve(spec.training.policy))
    assert isinstance(agent.encoder, MiniGridEncoder)
    venv.close()


def test_envs_are_unavailable_without_minigrid_and_making_one_says_how_to_install():
    rows, error = assert_unavailable_without(["minigrid/doorkey-5x5", "babyai/bosslevel"], hide=["minigrid"])
    assert "pip install -c tank/constraints.txt 'minigrid==3.2.0'" in rows["babyai/bosslevel"]["reason"]
    assert error.startswith("Error: env 'minigrid/doorkey-5x5' is unavailable: missing minigrid==3.2.0")


def test_info_shows_the_dict_space_and_pinned_version():
    data = info_json("minigrid/doorkey-5x5")
    assert "mission" in data["observation_space"] and "Box(0, 255, (160,), uint8)" in data["observation_space"]
    assert data["action_space"] == "Discrete(7)"
    assert data["requires"] == {"minigrid==3.2.0": "3.2.0"}


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("minigrid/doorkey-5x5", tmp_path / "run", total_steps=2 * 128, num_envs=2)  # one update
