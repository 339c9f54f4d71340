"""Enduro's full race: the quotas and the day's end, snow's slide, what night and fog hide, crashes, the
nine actions, and the C block step for step with the reference while driving (the random-action sweep in
test_games.py barely moves the car, so rivals seldom appear there)."""

from __future__ import annotations

import numpy as np
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.enduro_full import CAR_LEN, CRASH_FRAMES, FOG_SIGHT, HEAD, HORIZON, LANE_W, MAX_CARS, EnduroFull


def empty_road(seed: int = 0, **kwargs) -> EnduroFull:
    """A race reset with ``seed`` and its starting field cleared."""
    env = EnduroFull(**kwargs)
    env.reset(seed=seed)
    env.active = [False] * MAX_CARS
    return env


def place(env: EnduroFull, slot: int, lane: int, y: int, speed: int) -> None:
    env.active[slot] = True
    env.car_x[slot], env.car_y[slot], env.car_speed[slot] = lane * LANE_W + LANE_W // 2, y, speed


def test_defaults_are_the_full_race():
    env = EnduroFull()
    assert (env.quota, env.quota_later, env.day_frames, env.lanes) == (200, 300, 13_920, 3)
    assert env.action_space.n == 9


def test_the_c_block_drives_the_reference_s_race_step_for_step():
    kwargs = {"quota": 2, "quota_later": 3, "day_frames": 800, "frameskip": 2, "max_steps": 2400}
    n, seed = 4, 5
    block = GameBlock("enduro_full", EnduroFull, n, **kwargs)
    block.vec_reset(seed=seed)
    envs = [EnduroFull(**kwargs) for _ in range(n)]
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    rng = np.random.default_rng(0)
    ended, crashes, days = 0, 0, 0
    for t in range(1500):  # mostly accelerating, steering at random: passes, crashes, snow and fog
        actions = np.where(rng.random(n) < 0.85, rng.choice([1, 7, 8], n), rng.integers(0, 9, n)).astype(np.int64)
        block.vec_step(actions[:, None])
        for i, env in enumerate(envs):
            obs, reward, terminated, truncated, _ = env.step(int(actions[i]))
            b = block.buffers
            assert b.rewards[i] == reward and b.terminals[i] == terminated and b.truncations[i] == truncated, (t, i)
            crashes, days = max(crashes, env.crashes), max(days, env.days)
            if terminated or truncated:
                ended += 1
                obs = env.reset()[0]
            np.testing.assert_array_equal(b.observations[i], obs, err_msg=f"step {t} env {i}")
    assert ended > 0 and crashes > 0 and days > 0


def test_a_day_won_stays_won_and_one_lost_ends_the_race():
    env = empty_road(quota=2, day_frames=40, frameskip=1)
    env.today = 1
    place(env, 0, 0, 100, 96)  # just ahead in the next lane, slower: passed in the next frame
    env.speed = 256
    env.step(0)
    assert env.today == 2 and env.won
    env.today = -3  # being passed afterwards does not undo it
    while env.days == 0:
        _, _, terminated, _, _ = env.step(0)
        assert not terminated
    assert (env.today, env.won, env.quota_today()) == (0, False, 300)
    env = empty_road(quota=2, day_frames=40, frameskip=1)
    results = [env.step(0) for _ in range(40)]
    assert [r[2] for r in results] == [False] * 39 + [True]


def test_snow_makes_the_car_slide_where_dry_road_does_not():
    dry = empty_road()
    x = dry.x
    dry.step(2)
    assert dry.x == x + 4 * 4  # four frames of steering right
    dry.step(0)
    assert dry.x == x + 16  # no steering, no motion
    snow = empty_road()
    snow.day_frame = snow.day_frames * 4 // 16  # the snow's first frame
    assert snow.phase() == "snow"
    x = snow.x
    snow.step(2)
    assert snow.x == x + 1 + 2 + 3 + 4 and snow.drift == 4
    snow.step(0)  # the drift carries on and fades slowly: by 1 every 4 frames
    assert snow.x == x + 10 + 4 * 3 and snow.drift == 3


def test_night_hides_the_curve_and_fog_the_far_rivals():
    env = empty_road(frameskip=1)
    env.curve, env.curve_left = 1, 1000
    place(env, 0, 0, FOG_SIGHT + 2000, 96)
    place(env, 1, 2, FOG_SIGHT - 1000, 96)
    env.day_frame = env.day_frames * 8 // 16  # night
    obs, *_ = env.step(0)
    assert env.phase() == "night" and obs[3] == 0.0 and obs[HEAD] == obs[HEAD + 4] == 1.0
    env.day_frame = env.day_frames * 12 // 16  # fog: only the near rival is seen
    obs, *_ = env.step(0)
    assert env.phase() == "fog" and obs[3] == 0.0 and obs[HEAD] == 1.0 and obs[HEAD + 4] == 0.0
    assert abs(obs[HEAD + 2] - env.car_y[1] / HORIZON) < 1e-6
    env.day_frame = 0
    obs, *_ = env.step(0)
    assert env.phase() == "day" and obs[3] == 1.0


def test_a_crash_stops_the_car_and_kills_the_controls():
    env = empty_road(frameskip=1)
    env.speed = 200
    place(env, 0, 1, CAR_LEN + 50, 96)  # your lane, just ahead and slower
    env.step(1)
    assert env.crashes == 1 and env.speed == 0 and env.stunned == CRASH_FRAMES and env.car_y[0] == CAR_LEN
    x = env.x
    for _ in range(CRASH_FRAMES):
        env.step(7)  # accelerate right: ignored
    assert env.speed == 0 and env.x == x
    env.step(7)
    assert env.speed == 2 and env.x == x + 4


def test_being_passed_costs_what_passing_earns():
    env = empty_road(frameskip=1)
    place(env, 0, 0, -CAR_LEN - 200, 176)  # behind you in the next lane and faster
    rewards = [env.step(0)[1] for _ in range(10)]
    assert sum(rewards) == -1 and env.today == -1
    env.speed = 256
    rewards = [env.step(1)[1] for _ in range(40)]  # too soon for a new rival to reach you
    assert sum(rewards) == 1 and env.today == 0


def test_rivals_are_listed_ahead_nearest_first_then_behind():
    env = empty_road(frameskip=1)
    for slot, y in enumerate((5000, -400 - CAR_LEN, 2000, -2000)):
        place(env, slot, slot % 3, y, 96)  # speed 96 against yours 0: each moves 96 in the frame
    obs, *_ = env.step(0)
    listed = [round(float(obs[HEAD + 4 * k + 2]) * HORIZON) for k in range(MAX_CARS) if obs[HEAD + 4 * k]]
    assert listed == [2096, 5096, -1304, -1904]
