"""The MiniHack plugin: names, NetHack observations, conformance, encoder, missing-dependency errors, smoke training."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from pufferbox_minihack.plugin import NAVIGATION, SKILLS, env_name, gym_id
from pufferbox_nethack.policy import NetHackEncoder

import pufferbox.vector
from pufferbox.api import build_agent, get_registry, resolve
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train


def test_every_task_is_a_minihack_id_under_a_lowercase_name():
    import minihack

    gymnasium.register_envs(minihack)
    for task in NAVIGATION + SKILLS:
        assert gym_id(task) in gymnasium.registry, task
        assert get_registry().get(env_name(task)).build.kwargs == {"gym_id": gym_id(task)}
    assert env_name("Room-5x5") == "minihack/room-5x5"


def test_observation_is_the_nethack_plugins_and_matches_minihack():
    spec = get_registry().get("minihack/room-5x5")
    env = spec.make_raw()
    raw = gymnasium.make("MiniHack-Room-5x5-v0", observation_keys=("glyphs", "blstats", "message"))
    assert env.observation_space == raw.observation_space
    obs, _ = env.reset(seed=4)
    core, disp = np.random.SeedSequence(4).generate_state(2, np.uint64).tolist()
    raw.unwrapped.seed(core=core, disp=disp, reseed=False)  # what the wrapper's seeded reset does
    ref, _ = raw.reset()
    for _ in range(20):
        for key in ("glyphs", "blstats", "message"):
            np.testing.assert_array_equal(obs[key], ref[key])
        obs, r1, t1, u1, _ = env.step(1)
        ref, r2, t2, u2, _ = raw.step(1)
        assert (r1, t1, u1) == (r2, t2, u2)
        if t1 or u1:
            break
    env.close()
    raw.close()


@pytest.mark.parametrize("name", ["minihack/room-5x5", "minihack/keyroom-s5", "minihack/river", "minihack/eat"])
def test_pufferbox_conformance_suite_passes(name):
    assert_conforms(get_registry().get(name), steps=100)


def test_default_policy_is_the_nethack_encoder_on_a_vector_batch():
    spec = get_registry().get("minihack/corridor-r2")
    venv = pufferbox.vector.make(spec, backend="serial", num_envs=2)
    obs, _ = venv.reset(seed=0)
    agent = build_agent(venv.obs_spec, venv.act_spec, {"hidden_size": 32}, resolve(spec.training.policy))
    assert isinstance(agent.encoder, NetHackEncoder)
    action, *_ = agent.act(torch.from_numpy(obs))
    assert action.shape == (2,) and int(action.max()) < venv.act_spec.space.n
    venv.close()


def test_envs_are_unavailable_without_minihack_and_making_one_says_how_to_install():
    rows, error = assert_unavailable_without(["minihack/room-5x5", "minihack/eat"], hide=["minihack"])
    assert "pip install -c tank/constraints.txt 'minihack==1.0.2'" in rows["minihack/eat"]["reason"]
    assert rows["nethack"]["status"] == "ok"
    assert error.startswith("Error: env 'minihack/room-5x5' is unavailable: missing minihack==1.0.2")


def test_without_pkg_resources_the_backport_is_named():
    # setuptools >= 82 dropped pkg_resources, which minihack 1.0.2 imports.
    rows, error = assert_unavailable_without(["minihack/room-5x5"], hide=["pkg_resources"])
    assert "'pkg-resources-backport==1.0.1'" in rows["minihack/room-5x5"]["reason"]
    assert "missing pkg-resources-backport==1.0.1" in error


def test_info_shows_the_pins():
    data = info_json("minihack/room-5x5")
    assert data["requires"] == {"nle==1.3.0": "1.3.0", "minihack==1.0.2": "1.0.2", "pkg-resources-backport==1.0.1": "1.0.1"}


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("minihack/room-5x5", tmp_path / "run", total_steps=2 * 128, num_envs=2)  # one update
