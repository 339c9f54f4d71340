"""Asteroids (Atari/arcade-like): the readable reference of ``c/asteroids.h`` (same rules, same draws).

Example:
    >>> env = Asteroids()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space, len(env.rocks)
    ((56,), Discrete(12), 4)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

MASK = 0xFFFF  # the field wraps: 256 pixels of 256 units a side
HALF = 32768
PX = 256  # units a pixel
BULLETS = 4
NEAR = 8  # rocks in the observation
VMAX = 1024  # units a frame, per component
THRUST = 24
BULLET_SPEED = 6  # pixels a frame at cos 256
BULLET_LIFE = 24
FIRE_DELAY = 4
INVULNERABLE = 64
SHIP_R = 4 * PX
NOSE = 8  # pixels
SAFE = 64 * PX  # a new rock appears at least this far from the ship (or half a field away)
# 256 cos(2 pi a / 64), rounded; sin(a) = cos(a - 16)
COS = (
    *(256, 255, 251, 245, 237, 226, 213, 198, 181, 162, 142, 121, 98, 74, 50, 25),
    *(0, -25, -50, -74, -98, -121, -142, -162, -181, -198, -213, -226, -237, -245, -251, -255),
    *(-256, -255, -251, -245, -237, -226, -213, -198, -181, -162, -142, -121, -98, -74, -50, -25),
    *(0, 25, 50, 74, 98, 121, 142, 162, 181, 198, 213, 226, 237, 245, 251, 255),
)
POINTS = (100, 50, 20)  # by size: small, medium, large
# (thrust, turn, fire) by action; turn +1 is right (clockwise on a y-down screen)
ACTIONS = (
    (0, 0, 0),
    (0, 0, 1),
    (1, 0, 0),
    (0, 1, 0),
    (0, -1, 0),
    (1, 1, 0),
    (1, -1, 0),
    (1, 0, 1),
    (0, 1, 1),
    (0, -1, 1),
    (1, 1, 1),
    (1, -1, 1),
)


def cos(angle: int) -> int:
    return COS[angle & 63]


def sin(angle: int) -> int:
    return COS[(angle + 48) & 63]


def radius(size: int) -> int:
    """A rock's radius in units: 4, 8, 16 pixels for small (0), medium (1), large (2)."""
    return (4 * PX) << size


def wrap(d: int) -> int:
    """``d`` wrapped to [-HALF, HALF)."""
    return ((d + HALF) & MASK) - HALF


def clamp(v: int) -> int:
    return max(-VMAX, min(VMAX, v))


class Asteroids(SingleAgentReference):
    """Asteroids: rotate, thrust and shoot in a wrapping field; large rocks split into medium and small.

    Actions (12, Atari-like): none, fire, thrust, right, left, thrust+right, thrust+left, thrust+fire,
    right+fire, left+fire, thrust+right+fire, thrust+left+fire; ``frameskip`` frames a step. The ship
    keeps its momentum (a little friction), 4 bullets fly 24 frames, a rock scores 20 (large), 50
    (medium) or 100 (small) and splits; a rock that touches the ship costs a life (it comes back at
    the centre, invulnerable for 64 frames); a cleared field brings the next wave (4, 6, then 8 large
    rocks). Reward: points / 100. Observation (56 floats): the ship's heading, velocity and guns, and
    the 8 nearest rocks in its frame. All arithmetic is integer (see ``c/asteroids.h``).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_asteroids"}
    PARAMS = ("lives", "frameskip", "max_steps")
    METRICS = ("score", "waves", "deaths")

    def __init__(self, lives: int = 3, frameskip: int = 4, max_steps: int = 2000, render_mode: str | None = None):
        self.lives = check_positive("asteroids", "lives", lives, 1, 9)
        self.frameskip = check_positive("asteroids", "frameskip", frameskip, 1, 8)
        self.max_steps = check_positive("asteroids", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-2.0, 2.0, (8 + 6 * NEAR,), dtype=np.float32)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.rng = Rng()
        self.rocks: list[list[int]] = []  # [x, y, vx, vy, size]
        self.bullets = [[0, 0, 0, 0, 0] for _ in range(BULLETS)]  # [x, y, vx, vy, frames left]
        self.x = self.y = HALF
        self.vx = self.vy = self.delay = self.invulnerable = 0
        self.angle = 48
        self.lives_left, self.score, self.wave, self.deaths, self.played = lives, 0, 0, 0, 0

    def launch(self, rock: list[int], size: int) -> None:
        """A random heading and a speed in [64 (size + 1), 64 (size + 2)) units a frame."""
        heading = self.rng.below(64)
        speed = 64 * (3 - size) + self.rng.below(64)
        rock[2], rock[3], rock[4] = (cos(heading) * speed) >> 8, (sin(heading) * speed) >> 8, size

    def new_wave(self) -> None:
        self.wave += 1
        self.rocks = []
        for _ in range(min(2 + 2 * self.wave, 8)):
            x, y = self.rng.below(MASK + 1), self.rng.below(MASK + 1)
            if wrap(x - self.x) ** 2 + wrap(y - self.y) ** 2 < SAFE * SAFE:
                x = (x + HALF) & MASK
            rock = [x, y, 0, 0, 2]
            self.launch(rock, 2)
            self.rocks.append(rock)

    def home(self) -> None:
        self.x = self.y = HALF
        self.vx = self.vy = self.delay = 0
        self.angle = 48

    def observe(self) -> np.ndarray:
        c, s = cos(self.angle), sin(self.angle)
        inv_v, inv_p = 1.0 / (VMAX * 256), 1.0 / (HALF * 256)
        free = sum(1 for b in self.bullets if b[4] == 0)
        obs = [c / 256.0, s / 256.0, (self.vx * c + self.vy * s) * inv_v, (self.vx * s - self.vy * c) * inv_v]
        obs += [free / BULLETS, self.delay / FIRE_DELAY, self.invulnerable / INVULNERABLE, self.lives_left / self.lives]
        offsets = [(wrap(r[0] - self.x), wrap(r[1] - self.y)) for r in self.rocks]
        nearest = sorted(range(len(self.rocks)), key=lambda k: (offsets[k][0] ** 2 + offsets[k][1] ** 2, k))[:NEAR]
        for k in nearest:
            (dx, dy), rock = offsets[k], self.rocks[k]
            rvx, rvy = rock[2] - self.vx, rock[3] - self.vy
            obs += [1.0, (dx * c + dy * s) * inv_p, (dx * s - dy * c) * inv_p]
            obs += [(rvx * c + rvy * s) * inv_v, (rvx * s - rvy * c) * inv_v, (0.25, 0.5, 1.0)[rock[4]]]
        obs += [0.0] * (6 * (NEAR - len(nearest)))
        return np.array(obs, dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.home()
        self.invulnerable = 0
        self.lives_left = self.lives
        self.score = self.wave = self.deaths = self.played = 0
        for bullet in self.bullets:
            bullet[4] = 0
        self.new_wave()
        return self.observe(), {}

    def split(self, k: int) -> int:
        """Rock k is hit: two of the next size take its place (the second at the end), or a small one
        vanishes (the last rock moving into its slot); returns its points."""
        rock = self.rocks[k]
        size = rock[4]
        if size == 0:
            last = self.rocks.pop()
            if k < len(self.rocks):
                self.rocks[k] = last
            return POINTS[size]
        twin = [rock[0], rock[1], 0, 0, 0]
        self.rocks.append(twin)
        self.launch(rock, size - 1)
        self.launch(twin, size - 1)
        return POINTS[size]

    def frame(self, thrust: int, turn: int, fire: int) -> tuple[int, bool]:
        """One frame; returns (points, the last life lost)."""
        points = 0
        self.angle = (self.angle + turn) & 63
        c, s = cos(self.angle), sin(self.angle)
        if thrust:
            self.vx += (c * THRUST) >> 8
            self.vy += (s * THRUST) >> 8
        self.vx = clamp(self.vx - (self.vx >> 7))
        self.vy = clamp(self.vy - (self.vy >> 7))
        self.x, self.y = (self.x + self.vx) & MASK, (self.y + self.vy) & MASK
        self.delay = max(self.delay - 1, 0)
        self.invulnerable = max(self.invulnerable - 1, 0)
        for b in self.bullets:
            if b[4]:
                b[4] -= 1
                b[0], b[1] = (b[0] + b[2]) & MASK, (b[1] + b[3]) & MASK
        if fire and self.delay == 0:
            for b in self.bullets:
                if b[4] == 0:
                    b[:] = [(self.x + c * NOSE) & MASK, (self.y + s * NOSE) & MASK]
                    b += [self.vx + c * BULLET_SPEED, self.vy + s * BULLET_SPEED, BULLET_LIFE]
                    self.delay = FIRE_DELAY
                    break
        for rock in self.rocks:
            rock[0], rock[1] = (rock[0] + rock[2]) & MASK, (rock[1] + rock[3]) & MASK
        for b in self.bullets:
            if b[4] == 0:
                continue
            for k, rock in enumerate(self.rocks):
                if wrap(rock[0] - b[0]) ** 2 + wrap(rock[1] - b[1]) ** 2 < radius(rock[4]) ** 2:
                    b[4] = 0
                    points += self.split(k)
                    break
        if self.invulnerable == 0:
            for k, rock in enumerate(self.rocks):
                if wrap(rock[0] - self.x) ** 2 + wrap(rock[1] - self.y) ** 2 < (radius(rock[4]) + SHIP_R) ** 2:
                    points += self.split(k)
                    self.deaths += 1
                    self.lives_left -= 1
                    if self.lives_left == 0:
                        return points, True
                    self.home()
                    self.invulnerable = INVULNERABLE
                    break
        if not self.rocks:
            self.new_wave()
        return points, False

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        thrust, turn, fire = ACTIONS[int(action)]
        points, ended = 0, False
        for _ in range(self.frameskip):
            gained, ended = self.frame(thrust, turn, fire)
            points += gained
            if ended:
                break
        self.score += points
        self.played += 1
        truncated = not ended and self.played >= self.max_steps
        info = {}
        if ended or truncated:
            info = {"score": float(self.score), "waves": float(self.wave - 1), "deaths": float(self.deaths)}
        return self.observe(), float(np.float32(points / 100)), ended, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(64, 32)  # 4 x 8 pixels a cell
        for x, y, _, _, size in self.rocks:
            r = radius(size) // PX
            for py in range(-r, r + 1, 4):
                for px in range(-r, r + 1, 2):
                    if px * px + py * py <= r * r:
                        canvas.cell(((x // PX + px) % 256) // 4, ((y // PX + py) % 256) // 8, "#")
        for x, y, _, _, life in self.bullets:
            if life:
                canvas.cell(x // PX // 4, y // PX // 8, "*")
        glyph = "+" if self.invulnerable else "@"
        canvas.cell(self.x // PX // 4, self.y // PX // 8, glyph)
        nose_x, nose_y = (self.x + cos(self.angle) * 6) & MASK, (self.y + sin(self.angle) * 6) & MASK
        canvas.cell(nose_x // PX // 4, nose_y // PX // 8, "o")
        title = f"score {self.score}  lives {self.lives_left}  wave {self.wave}"
        return canvas.show(self.render_mode, title)


GAME = Game(
    "asteroids",
    Asteroids,
    solved_return=180.0,
    solved_meaning=(
        "scores 18,000 points a game over 3 lives: about the first five waves (4, 6, 8, 8, 8 large rocks, 17,680 "
        "points when shot to pieces) cleared (random actions: 1,365)"
    ),
    config={
        "train": {
            "total_steps": 20_000_000,
            "stop_on_solve": True,
            "num_steps": 64,
            "num_minibatches": 8,
            "update_epochs": 4,
            "learning_rate": 1e-3,
            "ent_coef": 0.01,
        },
        "vec": {"num_envs": 128},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"lives": 2, "max_steps": 60, "frameskip": 8},
    cuda_type="Asteroids",
)
