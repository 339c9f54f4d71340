"""Asteroids' rules: thrust with inertia and wrap-around, limited bullets with a lifetime, rocks that
split and score 20/50/100, a rock that hits the ship costs a life, a cleared field brings a new wave
(the C game equals this reference bit for bit: test_games.py)."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.games.asteroids import (
    BULLET_LIFE,
    BULLETS,
    FIRE_DELAY,
    HALF,
    INVULNERABLE,
    MASK,
    PX,
    SHIP_R,
    Asteroids,
    radius,
)

NOOP, FIRE, THRUST, RIGHT = 0, 1, 2, 3


def empty_field(**kwargs) -> Asteroids:
    """A game with one still large rock far from the ship (so the field never clears by itself)."""
    env = Asteroids(**kwargs)
    env.reset(seed=0)
    env.rocks = [[0, HALF, 0, 0, 2]]
    return env


def test_thrust_keeps_momentum_and_the_field_wraps():
    env = empty_field(frameskip=1)
    env.step(THRUST)  # pointing up: y decreases
    assert env.vx == 0 and env.vy == (-256 * 24 >> 8) - ((-256 * 24 >> 8) >> 7)
    vy = env.vy
    env.step(NOOP)
    assert env.vy == vy - (vy >> 7) and env.vy < 0  # coasting, a little friction
    env.y = 10
    env.vy = -100
    env.step(NOOP)
    assert env.y == (10 + env.vy) & MASK and env.y > HALF  # through the top, back at the bottom


def test_bullets_are_limited_and_expire():
    env = empty_field(frameskip=1)
    env.rocks = [[0, 0, 0, 0, 2]]  # behind the field's far corner: out of the bullets' reach
    fired = 0
    for _ in range(FIRE_DELAY * BULLETS + 8):
        env.step(FIRE)
        fired = max(fired, sum(1 for b in env.bullets if b[4]))
    assert fired == BULLETS
    for _ in range(BULLET_LIFE):
        env.step(NOOP)
    assert all(b[4] == 0 for b in env.bullets)


def test_a_bullet_splits_a_large_rock_into_two_medium_ones_then_small_then_gone():
    env = empty_field(frameskip=1)
    env.rocks = [[HALF, HALF - 20 * PX, 0, 0, 2]]  # straight ahead, 20 pixels
    points = []
    for _ in range(10):
        _, reward, *_ = env.step(FIRE)
        if reward:
            points.append(round(reward * 100))
            break
    assert points == [20] and [r[4] for r in env.rocks] == [1, 1]
    assert env.score == 20
    score = env.split(0) + env.split(0)  # a medium one: two small ones; one small one vanishes
    assert score == 50 + 100 and [r[4] for r in env.rocks] == [0, 1]


def test_a_rock_costs_a_life_the_ship_comes_back_invulnerable_and_the_last_life_ends():
    env = empty_field(frameskip=1, lives=2)
    env.rocks = [[HALF + radius(2) + SHIP_R - PX, HALF, 0, 0, 2], [0, 0, 0, 0, 2]]
    _, reward, terminated, *_ = env.step(NOOP)
    assert not terminated and env.lives_left == 1 and env.deaths == 1 and reward == np.float32(0.2)
    assert env.invulnerable == INVULNERABLE and (env.x, env.y, env.vx, env.vy) == (HALF, HALF, 0, 0)
    env.rocks.append([HALF, HALF, 0, 0, 0])
    env.step(NOOP)
    assert env.lives_left == 1  # invulnerable
    env.invulnerable = 0
    _, _, terminated, truncated, info = env.step(NOOP)
    assert terminated and not truncated and info["deaths"] == 2.0


def test_a_cleared_field_brings_the_next_wave():
    env = empty_field(frameskip=1)
    env.rocks = [[HALF, HALF - 20 * PX, 0, 0, 0]]
    for _ in range(10):
        env.step(FIRE)
        if env.wave == 2:
            break
    assert env.wave == 2 and len(env.rocks) == 6 and all(r[4] == 2 for r in env.rocks)
    for x, y, *_ in env.rocks:  # none on top of the ship
        dx, dy = ((x - env.x + HALF) & MASK) - HALF, ((y - env.y + HALF) & MASK) - HALF
        assert dx * dx + dy * dy >= (64 * PX) ** 2


def test_the_observation_sees_the_nearest_rocks_in_the_ship_frame():
    env = empty_field()
    env.rocks = [[HALF + 40 * PX, HALF, 0, 0, 2], [HALF, HALF - 10 * PX, 0, 0, 1]]
    obs = env.observe()
    assert obs[8] == 1.0 and obs[9] == np.float32(10 * PX * 256 / (HALF * 256))  # ahead (up), nearest first
    assert obs[13] == 0.5  # medium
    assert obs[14] == 1.0 and obs[15] == 0.0 and obs[16] != 0.0  # the other one abeam
    assert (obs[20:] == 0).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lives": 0}, "asteroids: lives must be between 1 and 9"),
        ({"frameskip": 9}, "asteroids: frameskip must be between 1 and 8"),
        ({"max_steps": 0}, "asteroids: max_steps must be >= 1"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        Asteroids(**kwargs)
    assert "\n" not in str(info.value)
