"""Freeway's rules: a crossing pays and starts again at the bottom, a car pushes the chicken back a
lane and stuns it, the clock ends the game (the C game equals this reference bit for bit: test_games.py)."""

from __future__ import annotations

import numpy as np
from pufferbox_ocean.games.freeway import (
    BOTTOM,
    CHICKEN_X,
    DOWN,
    LANE_H,
    LANES,
    NOOP,
    PUSH,
    ROAD,
    SPEEDS,
    STUN,
    TOP,
    UP,
    Freeway,
)


def empty_road(**kwargs) -> Freeway:
    """A game whose cars all sit on the far side of the road, moving in step with the chicken's column."""
    env = Freeway(noop_max=0, **kwargs)
    env.reset(seed=0)
    env.car_x = [(CHICKEN_X + ROAD // 2) % ROAD] * LANES
    return env


def test_reaching_the_top_pays_one_and_starts_again_at_the_bottom():
    env = empty_road()
    _, reward, *_ = env.step(UP)
    assert env.y == 4 and reward == np.float32(4 / TOP)  # the progress term: the height gained / TOP
    env.y = TOP - 2
    _, reward, *_ = env.step(UP)  # frames: TOP - 1, TOP (a crossing: back to 0), 1, 2
    assert env.score == 1 and env.y == 2
    assert reward == np.float32(1 + (2 - (TOP - 2)) / TOP)  # +1, and the climb given back
    _, reward, *_ = env.step(DOWN)
    assert env.y == 0 and reward == np.float32(-2 / TOP)  # never below the start


def test_a_car_pushes_the_chicken_back_half_a_lane_and_stuns_it():
    env = empty_road()
    lane = 3
    y0 = BOTTOM + lane * LANE_H + 5
    env.y = y0
    env.car_x[lane] = CHICKEN_X - SPEEDS[lane]  # reaches the chicken's column on the next frame
    obs, reward, *_ = env.step(UP)
    assert env.hits == 1 and env.y == y0 + 1 - PUSH  # up one pixel, hit on that first frame: pushed back
    assert reward == np.float32((1 - PUSH) / TOP)
    assert env.stun == STUN - 3 and obs[1] == np.float32((STUN - 3) / STUN)
    env.car_x = [(CHICKEN_X + ROAD // 2) % ROAD] * LANES
    env.step(UP)
    assert env.y == y0 + 1 - PUSH and env.stun == STUN - 7  # stunned: up does nothing
    env.step(UP)
    assert env.stun == 0 and env.y == y0 + 1 - PUSH + 3


def test_the_clock_ends_the_game_after_duration_steps_minus_the_noops():
    env = Freeway(duration=20, noop_max=0)
    env.reset(seed=1)
    for _ in range(19):
        assert env.step(NOOP)[2:4] == (False, False)
    _, _, terminated, truncated, info = env.step(NOOP)
    assert terminated and not truncated and info == {"score": 0.0, "hits": 0.0}
    lengths = set()
    env = Freeway(duration=20, noop_max=5, max_steps=100)
    for seed in range(40):
        obs, _ = env.reset(seed=seed)
        steps = 1
        while not env.step(NOOP)[2]:
            steps += 1
        lengths.add(steps)
        assert obs[2] == np.float32(steps / 20)  # the clock left after the no-ops
    assert lengths == set(range(15, 21))


def test_max_steps_truncates_before_the_clock():
    env = Freeway(duration=2048, noop_max=0, max_steps=10)
    env.reset(seed=2)
    for _ in range(9):
        env.step(UP)
    _, _, terminated, truncated, info = env.step(UP)
    assert truncated and not terminated and set(info) == {"score", "hits"}
