"""Breakout's rules: a brick scores its row's points and bounces the ball, a lost ball costs a life,
the last brick ends the episode."""

from __future__ import annotations

from pufferbox_ocean.games.breakout import COLS, ROWS, Breakout


def test_a_brick_scores_its_rows_points_and_bounces_the_ball():
    env = Breakout(frameskip=1)
    env.reset(seed=0)
    env.ball_x, env.ball_y, env.vel_x, env.vel_y = 0.5, 0.1 + 6 * 0.04 + 0.005, 0.0, -0.012  # under the wall
    _, reward, *_ = env.step(0)
    assert reward == 1.0 and env.bricks[5][6] == 0 and env.vel_y > 0.0
    env.bricks = [[0] * COLS for _ in range(ROWS)]
    env.bricks[0][0] = 1
    env.broken = ROWS * COLS - 1
    env.ball_x, env.ball_y, env.vel_x, env.vel_y = 0.04, 0.095, 0.0, 0.012  # just above the top row
    _, reward, terminated, truncated, info = env.step(0)
    assert reward == 7.0 and terminated and not truncated and info["cleared"] == 1.0


def test_a_missed_ball_costs_a_life_and_the_last_one_ends_the_game():
    env = Breakout(lives=2, frameskip=1)
    env.reset(seed=0)
    env.paddle, env.ball_x, env.ball_y, env.vel_x, env.vel_y = 0.1, 0.9, 0.99, 0.0, 0.012
    _, _, terminated, _, _ = env.step(0)
    assert env.lives_left == 1 and not terminated and env.ball_y == 0.4  # served again
    env.paddle, env.ball_x, env.ball_y, env.vel_x, env.vel_y = 0.1, 0.9, 0.99, 0.0, 0.012
    _, _, terminated, _, info = env.step(0)
    assert terminated and info["score"] == 0.0


def test_the_paddle_returns_the_ball_upward():
    env = Breakout(frameskip=1)
    env.reset(seed=0)
    env.paddle, env.ball_x, env.ball_y, env.vel_x, env.vel_y = 0.5, 0.52, 0.945, 0.0, 0.012
    env.step(0)
    assert env.vel_y < 0.0 and env.vel_x > 0.0 and env.lives_left == 5
