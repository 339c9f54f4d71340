"""Enduro, the full race (Atari's rules at frame level): the readable reference of ``c/enduro_full.h``.

Example:
    >>> env = EnduroFull(frameskip=1)
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space
    ((54,), Discrete(9))
    >>> for _ in range(128):
    ...     obs, reward, terminated, truncated, info = env.step(1)  # accelerate
    >>> float(obs[1])  # top speed after 128 frames
    1.0
    >>> env.phase(), env.quota_today()  # the first day starts in daylight with 200 cars to pass
    ('day', 200)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Game, SingleAgentReference, check_positive
from pufferbox_ocean.games.enduro import draw_road
from pufferbox_ocean.rng import Rng

MAX_LANES = 6
LANE_W = 128
CAR_W = 80  # cars overlap across the road when their centres are closer than this
CAR_LEN = 1000  # ... and along it when closer than this
STEER = 4
MAX_DRIFT = 6
MAX_SPEED = 256
ACCEL, BRAKE, COAST = 2, 8, 1
EDGE_DRAG = 4
CURVE_DIV = 128
RIVAL_MIN, RIVAL_MAX = 96, 176
HORIZON = 12000  # rivals appear this far ahead
FAR = 14000  # ... and vanish beyond this when they pull away
BEHIND = 3000  # ... or this far behind
FOG_SIGHT = 3000
GAP_MIN, GAP_SPAN = 2000, 4500  # road closed between two rivals met: GAP_MIN + below(GAP_SPAN)
CURVE_MIN, CURVE_SPAN = 120, 360
CRASH_FRAMES = 60
START_CARS = 4  # the field at the start: rivals at y in START_MIN + below(START_SPAN)
START_MIN, START_SPAN = -2500, 8000
MAX_CARS = 10
PHASES = ("day", "snow", "dusk", "night", "fog", "dawn")
PHASE_ENDS = (4, 6, 8, 12, 14, 16)  # each phase's end, in sixteenths of the day
HEAD = 14
OBS = HEAD + 4 * MAX_CARS
# Atari's nine actions as (steer, gas): steer -1 left / +1 right, gas +1 accelerate / -1 brake
CONTROLS = ((0, 0), (0, 1), (1, 0), (-1, 0), (0, -1), (1, -1), (-1, -1), (1, 1), (-1, 1))


class EnduroFull(SingleAgentReference):
    """Enduro's full race: pass 200 cars on the first day and 300 on each later day, or the race ends.

    Integer units, one frame a 1/60 s, ``frameskip`` frames a step. The road is ``lanes`` lanes of 128
    units; y is distance ahead of your car. Your speed (0..256 units a frame) rises 2 a frame with the
    accelerator, falls 8 braking and 1 coasting; steering moves you 4 units a frame, but in snow it
    changes a drift (at most 6 a frame) that carries you on and fades by 1 every 4 frames without
    steering. A curve (redrawn every 120..479 frames) pushes you outward by speed // 128 a frame; being
    pushed against the road's edge costs 4 speed a frame. Rivals keep their lane at 96..176 a frame.
    Traffic: the next rival is met once the road between you has closed by a random 2,000..6,499 units
    (the difference of your speeds, a frame): 12,000 ahead if it is slower than you, else 3,000 behind;
    at most 10 are on the road. The race starts from a standstill among 4 rivals, some behind you, none
    within two car lengths. Running into a rival ahead (one overtaking you steers clear) stops you,
    shoves it 1,000 ahead and kills the controls for 60 frames. Passing a rival: +1; being passed: -1.
    A day (``day_frames``, 13,920 = 232 s) is won when a pass brings its net passes to ``quota`` (later
    days ``quota_later``; being passed afterwards does not undo it) or when they stand there at its end;
    a day that ends unwon ends the race (terminated). ``max_steps`` truncates. Phases by sixteenths of
    the day: day 0-3, snow 4-5, dusk 6-7, night 8-11 (the curve unseen), fog 12-13 (the curve unseen,
    rivals only within 3,000), dawn 14-15. Observation: own x / road width, speed / 256, drift / 6, the
    curve as seen, dead-control frames / 60, the phase one-hot, today's passes / quota (clamped to
    [-1, 1], 1 once won), the day's frames left / day_frames, 1 after the first day; then each seen rival,
    those ahead nearest first, then those behind nearest first (present, x offset / road width,
    y / 12,000, speed difference / 256).
    Actions: Atari's nine (noop, accelerate, right, left, brake, brake right, brake left, accelerate
    right, accelerate left).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_enduro_full"}
    PARAMS = ("lanes", "quota", "quota_later", "day_frames", "frameskip", "max_steps")
    METRICS = ("passed", "days", "crashes")

    def __init__(
        self,
        lanes: int = 3,
        quota: int = 200,
        quota_later: int = 300,
        day_frames: int = 13_920,
        frameskip: int = 4,
        max_steps: int = 10_440,
        render_mode: str | None = None,
    ):
        self.lanes = check_positive("enduro_full", "lanes", lanes, 2, MAX_LANES)
        self.quota = check_positive("enduro_full", "quota", quota, 0)
        self.quota_later = check_positive("enduro_full", "quota_later", quota_later, 0)
        self.day_frames = check_positive("enduro_full", "day_frames", day_frames)
        self.frameskip = check_positive("enduro_full", "frameskip", frameskip)
        self.max_steps = check_positive("enduro_full", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-2.0, 2.0, (OBS,), dtype=np.float32)
        self.action_space = spaces.Discrete(len(CONTROLS))
        self.rng = Rng()

    def phase_index(self) -> int:
        sixteenth = min(self.day_frame * 16 // self.day_frames, 15)  # the day's last frame: still dawn
        return next(p for p, end in enumerate(PHASE_ENDS) if sixteenth < end)

    def phase(self) -> str:
        return PHASES[self.phase_index()]

    def quota_today(self) -> int:
        return self.quota if self.days == 0 else self.quota_later

    def observe(self) -> np.ndarray:
        width = self.lanes * LANE_W
        phase = self.phase()
        scale = max(self.quota_today(), 1)
        today = min(max(self.today, -scale), scale)
        obs = [
            self.x / width,
            self.speed / MAX_SPEED,
            self.drift / MAX_DRIFT,
            0.0 if phase in ("night", "fog") else float(self.curve),
            self.stunned / CRASH_FRAMES,
            *(1.0 if name == phase else 0.0 for name in PHASES),
            1.0 if self.won else today / scale,
            (self.day_frames - self.day_frame) / self.day_frames,
            1.0 if self.days > 0 else 0.0,
        ]
        seen = [i for i in range(MAX_CARS) if self.active[i] and (phase != "fog" or abs(self.car_y[i]) <= FOG_SIGHT)]
        seen.sort(key=lambda i: (self.car_y[i] < 0, abs(self.car_y[i]), i))  # ahead nearest first, then behind
        for k in range(MAX_CARS):
            if k < len(seen):
                i = seen[k]
                dx, dv = self.car_x[i] - self.x, self.car_speed[i] - self.speed
                obs += [1.0, dx / width, self.car_y[i] / HORIZON, dv / MAX_SPEED]
            else:
                obs += [0.0, 0.0, 0.0, 0.0]
        return np.array(obs, dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.x = (self.lanes // 2) * LANE_W + LANE_W // 2
        self.drift = self.speed = self.curve = self.stunned = self.meter = 0
        self.curve_left = CURVE_MIN + self.rng.below(CURVE_SPAN)
        self.gap = GAP_MIN + self.rng.below(GAP_SPAN)
        self.next_speed = RIVAL_MIN + self.rng.below(RIVAL_MAX - RIVAL_MIN + 1)
        self.passed = self.today = self.day_frame = self.days = self.crashes = self.frames = self.steps = 0
        self.won = False
        self.active = [False] * MAX_CARS
        self.car_x, self.car_y, self.car_speed = [0] * MAX_CARS, [0] * MAX_CARS, [0] * MAX_CARS
        for i in range(START_CARS):  # the starting field: none within two car lengths of you
            self.active[i] = True
            self.car_x[i] = self.rng.below(self.lanes) * LANE_W + LANE_W // 2
            y = START_MIN + self.rng.below(START_SPAN)
            self.car_y[i] = y + 4 * CAR_LEN if y > -2 * CAR_LEN else y
            self.car_speed[i] = RIVAL_MIN + self.rng.below(RIVAL_MAX - RIVAL_MIN + 1)
        return self.observe(), {}

    def drive(self, action: int) -> None:
        """The player's car for one frame: throttle, steering (sliding in snow), the curve, the edge."""
        steer, gas = (0, 0) if self.stunned > 0 else CONTROLS[action]
        self.stunned = max(self.stunned - 1, 0)
        if gas > 0:
            self.speed = min(self.speed + ACCEL, MAX_SPEED)
        else:
            self.speed = max(self.speed - (BRAKE if gas < 0 else COAST), 0)
        if self.phase() == "snow":
            if steer:
                self.drift = min(max(self.drift + steer, -MAX_DRIFT), MAX_DRIFT)
            elif self.frames % 4 == 0:
                self.drift -= (self.drift > 0) - (self.drift < 0)
            self.x += self.drift
        else:
            self.drift = 0
            self.x += steer * STEER
        self.x -= self.curve * (self.speed // CURVE_DIV)  # a curve pushes the car outward
        left, right = CAR_W // 2, self.lanes * LANE_W - CAR_W // 2
        if self.x < left or self.x > right:  # pushed against the road's edge
            self.x = left if self.x < left else right
            self.drift = 0
            self.speed = max(self.speed - EDGE_DRAG, 0)

    def meet_traffic(self) -> None:
        """The next rival (its speed drawn in advance) is met once the road between you has closed by a
        random gap: at the horizon if it is slower than you, else from behind."""
        self.meter += abs(self.speed - self.next_speed)
        if self.meter < self.gap:
            return
        self.meter -= self.gap
        lane = self.rng.below(self.lanes)
        free = [i for i in range(MAX_CARS) if not self.active[i]]
        if free:  # with the road full, the rival met is not placed
            i = free[0]
            self.active[i] = True
            self.car_x[i] = lane * LANE_W + LANE_W // 2
            self.car_y[i] = HORIZON if self.next_speed <= self.speed else -BEHIND
            self.car_speed[i] = self.next_speed
        self.gap = GAP_MIN + self.rng.below(GAP_SPAN)
        self.next_speed = RIVAL_MIN + self.rng.below(RIVAL_MAX - RIVAL_MIN + 1)

    def frame(self, action: int) -> tuple[int, bool]:
        """One frame: the net passes it made, and whether the day ended unwon."""
        self.drive(action)
        self.curve_left -= 1
        if self.curve_left == 0:
            self.curve = self.rng.below(3) - 1
            self.curve_left = CURVE_MIN + self.rng.below(CURVE_SPAN)

        reward = 0
        speed = self.speed  # every rival moves relative to the speed the frame began with
        for i in range(MAX_CARS):
            if not self.active[i]:
                continue
            before = self.car_y[i]
            y = before + self.car_speed[i] - speed
            if before >= 0 and y < before and y < CAR_LEN and abs(self.car_x[i] - self.x) < CAR_W:  # you ran into it
                self.speed, self.stunned, y = 0, CRASH_FRAMES, CAR_LEN  # crash
                self.crashes += 1
            reward += (before >= 0 and y < 0) - (before < 0 and y >= 0)
            self.car_y[i] = y
            if y < -BEHIND or y > FAR:
                self.active[i] = False
        self.passed += reward
        self.today += reward
        self.won = self.won or (reward > 0 and self.today >= self.quota_today())

        self.meet_traffic()

        self.frames += 1
        self.day_frame += 1
        if self.day_frame == self.day_frames:
            if not self.won and self.today < self.quota_today():
                return reward, True
            self.days += 1
            self.today, self.won, self.day_frame = 0, False, 0
        return reward, False

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward, over = 0, False
        for _ in range(self.frameskip):
            gained, over = self.frame(int(action))
            reward += gained
            if over:
                break
        self.steps += 1
        truncated = not over and self.steps >= self.max_steps
        info = {"passed": float(self.passed), "days": float(self.days), "crashes": float(self.crashes)}
        return self.observe(), float(reward), over, truncated, info if over or truncated else {}

    def render(self) -> str | np.ndarray | None:
        fog = self.phase() == "fog"
        seen = [i for i in range(MAX_CARS) if self.active[i] and not (fog and abs(self.car_y[i]) > FOG_SIGHT)]
        cars = [(self.car_x[i], self.car_y[i]) for i in seen]
        canvas = draw_road(self.lanes, LANE_W, CAR_W, cars, self.x, scale=16, rows=34, behind=BEHIND, per_row=500)
        curve = {-1: "left", 0: "straight", 1: "right"}[self.curve]
        title = (
            f"day {self.days + 1} ({self.phase()}): passed {self.today}/{self.quota_today()}"
            f"{' (won)' if self.won else ''}; speed {self.speed}, {curve}"
        )
        return canvas.show(self.render_mode, title)


GAME = Game(
    "enduro_full",
    EnduroFull,
    solved_return=200.0,
    solved_meaning=(
        "passes 200 cars net, the first day's quota, in its 232 s (random driving: -413, passed by the traffic "
        "and out after the first day)"
    ),
    config={
        "train": {"total_steps": 40_000_000, "stop_on_solve": True},
        "vec": {"num_envs": 256},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"quota": 0, "quota_later": 0, "day_frames": 24, "frameskip": 1, "max_steps": 60},
    cuda_type="EnduroFull",
)
