"""Pong's rules="pufferlib" (PufferLib 3.0's Pong, for same-rules comparisons): the serve, the spin a
return takes from the paddle's motion, a point ending the step, and the C block equal to the reference."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.pong import BOX_BALL, BOX_PADDLE_H, COURT_H, COURT_W, Pong


def test_the_serve_starts_from_the_scripted_side_toward_the_agent():
    env = Pong(rules="pufferlib")
    env.reset(seed=0)
    assert (env.ball_x, env.ball_y, env.vel_x) == (100.0, (COURT_H - BOX_BALL) / 2, 10.0)
    assert env.paddle == env.scripted == (COURT_H - BOX_PADDLE_H) / 2
    slopes = set()
    for seed in range(20):
        env.reset(seed=seed)
        slopes.add(env.vel_y)
    assert slopes == {-1.0, 0.0}


def test_a_return_takes_spin_from_the_paddles_direction_and_keeps_its_horizontal_speed():
    for action, vy in ((0, 2.0), (1, 5.0), (2, -1.0)):
        env = Pong(rules="pufferlib", frameskip=1)
        env.reset(seed=0)
        env.paddle, env.ball_x, env.ball_y, env.vel_x, env.vel_y = 300.0, COURT_W - BOX_BALL - 5.0, 310.0, 10.0, 2.0
        _, reward, *_ = env.step(action)
        assert env.vel_x == -10.0 and env.vel_y == vy and reward == np.float32(0.1)
    env.paddle, env.ball_x, env.vel_x, env.vel_y = 300.0, COURT_W - BOX_BALL - 5.0, 10.0, 12.0
    env.step(1)
    assert env.vel_y == 13.0  # at most 13
    env.paddle, env.ball_x, env.vel_x, env.vel_y = 300.0, COURT_W - BOX_BALL - 5.0, 10.0, -3.0
    env.step(1)
    assert env.vel_y == 3.0  # never a flat return


def test_a_point_ends_the_step_and_serves_again():
    env = Pong(rules="pufferlib", frameskip=8)
    env.reset(seed=0)
    env.paddle, env.ball_x, env.ball_y, env.vel_x, env.vel_y = 0.0, COURT_W - BOX_BALL - 5.0, 500.0, 10.0, 0.0
    _, reward, terminated, *_ = env.step(0)
    assert reward == -1.0 and not terminated and env.scripted_score == 1 and env.ball_x == 100.0
    env.scripted, env.ball_x, env.ball_y, env.vel_x = 500.0, 5.0, 20.0, -10.0
    _, reward, *_ = env.step(0)
    assert reward == 1.0 and env.score == 1


def test_bad_rules_are_one_line_errors():
    with pytest.raises(ValueError, match=r"pong: rules must be one of \['aim', 'pufferlib'\], got 'atari'"):
        Pong(rules="atari")


def test_c_block_equals_the_reference_under_pufferlibs_rules():
    n, seed, kwargs = 4, 3, {"rules": "pufferlib", "frameskip": 8, "max_score": 5, "max_steps": 150}
    block = GameBlock("pong", Pong, n, **kwargs)
    block.vec_reset(seed=seed)
    envs = [Pong(**kwargs) for _ in range(n)]
    obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    np.testing.assert_array_equal(block.buffers.observations, obs)
    rng, ends = np.random.default_rng(0), {"terminated": 0, "truncated": 0}
    for t in range(1200):
        follow = np.where(obs[:, 1] * COURT_H + 16 > obs[:, 4] * COURT_H, 1, 2)  # track the ball, now and then at random
        actions = np.where(rng.random(n) < 0.3, rng.integers(0, 3, n), follow).astype(np.int64)
        block.vec_step(actions)
        for i, env in enumerate(envs):
            obs[i], reward, terminated, truncated, _ = env.step(int(actions[i]))
            assert block.buffers.rewards[i] == np.float32(reward), t
            assert block.buffers.terminals[i] == terminated and block.buffers.truncations[i] == truncated, t
            if terminated or truncated:
                ends["terminated" if terminated else "truncated"] += 1
                obs[i] = env.reset()[0]
        np.testing.assert_array_equal(block.buffers.observations, obs, err_msg=f"step {t}")
    assert ends["terminated"] > 0 and ends["truncated"] > 0, ends
