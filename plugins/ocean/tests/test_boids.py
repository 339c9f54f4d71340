"""Boids' rules: separation, alignment and cohesion rewards, the margin, steering and walls, the nearest
boids' observation, crashes and the time limit, bad settings (the C block's equality with this
reference is test_games')."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.games.boids import Boids, K, N

STILL = {f"boid_{i}": [0.0, 0.0] for i in range(N)}


def spread(**kwargs) -> Boids:
    """Every boid still, 200 apart on an 8 x 8 grid of a 2000 x 2000 arena: nobody sees anybody."""
    env = Boids(width=2000, height=2000, **kwargs)
    env.reset(seed=0)
    for i in range(N):
        env.x[i], env.y[i] = 100.0 + 200.0 * (i % 8), 100.0 + 200.0 * (i // 8)
        env.vx[i] = env.vy[i] = 0.0
    return env


def test_alone_a_boid_pays_the_centering_factor_and_crowded_it_pays_for_separation():
    env = spread(centering_factor=0.5)
    env.x[1], env.y[1] = env.x[0] + 10.0, env.y[0]  # inside the protected range (20) of boid 0
    _, rewards, *_ = env.step(STILL)
    assert rewards["boid_0"] == rewards["boid_1"] == np.float32(-0.2 - 0.5)  # one crowding boid of 5; alone
    assert rewards["boid_5"] == -0.5


def test_flockmates_pull_toward_their_velocity_and_centre():
    env = spread()
    env.x[1], env.y[1] = env.x[0] + 50.0, env.y[0]  # in the visual band (20..100)
    env.vx[0], env.vx[1] = 1.0, 3.0
    env.x[0] -= 1.0  # it moves 1 this step, boid 1 moves 3: 50 apart after the step
    env.x[1] -= 3.0
    _, rewards, *_ = env.step(STILL)
    alignment, cohesion = 2.0 / 20.0, 50.0 / 200.0  # |3 - 1| / (4 x cap), distance / (2 x visual range)
    assert rewards["boid_0"] == rewards["boid_1"] == np.float32(-alignment - cohesion)


def test_the_margin_band_pays_each_axis_inside_and_charges_it_outside():
    env = spread(centering_factor=0.0, margin_factor=0.25, margin=150)
    _, rewards, *_ = env.step(STILL)
    assert rewards["boid_0"] == -0.5  # (100, 100): both axes outside the band
    assert rewards["boid_9"] == 0.5  # (300, 300): both inside
    assert rewards["boid_1"] == 0.0  # (300, 100): one of each


def test_actions_accelerate_up_to_the_cap_and_walls_stop_the_boid():
    env = spread(acceleration=2.0, walls=1)
    actions = dict(STILL, boid_0=[1.0, -0.5], boid_1=[9.0, 0.0])  # past 1 is clipped to 1
    env.step(actions)
    assert (env.vx[0], env.vy[0]) == (2.0, -1.0) and (env.x[0], env.y[0]) == (102.0, 99.0)
    assert env.vx[1] == 2.0
    for _ in range(3):
        env.step(actions)
    assert env.vx[0] == 5.0 and env.vy[0] == -4.0  # velocity_cap 5 per axis
    for _ in range(30):
        env.step(actions)
    assert env.y[0] == 0.0  # clipped at the wall


def test_the_arena_wraps_around_and_boids_see_each_other_across_its_edges():
    env = spread()
    env.x[0], env.vx[0] = 1.0, -3.0
    env.x[7], env.y[7] = 1990.0, env.y[0]
    obs, *_ = env.step(STILL)
    assert env.x[0] == 1998.0  # 1 - 3 wrapped
    np.testing.assert_array_equal(obs["boid_0"][4:6], np.float32([-0.08, 0.0]))  # boid 7, 8 to its left


def test_a_boid_sees_its_nearest_boids_nearest_first_relative_and_clipped():
    env = spread()
    env.x[1], env.y[1] = env.x[0] + 30.0, env.y[0]
    env.x[8], env.y[8] = env.x[0], env.y[0] + 10.0
    env.vx[8] = 2.5
    env.x[8] -= 2.5
    obs, *_ = env.step(STILL)
    row = obs["boid_0"]
    assert row.shape == (4 + 4 * K,)
    np.testing.assert_array_equal(row[:4], np.float32([100 / 2000 * 2 - 1, 100 / 2000 * 2 - 1, 0.0, 0.0]))
    np.testing.assert_array_equal(row[4:8], np.float32([0.0, 0.1, 0.5, 0.0]))  # boid 8: 10 below, the nearest
    np.testing.assert_array_equal(row[8:12], np.float32([0.3, 0.0, 0.0, 0.0]))  # then boid 1, 30 to the right
    assert row[12] == 2.0 and row[13] == 2.0  # boid 9, 200 right and 200 down (boid 1 left its place)
    env.x[2] = 1900.0
    obs, *_ = env.step(STILL)
    assert obs["boid_0"][4:].max() <= 4.0  # far boids clip at 4 visual ranges


def test_a_crash_ends_the_episode_and_otherwise_the_time_limit_truncates():
    env = spread(crash_range=5, max_steps=3)
    env.x[1], env.y[1] = env.x[0] + 3.0, env.y[0]
    _, rewards, terms, truncs, infos = env.step(STILL)
    assert all(terms.values()) and not any(truncs.values())
    assert rewards["boid_0"] == np.float32(-0.2 - 1.0 - 1.0) and rewards["boid_5"] == -1.0  # crashed: -1 more
    assert infos["boid_0"]["crashed"] == 1.0
    env = spread(max_steps=3)
    results = [env.step(STILL) for _ in range(3)]
    assert not any(results[1][3].values()) and all(results[2][3].values()) and not any(results[2][2].values())
    info = results[2][4]["boid_0"]
    assert info == {"crowded": 0.0, "alone": 1.0, "outside_margin": 0.0, "crashed": 0.0}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"width": 0}, "boids: width must be >= 1, got 0"),
        ({"margin": 400}, "boids: margin must be between 0 and 359, got 400"),
        ({"avoid_factor": -1.0}, "boids: avoid_factor must be a number >= 0, got -1.0"),
        ({"matching_factor": 0.0005}, "boids: matching_factor must be a multiple of 0.001 up to 1000, got 0.0005"),
        ({"crash_range": 1.5}, "boids: crash_range must be an integer, got 1.5"),
        ({"walls": 2}, "boids: walls must be between 0 and 1, got 2"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        Boids(**kwargs)
    assert "\n" not in str(info.value)
