"""Enduro's rules: a pass pays +1, being passed costs 1, a crash stops the car, a missed quota ends the race."""

from __future__ import annotations

from pufferbox_ocean.games.enduro import CAR_LEN, LANE_W, MAX_CARS, Enduro


def empty_road(**kwargs) -> Enduro:
    env = Enduro(**kwargs)
    env.reset(seed=0)
    env.active = [False] * MAX_CARS
    env.gap = 10**9  # no new rivals
    return env


def put_rival(env: Enduro, lane: int, y: int, speed: int) -> None:
    env.active[0], env.car_x[0], env.car_y[0], env.car_speed[0] = True, lane * LANE_W + LANE_W // 2, y, speed


def test_passing_a_rival_in_another_lane_pays_one_and_being_passed_costs_one():
    env = empty_road()
    env.speed = 12
    put_rival(env, 0, 5, 3)  # the next lane to the left, just ahead, much slower
    assert env.step(0)[1] == 1.0 and env.passed == 1
    env.speed = 0
    env.car_y[0] = -2  # now it drives past the stopped car
    assert env.step(0)[1] == -1.0 and env.passed == 0


def test_a_crash_stops_the_car_and_shoves_the_rival_ahead():
    env = empty_road()
    env.speed = 12
    put_rival(env, 1, CAR_LEN + 4, 3)  # the player's own lane
    _, reward, *_ = env.step(0)
    assert reward == 0.0 and env.speed == 0 and env.car_y[0] == CAR_LEN


def test_a_day_that_misses_its_quota_ends_the_race_and_one_that_makes_it_goes_on():
    env = empty_road(quota=1, day_steps=3)
    for _ in range(2):
        assert env.step(0)[2] is False
    env.today = 1
    obs, _, terminated, truncated, _ = env.step(0)
    assert not terminated and env.days == 1 and env.day_left == 3 and obs[-1] == 1.0
    for _ in range(2):
        env.step(0)
    _, _, terminated, truncated, info = env.step(0)
    assert terminated and not truncated and info == {"passed": 0.0, "days": 1.0}
