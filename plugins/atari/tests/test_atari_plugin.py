"""The Atari plugin: names, preprocessing, flattening, encoder, missing-dependency errors, smoke training."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from pufferbox_atari.plugin import GAMES, MULTIPLAYER_ONLY, make_atari
from pufferbox_atari.policy import NatureCNN

import pufferbox.vector
from pufferbox.api import get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train


def test_every_single_player_rom_is_registered_under_its_name_and_short_name():
    import ale_py.roms

    assert sorted(GAMES + MULTIPLAYER_ONLY) == sorted(ale_py.roms.get_all_rom_ids())
    registry = get_registry()
    for game in GAMES:
        assert registry.get(game) is registry.get(f"atari/{game}")
    ale_ids = {k for k in gymnasium.registry if k.startswith("ALE/")}
    from pufferbox_atari.plugin import gym_id

    assert all(gym_id(game) in ale_ids for game in GAMES)


def test_preprocessing_gives_stacked_84x84_grayscale_with_sticky_actions():
    env = make_atari("breakout")
    assert env.observation_space == gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    assert env.unwrapped._frameskip == 1
    assert env.unwrapped.ale.getFloat("repeat_action_probability") == 0.25
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(1)  # FIRE launches the ball
    assert obs.dtype == np.uint8 and obs.shape == (4, 84, 84) and obs[-1].any()
    env.close()


@pytest.mark.parametrize("game", ["backgammon", "video_checkers"])
def test_a_game_whose_action_0_is_not_noop_builds_without_noop_starts(game):
    env = make_atari(game)  # AtariPreprocessing's no-op starts need action 0 to be NOOP
    try:
        obs, _ = env.reset(seed=1)
        assert obs.shape == (4, 84, 84)
        assert env.unwrapped.get_action_meanings()[0] != "NOOP"
    finally:
        env.close()


def test_clipped_rewards_keep_the_raw_return_in_the_final_info():
    env = make_atari("breakout", clip_rewards=True)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    rewards = []
    for _ in range(5000):
        _, reward, terminated, truncated, info = env.step(int(rng.integers(4)))
        rewards.append(reward)
        if terminated or truncated:
            break
    assert terminated, "a random Breakout game (5 lives) ends within 5,000 steps"
    assert set(rewards) <= {-1.0, 0.0, 1.0}
    assert info["raw_episode_return"] >= sum(rewards) > 0  # Breakout bricks are worth 1 to 7 points
    env.close()


def test_episodic_life_ends_an_episode_per_life_and_the_game_goes_on_with_the_whole_games_score():
    env = make_atari("breakout", clip_rewards=True, episodic_life=True, fire_reset=True)
    ale = env.unwrapped.ale
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    lives_at_ends, clipped_total, scores = [], 0.0, []
    for _ in range(5000):
        _, reward, terminated, truncated, info = env.step(int(rng.integers(4)))
        clipped_total += reward
        if terminated or truncated:
            lives_at_ends.append(ale.lives())
            if "raw_episode_return" in info:
                scores.append(info["raw_episode_return"])
                break
            env.reset()  # a lost life: the game goes on from where it was
            assert ale.lives() == lives_at_ends[-1] > 0
    assert lives_at_ends == [4, 3, 2, 1, 0], "one episode per life, the raw score only with the game's last"
    assert scores and scores[0] >= clipped_total > 0  # the whole game's bricks, not the last life's
    env.reset()  # after game over: a new game with every life
    assert ale.lives() == 5
    env.close()


def test_fire_reset_launches_the_ball_only_in_games_that_have_fire():
    for fire_reset, frames_after_reset in ((False, 0), (True, 4)):  # FIRE is one agent step: 4 frames
        env = make_atari("breakout", fire_reset=fire_reset, noop_max=0)
        env.reset(seed=0)
        assert env.unwrapped.ale.getEpisodeFrameNumber() == frames_after_reset
        env.close()
    freeway = make_atari("freeway", fire_reset=True)  # NOOP, UP, DOWN: nothing to press
    assert not freeway.get_wrapper_attr("fire")
    freeway.close()


def test_vector_env_reports_the_whole_game_raw_score_with_each_episode():
    venv = pufferbox.vector.make("breakout", backend="serial", num_envs=2, env_kwargs={"clip_rewards": True})
    venv.reset(seed=1)
    rng, clipped, ended = np.random.default_rng(0), np.zeros(2), None
    for _ in range(5000):
        venv.send(rng.integers(4, size=2))
        _, rewards, _, _, episodes, _, _ = venv.recv()
        clipped += rewards
        if len(episodes):
            ended = episodes
            break
    venv.close()
    assert ended is not None, "a random Breakout game (5 lives) ends within 5,000 steps"
    raw = ended.metrics["raw_episode_return"]
    assert np.isfinite(raw).all() and (raw >= ended.returns).all()  # bricks are worth 1 to 7 points, clipped to 1
    assert (ended.returns == clipped[ended.env_ids]).all()


def test_gymnasium_conformance_of_the_binding():
    # The emulator's side of conformance is the lock-step test below (its reset does not seed
    # an own np_random, which check_env insists on).
    env = get_registry().get("breakout").make_raw()
    check_env(env, skip_render_check=True)
    env.close()


def test_pufferbox_conformance_suite_passes():
    assert_conforms(get_registry().get("breakout"), steps=100)


def test_flattened_observations_match_the_raw_env_in_lock_step():
    spec = get_registry().get("breakout")
    raw, emulated = spec.make_raw(), spec.make_emulated()
    obs_raw, _ = raw.reset(seed=7)
    flat, _ = emulated.reset(seed=7)
    rng = np.random.default_rng(1)
    for _ in range(60):
        np.testing.assert_array_equal(emulated.obs_spec.unflatten(flat[None])[0], obs_raw)
        action = int(rng.integers(4))
        obs_raw, r1, t1, u1, _ = raw.step(action)
        flat, r2, t2, u2, _ = emulated.step(action)
        assert (r1, t1, u1) == (r2, t2, u2)
        if t1 or u1:
            obs_raw, _ = raw.reset(seed=8)
            flat, _ = emulated.reset(seed=8)


def test_nature_cnn_on_a_batch_from_the_vector_env():
    venv = pufferbox.vector.make("breakout", backend="serial", num_envs=2)
    obs, _ = venv.reset(seed=0)
    for _ in range(3):
        obs, *_ = venv.step(np.ones(2, dtype=np.int64))
    encoder = NatureCNN(venv.obs_spec, venv.act_spec, hidden_size=64)
    out = encoder(torch.from_numpy(obs))
    assert out.shape == (2, 64) and encoder.hidden_size == 64 and torch.isfinite(out).all()
    out.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in encoder.parameters())
    venv.close()


def test_envs_lists_atari_as_unavailable_without_ale_py_and_making_one_says_how_to_install():
    rows, error = assert_unavailable_without(["atari/breakout"], hide=["ale_py"], made="breakout")
    assert "ale-py==0.12.1" in rows["atari/breakout"]["reason"]
    assert "pip install -c tank/constraints.txt 'ale-py==0.12.1'" in rows["atari/breakout"]["reason"]
    assert rows["cartpole"]["status"] == "ok" if "cartpole" in rows else True
    assert error.startswith("Error: env 'atari/breakout' is unavailable: missing ale-py")


def test_info_shows_spaces_and_pinned_versions():
    data = info_json("breakout")
    assert data["observation_space"] == "Box(0, 255, (4, 84, 84), uint8)"
    assert data["action_space"] == "Discrete(4)"
    assert data["requires"]["ale-py==0.12.1"] == "0.12.1"


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("breakout", tmp_path / "run", total_steps=2 * 128, num_envs=2)  # one update at the defaults' 128 steps
