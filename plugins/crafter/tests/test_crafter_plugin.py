"""The Crafter plugin: Gymnasium adaptation, achievement metrics, conformance, missing-dependency errors, smoke training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pufferbox_crafter.plugin import ACHIEVEMENTS, CrafterEnv, import_crafter

import pufferbox.vector
from pufferbox.api import CNNEncoder, build_agent, get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train


def run_episode(env: CrafterEnv, seed: int | None, actions: np.random.Generator) -> tuple[list, dict, bool, bool]:
    obs, _ = env.reset(seed=seed)
    frames = [obs]
    while True:
        obs, _, terminated, truncated, info = env.step(int(actions.integers(env.action_space.n)))
        frames.append(obs)
        if terminated or truncated:
            return frames, info, terminated, truncated


def test_achievement_names_match_crafter():
    assert tuple(sorted(import_crafter().constants.achievements)) == ACHIEVEMENTS


def test_final_info_reports_each_achievement_and_the_count_matching_crafter():
    env = CrafterEnv(length=300)
    _, info, terminated, truncated = run_episode(env, 0, np.random.default_rng(0))
    unlocked = env.crafter._player.achievements
    for name in ACHIEVEMENTS:
        assert info[f"achievement_{name}"] == float(unlocked[name] > 0)
    assert info["achievements"] == sum(unlocked[n] > 0 for n in ACHIEVEMENTS) > 0
    assert terminated != truncated


def test_truncation_at_the_length_limit_and_termination_on_death_are_distinguished():
    env = CrafterEnv(length=5)
    frames, _, terminated, truncated = run_episode(env, 1, np.random.default_rng(0))
    assert (terminated, truncated, len(frames)) == (False, True, 6)
    env = CrafterEnv(length=10_000)
    env.reset(seed=2)
    env.crafter._player.health = 0  # the next step sees a dead player, as Crafter decides it
    *_, terminated, truncated, info = env.step(0)
    assert (terminated, truncated) == (True, False) and "achievements" in info


def test_a_seed_fixes_the_episode_and_the_unseeded_ones_after_it():
    a, b = CrafterEnv(length=50), CrafterEnv(length=50)
    for seed in (3, None):
        fa, *_ = run_episode(a, seed, np.random.default_rng(1))
        fb, *_ = run_episode(b, seed, np.random.default_rng(1))
        assert all(np.array_equal(x, y) for x, y in zip(fa, fb))
    other, *_ = run_episode(CrafterEnv(length=50), 4, np.random.default_rng(1))
    first, *_ = run_episode(CrafterEnv(length=50), 3, np.random.default_rng(1))
    assert not np.array_equal(other[0], first[0])


@pytest.mark.slow  # about a minute: each of the suite's many env builds loads Crafter's textures
def test_pufferbox_conformance_suite_passes():
    assert_conforms(get_registry().get("crafter"), steps=100)


def test_achievements_become_named_episode_metrics_through_the_vector_env():
    venv = pufferbox.vector.make("crafter", backend="serial", num_envs=2, env_kwargs={"length": 20})
    venv.reset(seed=0)
    episodes = []
    for _ in range(21):
        venv.send(np.zeros(2, dtype=np.int64))
        episodes.append(venv.recv()[4])  # the episodes that ended, with the plugin's declared metrics
    finished = [e for e in episodes if len(e)]
    assert finished and sum(len(e) for e in finished) == 2
    metrics = finished[0].metrics
    assert {f"achievement_{name}" for name in ACHIEVEMENTS} | {"achievements"} == set(metrics)
    np.testing.assert_array_equal(metrics["achievements"], sum(metrics[f"achievement_{n}"] for n in ACHIEVEMENTS))
    venv.close()


def test_trainer_picks_its_cnn_for_the_frames():
    venv = pufferbox.vector.make("crafter", backend="serial", num_envs=2, env_kwargs={"length": 20})
    obs, _ = venv.reset(seed=0)
    agent = build_agent(venv.obs_spec, venv.act_spec, {"hidden_size": 64})
    assert isinstance(agent.encoder, CNNEncoder) and agent.encoder.channels_last
    out = agent.encoder(torch.from_numpy(obs))
    assert out.shape == (2, 64) and torch.isfinite(out).all()
    venv.close()


def test_envs_are_unavailable_without_crafter_and_making_one_says_how_to_install():
    rows, error = assert_unavailable_without(["crafter", "crafter/noreward"], hide=["crafter"])
    assert "pip install -c tank/constraints.txt 'crafter==1.8.3'" in rows["crafter"]["reason"]
    assert error.startswith("Error: env 'crafter' is unavailable: missing crafter==1.8.3")


def test_info_shows_frames_and_the_pin_without_gym_noise():
    from pufferbox.conformance.testing import run_cli

    data = info_json("crafter")
    assert data["observation_space"] == "Box(0, 255, (64, 64, 3), uint8)"
    assert data["action_space"] == "Discrete(17)"
    assert data["requires"] == {"crafter==1.8.3": "1.8.3"}
    assert "Gym has been unmaintained" not in run_cli("info", "crafter").stderr


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("crafter", tmp_path / "run", total_steps=2 * 128, num_envs=2)  # one update at the defaults' 128 steps
