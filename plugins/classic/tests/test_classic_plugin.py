"""The classic plugin's non-CartPole envs: registration, conformance, Box2D's missing-package status, smoke training."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from pufferbox_classic.plugin import CLASSIC

from pufferbox.api import get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train

NAMES = [row[0] for row in CLASSIC]
BOX2D = ["lunarlander", "lunarlander_continuous", "bipedalwalker"]


def test_every_env_wraps_its_gymnasium_id_with_its_kwargs():
    expected = {
        "acrobot": ("Acrobot-v1", gymnasium.spaces.Discrete(3)),
        "mountaincar": ("MountainCar-v0", gymnasium.spaces.Discrete(3)),
        "mountaincar_continuous": ("MountainCarContinuous-v0", gymnasium.spaces.Box(-1, 1, (1,))),
        "pendulum": ("Pendulum-v1", gymnasium.spaces.Box(-2, 2, (1,))),
        "lunarlander": ("LunarLander-v3", gymnasium.spaces.Discrete(4)),
        "lunarlander_continuous": ("LunarLander-v3", gymnasium.spaces.Box(-1, 1, (2,))),
        "bipedalwalker": ("BipedalWalker-v3", gymnasium.spaces.Box(-1, 1, (4,))),
    }
    assert sorted(expected) == sorted(NAMES)
    for name, (gym_id, action_space) in expected.items():
        env = get_registry().get(name).make_raw()
        assert env.spec.id == gym_id and env.action_space == action_space, name
        env.close()


def test_solved_returns_and_defaults_are_valid_training_configs():
    from pufferbox.api import resolve_config

    solved = {name: get_registry().get(name).training.solved_return for name in NAMES}
    assert solved == {
        "acrobot": -100.0,
        "mountaincar": -110.0,
        "mountaincar_continuous": 90.0,
        "pendulum": -200.0,
        "lunarlander": 200.0,
        "lunarlander_continuous": 200.0,
        "bipedalwalker": 300.0,
    }
    for name in NAMES:
        threshold = gymnasium.spec(get_registry().get(name).build.kwargs["gym_id"]).reward_threshold
        assert threshold is None or threshold == solved[name], name  # Gymnasium's own bar where it has one
        cfg = resolve_config(plugin_defaults=get_registry().get(name).training.config)
        assert cfg["train"]["stop_on_solve"] is True


@pytest.mark.parametrize("name", NAMES)
def test_pufferbox_conformance_suite_passes(name):
    assert_conforms(get_registry().get(name), steps=100)


def test_continuous_lander_steps_the_same_as_gymnasium_in_lock_step():
    spec = get_registry().get("lunarlander_continuous")
    raw, emulated = gymnasium.make("LunarLander-v3", continuous=True), spec.make_emulated()
    obs_raw, _ = raw.reset(seed=3)
    flat, _ = emulated.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(100):
        np.testing.assert_array_equal(emulated.obs_spec.unflatten(flat[None])[0], obs_raw)
        action = rng.uniform(-1, 1, 2).astype(np.float32)
        obs_raw, r1, t1, u1, _ = raw.step(action)
        flat, r2, t2, u2, _ = emulated.step(action)
        assert (r1, t1, u1) == (r2, t2, u2)
        if t1 or u1:
            break


def test_box2d_envs_are_unavailable_without_box2d_and_classic_control_stays_ok():
    rows, error = assert_unavailable_without(BOX2D, hide=["Box2D"], made="lunarlander")
    for name in BOX2D:
        assert "pip install -c tank/constraints.txt 'Box2D==2.3.10'" in rows[name]["reason"]
    for name in ["cartpole", "acrobot", "mountaincar", "mountaincar_continuous", "pendulum"]:
        assert rows[name]["status"] == "ok", rows[name]
    assert error.startswith("Error: env 'lunarlander' is unavailable: missing Box2D==2.3.10")


def test_info_shows_the_box2d_pin():
    data = info_json("bipedalwalker")
    assert data["requires"] == {"Box2D==2.3.10": "2.3.10"}
    assert data["action_space"] == "Box(-1.0, 1.0, (4,), float32)"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lunarlander", "pendulum"])
def test_smoke_training_runs_on_cpu(tmp_path, name):
    smoke_train(name, tmp_path / "run", total_steps=2048, num_envs=2)
