"""Freeway (Atari-like): the readable reference of ``c/freeway.h`` (same rules, same draws).

Example:
    >>> env = Freeway()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space
    ((13,), Discrete(3))
    >>> float(obs[0]), env.y  # the chicken waits at the start
    (0.0, 0)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

LANES = 10
SUB = 16  # car positions: sixteenths of a pixel
ROAD = 160 * SUB  # the road wraps
BOTTOM = 4  # lane k covers y in [BOTTOM + LANE_H k, BOTTOM + LANE_H (k + 1))
LANE_H = 16
TOP = 168  # reaching it scores a crossing
CHICKEN_X = 44 * SUB
HIT_DX = 7 * SUB  # (car length 8 + chicken width 6) / 2, pixels
PUSH = 8  # a hit pushes the chicken back half a lane (Atari, difficulty B: "slightly")
STUN = 8  # frames a hit chicken can neither move nor be hit
SPEEDS = (12, 16, 22, 28, 36, -40, -30, -24, -18, -14)  # sixteenths of a pixel per frame, lanes bottom to top
NOOP, UP, DOWN = 0, 1, 2


def wrap(x: int) -> int:
    """``x`` wrapped to [-ROAD/2, ROAD/2)."""
    return (x + ROAD // 2) % ROAD - ROAD // 2


class Freeway(SingleAgentReference):
    """Freeway: a chicken crosses ten lanes of traffic as many times as it can before the clock runs out.

    Each lane has one car at its own speed (the lower five drive right, the upper five left); the road
    wraps. Actions: 0 stay, 1 up, 2 down (one pixel per frame; ``frameskip`` frames per step). A
    crossing (reaching the top) pays +1 and the chicken starts again at the bottom. A car that hits the
    chicken pushes it back half a lane (Atari's difficulty B: "slightly") and stuns it for 8 frames (it
    can neither move nor be hit). Each step also pays the height gained / 168, a potential-based
    progress term that adds up to the final height / 168 (< 1) over an episode: without it a random
    chicken never reaches the top. The return is the score plus that last fraction. The
    game lasts ``duration`` steps (2,048 at frameskip 4: Atari's 2 min 16 s) and then ends
    (terminal); it starts after a random number of no-op steps in ``[0, noop_max]`` (the cars drive
    and the clock runs while the chicken waits); an episode is truncated after ``max_steps`` steps.
    Observation (13 floats): chicken y / 168, stun left / 12, clock left / duration, and each lane's
    car x relative to the chicken, wrapped to [-80, 80) pixels, / 80.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_freeway"}
    PARAMS = ("duration", "frameskip", "noop_max", "max_steps")
    METRICS = ("score", "hits")

    def __init__(
        self,
        duration: int = 2048,
        frameskip: int = 4,
        noop_max: int = 30,
        max_steps: int = 10_000,
        render_mode: str | None = None,
    ):
        self.duration = check_positive("freeway", "duration", duration)
        self.frameskip = check_positive("freeway", "frameskip", frameskip, 1, 16)
        self.noop_max = check_positive("freeway", "noop_max", noop_max, 0, self.duration - 1)
        self.max_steps = check_positive("freeway", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-1.0, 1.0, (3 + LANES,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.rng = Rng()
        self.car_x = [0] * LANES
        self.clock = self.played = self.y = self.stun = self.score = self.hits = 0

    def observe(self) -> np.ndarray:
        obs = [self.y / TOP, self.stun / STUN, (self.duration - self.clock) / self.duration]
        obs += [wrap(x - CHICKEN_X) / (ROAD // 2) for x in self.car_x]
        return np.array(obs, dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.car_x = [self.rng.below(ROAD) for _ in range(LANES)]
        noops = self.rng.below(self.noop_max + 1)
        frames = noops * self.frameskip
        self.car_x = [(x + speed * frames) % ROAD for x, speed in zip(self.car_x, SPEEDS)]
        self.clock = noops
        self.played = self.y = self.stun = self.score = self.hits = 0
        return self.observe(), {}

    def frame(self, dy: int) -> int:
        """One frame: cars, then the chicken, then a hit; returns 1 if the chicken crossed."""
        self.car_x = [(x + speed) % ROAD for x, speed in zip(self.car_x, SPEEDS)]
        crossed = 0
        if self.stun > 0:
            self.stun -= 1
        else:
            self.y = max(self.y + dy, 0)
            if self.y >= TOP:
                crossed, self.y = 1, 0
        if self.stun == 0 and BOTTOM <= self.y < BOTTOM + LANES * LANE_H:
            lane = (self.y - BOTTOM) // LANE_H
            if abs(wrap(self.car_x[lane] - CHICKEN_X)) < HIT_DX:
                self.y = max(self.y - PUSH, 0)
                self.stun = STUN
                self.hits += 1
        return crossed

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = int(action)
        dy = 1 if action == UP else -1 if action == DOWN else 0
        y0 = self.y
        crossed = sum(self.frame(dy) for _ in range(self.frameskip))
        reward = crossed + (self.y - y0) / TOP  # the crossings and the progress term
        self.score += crossed
        self.clock += 1
        self.played += 1
        terminated = self.clock >= self.duration
        truncated = not terminated and self.played >= self.max_steps
        info = {"score": float(self.score), "hits": float(self.hits)} if terminated or truncated else {}
        return self.observe(), float(np.float32(reward)), terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(80, TOP // 4 + 1)  # 2 x 4 pixels per cell; the start at the bottom
        row = lambda y: TOP // 4 - y // 4
        for k in range(LANES + 1):
            for col in range(0, 80, 4):
                canvas.cell(col, row(BOTTOM + k * LANE_H), ".")
        for k, x in enumerate(self.car_x):
            y = BOTTOM + k * LANE_H + LANE_H // 2
            for dx in range(-4, 4, 2):
                canvas.cell(((x // SUB + dx) % 160) // 2, row(y), "x" if SPEEDS[k] > 0 else "*")
        for dx in range(-2, 4, 2):
            canvas.cell((CHICKEN_X // SUB + dx) // 2, row(self.y), "+" if self.stun else "o")
        title = f"score {self.score}  hits {self.hits}  clock {self.duration - self.clock}"
        return canvas.show(self.render_mode, title)


GAME = Game(
    "freeway",
    Freeway,
    solved_return=36.0,
    solved_meaning=(
        "crosses 36 times in a 2,048-step game, steadily (holding up: 37.6 with about 110 hits; random or "
        "standing still: 0; about 48 without a hit)"
    ),
    config={
        "train": {"total_steps": 10_000_000, "stop_on_solve": True},
        "vec": {"num_envs": 64},
    },
    check_kwargs={"duration": 50, "noop_max": 20, "max_steps": 40, "frameskip": 8},
    cuda_type="Freeway",
)
