"""Enduro, simplified: pass enough rival cars each day; the readable reference of ``c/enduro.h``.

Example:
    >>> env = Enduro()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space
    ((25,), Discrete(5))
    >>> for _ in range(12):
    ...     obs, reward, terminated, truncated, info = env.step(1)  # accelerate
    >>> float(obs[1])  # full speed
    1.0
    >>> [env.step(1)[1] for _ in range(4)]  # passes a rival in the next lane, then rams the one ahead
    [0.0, 0.0, 0.0, 1.0]
    >>> env.speed  # a crash stops the car dead
    0
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

MAX_LANES = 6
LANE_W = 20
CAR_W = 12  # cars overlap across the road when their centres are closer than this
CAR_LEN = 16  # ... and along it when closer than this
STEER = 4
MAX_SPEED = 12
RIVAL_MIN, RIVAL_MAX = 3, 8
HORIZON = 240  # rivals appear this far ahead
FAR = 280  # ... and vanish beyond this when they pull away
BEHIND = 48  # ... or this far behind
GAP_MIN, GAP_SPAN = 40, 60  # player distance between two rivals appearing: GAP_MIN + below(GAP_SPAN)
CURVE_MIN, CURVE_SPAN = 50, 100
START_CARS = 4  # the field at the start: rivals at y in START_MIN + below(START_SPAN)
START_MIN, START_SPAN = -32, 160
MAX_CARS = 16
K = 5
OBS = 3 + 4 * K + 2


def draw_road(
    lanes: int, lane_w: int, car_w: int, cars: list, x: int, scale: int, rows: int, behind: int, per_row: int
) -> Canvas:
    """The road from above, ``scale`` road units a column and ``per_row`` a row from ``behind`` below your
    car: dotted lane lines, each rival in ``cars`` (pairs x, y) as ``x``, your car as ``@``."""
    canvas = Canvas(lanes * lane_w // scale, rows)
    half = car_w // (2 * scale)
    for lane in range(1, lanes):
        for r in range(0, rows, 2):
            canvas.cell(lane * lane_w // scale, r, ".")
    for glyph, (car_x, car_y) in [*(("x", car) for car in cars), ("@", (x, 0))]:
        for dx in range(-half, half):
            canvas.cell(car_x // scale + dx, rows - 1 - (car_y + behind) // per_row, glyph)
    return canvas


class Enduro(SingleAgentReference):
    """Enduro: drive a day-long race, passing at least ``quota`` rival cars each day or it ends.

    Integer units: the road is ``lanes`` lanes of 20 units across; y is distance ahead of your car.
    Your car keeps its speed (0..12 units a step) unless it accelerates (+1) or brakes (-2), and steers
    4 units a step; a curve (redrawn every 50..149 steps) pushes it outward by speed // 4 a step.
    Rivals drive down lane centres at 3..8 units a step; one appears 240 ahead each time you have driven
    a random 40..99 units. Passing a rival: +1; being passed: -1; hitting one stops you dead and shoves
    it 16 units ahead. The race starts from a standstill among 4 rivals placed at random (some may
    start behind you and pass you). A day is ``day_steps`` steps: ending it with ``quota`` net passes
    starts the next day, else the race is over (terminated; with quota 0, only if you lost ground);
    ``max_steps`` truncates. The return is net cars passed.
    Observation: own x / road width, speed / 12, curve (-1, 0, 1); the 5 nearest rivals not yet behind
    you (present, x offset / road width, y / 240, speed difference / 12); today's passes / max(quota, 1)
    (clamped to [-1, 1]); the day's steps left / day_steps. Actions: 0 noop, 1 accelerate, 2 brake,
    3 left, 4 right.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_enduro"}
    PARAMS = ("lanes", "quota", "day_steps", "max_steps")
    METRICS = ("passed", "days")

    def __init__(
        self,
        lanes: int = 3,
        quota: int = 20,
        day_steps: int = 500,
        max_steps: int = 1500,
        render_mode: str | None = None,
    ):
        self.lanes = check_positive("enduro", "lanes", lanes, 2, MAX_LANES)
        self.quota = check_positive("enduro", "quota", quota, 0)
        self.day_steps = check_positive("enduro", "day_steps", day_steps)
        self.max_steps = check_positive("enduro", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-2.0, 2.0, (OBS,), dtype=np.float32)
        self.action_space = spaces.Discrete(5)
        self.rng = Rng()

    def observe(self) -> np.ndarray:
        width = self.lanes * LANE_W
        obs = [self.x / width, self.speed / MAX_SPEED, float(self.curve)]
        ahead = [i for i in range(MAX_CARS) if self.active[i] and self.car_y[i] >= -CAR_LEN]
        ahead.sort(key=lambda i: (self.car_y[i], i))  # nearest first, ties by slot
        for k in range(K):
            if k < len(ahead):
                i = ahead[k]
                obs += [
                    1.0,
                    (self.car_x[i] - self.x) / width,
                    self.car_y[i] / HORIZON,
                    (self.car_speed[i] - self.speed) / MAX_SPEED,
                ]
            else:
                obs += [0.0, 0.0, 0.0, 0.0]
        scale = max(self.quota, 1)
        today = min(max(self.today, -scale), scale)
        obs += [today / scale, self.day_left / self.day_steps]
        return np.array(obs, dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.x = (self.lanes // 2) * LANE_W + LANE_W // 2
        self.speed = self.curve = 0
        self.curve_left = CURVE_MIN + self.rng.below(CURVE_SPAN)
        self.meter = 0
        self.gap = GAP_MIN + self.rng.below(GAP_SPAN)
        self.passed = self.today = self.days = self.steps = 0
        self.day_left = self.day_steps
        self.active = [False] * MAX_CARS
        self.car_x, self.car_y, self.car_speed = [0] * MAX_CARS, [0] * MAX_CARS, [0] * MAX_CARS
        for i in range(START_CARS):  # the starting field
            self.active[i] = True
            self.car_x[i] = self.rng.below(self.lanes) * LANE_W + LANE_W // 2
            self.car_y[i] = START_MIN + self.rng.below(START_SPAN)
            self.car_speed[i] = RIVAL_MIN + self.rng.below(RIVAL_MAX - RIVAL_MIN + 1)
        return self.observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = int(action)
        if action == 1:
            self.speed = min(self.speed + 1, MAX_SPEED)
        elif action == 2:
            self.speed = max(self.speed - 2, 0)
        elif action == 3:
            self.x -= STEER
        elif action == 4:
            self.x += STEER
        self.x -= self.curve * (self.speed // 4)  # a curve pushes the car outward
        self.x = min(max(self.x, CAR_W // 2), self.lanes * LANE_W - CAR_W // 2)

        self.curve_left -= 1
        if self.curve_left == 0:
            self.curve = self.rng.below(3) - 1
            self.curve_left = CURVE_MIN + self.rng.below(CURVE_SPAN)

        reward = 0
        speed = self.speed  # every rival moves relative to the speed the step began with
        for i in range(MAX_CARS):
            if not self.active[i]:
                continue
            before = self.car_y[i]
            y = before + self.car_speed[i] - speed
            if abs(y) < CAR_LEN and abs(self.car_x[i] - self.x) < CAR_W:
                self.speed = 0  # crash
                y = CAR_LEN
            if before >= 0 and y < 0:
                reward += 1
            elif before < 0 and y >= 0:
                reward -= 1
            self.car_y[i] = y
            if y < -BEHIND or y > FAR:
                self.active[i] = False
        self.passed += reward
        self.today += reward

        self.meter += self.speed
        if self.meter >= self.gap:
            self.meter -= self.gap
            lane = self.rng.below(self.lanes)
            car_speed = RIVAL_MIN + self.rng.below(RIVAL_MAX - RIVAL_MIN + 1)
            self.gap = GAP_MIN + self.rng.below(GAP_SPAN)
            free = [i for i in range(MAX_CARS) if not self.active[i]]
            if free:
                i = free[0]
                self.active[i] = True
                self.car_x[i], self.car_y[i], self.car_speed[i] = lane * LANE_W + LANE_W // 2, HORIZON, car_speed

        over = False
        self.day_left -= 1
        if self.day_left == 0:
            if self.today >= self.quota:
                self.days += 1
                self.today = 0
                self.day_left = self.day_steps
            else:
                over = True
        self.steps += 1
        truncated = not over and self.steps >= self.max_steps
        info = {"passed": float(self.passed), "days": float(self.days)} if over or truncated else {}
        return self.observe(), float(reward), over, truncated, info

    def render(self) -> str | np.ndarray | None:
        cars = [(self.car_x[i], self.car_y[i]) for i in range(MAX_CARS) if self.active[i]]
        canvas = draw_road(self.lanes, LANE_W, CAR_W, cars, self.x, scale=2, rows=41, behind=BEHIND, per_row=8)
        curve = {-1: "left", 0: "straight", 1: "right"}[self.curve]
        title = (
            f"day {self.days + 1}: passed {self.today}/{self.quota}, {self.day_left} steps left; speed {self.speed}, {curve}"
        )
        return canvas.show(self.render_mode, title)


GAME = Game(
    "enduro",
    Enduro,
    solved_return=60.0,
    solved_meaning=(
        "passes 60 cars net over the 1,500-step race of three 500-step days with a 20-car quota each "
        "(random driving: about -1, out after the first day)"
    ),
    config={"train": {"total_steps": 5_000_000, "stop_on_solve": True}, "vec": {"num_envs": 256}},
    check_kwargs={"quota": 0, "day_steps": 40, "max_steps": 60},
    cuda_type="Enduro",
)
