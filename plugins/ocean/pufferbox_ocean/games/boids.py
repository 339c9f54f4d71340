"""Boids: a flock steering itself by continuous acceleration, the readable reference of ``c/boids.h``.

Example:
    >>> env = Boids()
    >>> obs, _ = env.reset(seed=1)
    >>> len(env.possible_agents), obs["boid_0"].shape, env.action_space("boid_0")
    (64, (36,), Box(-1.0, 1.0, (2,), float32))
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox.api import ACTION_ONE, continuous_action_space, quantize_actions
from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

N = 64  # boids per env
K = 8  # nearest boids each one sees
OBS = 4 + 4 * K
SEEN_CLIP = 4.0
FACTORS = ("acceleration", "avoid_factor", "matching_factor", "centering_factor", "margin_factor")


def clamp(v: float, lo: float, hi: float) -> float:
    return lo if v < lo else (hi if v > hi else v)


def wrap(v: float, size: float) -> float:
    return v + size if v < 0.0 else (v - size if v >= size else v)


def thousandths(name: str, value: float) -> int:
    """A non-negative factor as the whole thousandths the C game reads, or a one-line ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not value >= 0:
        raise ValueError(f"boids: {name} must be a number >= 0, got {value!r}")
    milli = round(float(value) * 1000)
    if abs(milli - float(value) * 1000) > 1e-6 or milli > 1_000_000:
        raise ValueError(f"boids: {name} must be a multiple of 0.001 up to 1000, got {value!r}")
    return milli


class Boids(MultiAgentReference):
    """Boids: 64 agents in a wrap-around arena steer by continuous acceleration, rewarded by the boids rules.

    Each step a boid adds ``acceleration`` x its action (two values in [-1, 1]) to its velocity (each
    axis clipped to +-``velocity_cap``), then moves; the arena wraps around (``walls=1``: positions are
    clipped to it, distances do not wrap). Closer than ``protected_range``, other boids crowd it;
    farther but within ``visual_range`` they are its flockmates. Reward per step: ``-avoid_factor x
    min(crowding / 5, 1)``; with flockmates ``-matching_factor x`` its velocity's distance from theirs
    (0..1) and ``-centering_factor x`` its distance from their centre (0..1, the centre of their nearest
    images); without any, ``-centering_factor``; ``+-margin_factor`` per axis inside / outside the
    ``margin`` band. With ``crash_range`` > 0 two boids that close end the episode (-1 each); else it is
    truncated after ``max_steps``. Observation (36 floats): own position (-1..1) and velocity / cap,
    then the 8 nearest boids, nearest first: relative position / visual_range (clipped to +-4) and
    relative velocity / cap. Action: Box(-1, 1, (2,)), the acceleration.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_boids"}
    PARAMS = (
        "width",
        "height",
        "velocity_cap",
        "protected_range",
        "visual_range",
        "margin",
        "crash_range",
        "max_steps",
        "acceleration_milli",
        "avoid_milli",
        "matching_milli",
        "centering_milli",
        "margin_milli",
        "walls",
    )
    METRICS = ("crowded", "alone", "outside_margin", "crashed")

    def __init__(
        self,
        width: int = 1080,
        height: int = 720,
        velocity_cap: int = 5,
        protected_range: int = 20,
        visual_range: int = 100,
        margin: int = 50,
        crash_range: int = 0,
        max_steps: int = 256,
        acceleration: float = 1.0,
        avoid_factor: float = 1.0,
        matching_factor: float = 1.0,
        centering_factor: float = 1.0,
        margin_factor: float = 0.0,
        walls: int = 0,
        render_mode: str | None = None,
    ):
        self.width = check_positive("boids", "width", width)
        self.height = check_positive("boids", "height", height)
        self.velocity_cap = check_positive("boids", "velocity_cap", velocity_cap)
        self.protected_range = check_positive("boids", "protected_range", protected_range, 0)
        self.visual_range = check_positive("boids", "visual_range", visual_range)
        self.margin = check_positive("boids", "margin", margin, 0, (min(self.width, self.height) - 1) // 2)
        self.crash_range = check_positive("boids", "crash_range", crash_range, 0)
        self.max_steps = check_positive("boids", "max_steps", max_steps)
        self.walls = check_positive("boids", "walls", walls, 0, 1)
        values = (acceleration, avoid_factor, matching_factor, centering_factor, margin_factor)
        milli = [thousandths(name, value) for name, value in zip(FACTORS, values, strict=True)]
        self.acceleration_milli, self.avoid_milli, self.matching_milli, self.centering_milli, self.margin_milli = milli
        self.acceleration, self.avoid, self.matching, self.centering, self.margin_factor = [m / 1000.0 for m in milli]
        self.render_mode = render_mode
        self.possible_agents = [f"boid_{i}" for i in range(N)]
        self.agents: list[str] = []
        self.observation_spaces = {a: spaces.Box(-4.0, 4.0, (OBS,), dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: continuous_action_space(2) for a in self.possible_agents}
        self.rng = Rng()
        self.x, self.y, self.vx, self.vy = [0.0] * N, [0.0] * N, [0.0] * N, [0.0] * N
        self.steps = self.crowded = self.alone = self.outside = 0

    def sense(self) -> tuple[dict, list, bool]:
        """Every boid's observation and reward, and whether two boids crashed."""
        cap, vis = float(self.velocity_cap), float(self.visual_range)
        prot2, vis2 = float(self.protected_range * self.protected_range), float(self.visual_range * self.visual_range)
        crash2 = float(self.crash_range * self.crash_range)
        w, h, m = float(self.width), float(self.height), float(self.margin)
        x, y, vx, vy = self.x, self.y, self.vx, self.vy
        half_w, half_h = w / 2.0, h / 2.0
        rel_x = [[0.0] * N for _ in range(N)]
        rel_y = [[0.0] * N for _ in range(N)]
        for i in range(N):
            for j in range(i + 1, N):
                dx, dy = x[j] - x[i], y[j] - y[i]
                if not self.walls:  # the nearest image across the wrapped edges
                    if dx > half_w:
                        dx = dx - w
                    elif dx < -half_w:
                        dx = dx + w
                    if dy > half_h:
                        dy = dy - h
                    elif dy < -half_h:
                        dy = dy + h
                rel_x[i][j], rel_x[j][i], rel_y[i][j], rel_y[j][i] = dx, -dx, dy, -dy
        observations, rewards, crash = {}, [], False
        for i in range(N):
            near: list[tuple[float, int]] = []  # (d2, j), nearest first; ties keep the lower index first
            crowd = seen = 0
            crashed = False
            sx = sy = svx = svy = 0.0
            for j in range(N):
                if j == i:
                    continue
                dx, dy = rel_x[i][j], rel_y[i][j]
                d2 = dx * dx + dy * dy
                if d2 < crash2:
                    crashed = True
                if d2 < prot2:
                    crowd += 1
                elif d2 < vis2:
                    seen += 1
                    sx, sy, svx, svy = sx + dx, sy + dy, svx + vx[j], svy + vy[j]
                if len(near) < K or d2 < near[-1][0]:
                    at = len(near) if len(near) < K else K - 1
                    while at > 0 and d2 < near[at - 1][0]:
                        at -= 1
                    near.insert(at, (d2, j))
                    del near[K:]
            r = 0.0
            if crowd > 0:
                r = r - self.avoid * clamp(crowd / 5.0, 0.0, 1.0)
            if seen > 0:
                n = float(seen)
                r = r - self.matching * ((abs(svx / n - vx[i]) + abs(svy / n - vy[i])) / (4.0 * cap))
                r = r - self.centering * ((abs(sx / n) + abs(sy / n)) / (2.0 * vis))
            else:
                r = r - self.centering
            out_x, out_y = x[i] < m or x[i] > w - m, y[i] < m or y[i] > h - m
            r = r + (-self.margin_factor if out_x else self.margin_factor)
            r = r + (-self.margin_factor if out_y else self.margin_factor)
            if crashed:
                r = r - 1.0
            rewards.append(float(np.float32(r)))
            self.crowded += crowd > 0
            self.alone += seen == 0
            self.outside += out_x or out_y
            crash = crash or crashed
            row = [x[i] / w * 2.0 - 1.0, y[i] / h * 2.0 - 1.0, vx[i] / cap, vy[i] / cap]
            for _, j in near:
                row += [
                    clamp(rel_x[i][j] / vis, -SEEN_CLIP, SEEN_CLIP),
                    clamp(rel_y[i][j] / vis, -SEEN_CLIP, SEEN_CLIP),
                    (vx[j] - vx[i]) / cap,
                    (vy[j] - vy[i]) / cap,
                ]
            observations[self.possible_agents[i]] = np.array(row, dtype=np.float32)
        return observations, rewards, crash

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        m, cap = float(self.margin), float(self.velocity_cap)
        span_x, span_y = float(self.width) - 2.0 * m, float(self.height) - 2.0 * m
        for i in range(N):
            self.x[i] = m + self.rng.unit() * span_x
            self.y[i] = m + self.rng.unit() * span_y
            self.vx[i] = (self.rng.unit() - 0.5) * cap
            self.vy[i] = (self.rng.unit() - 0.5) * cap
        observations, _, _ = self.sense()
        self.steps = self.crowded = self.alone = self.outside = 0
        self.agents = list(self.possible_agents)
        return observations, {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        cap, w, h = float(self.velocity_cap), float(self.width), float(self.height)
        for i, agent in enumerate(self.possible_agents):
            q = quantize_actions(actions[agent], name="boids")
            ax, ay = int(q[0]) / ACTION_ONE, int(q[1]) / ACTION_ONE
            self.vx[i] = clamp(self.vx[i] + self.acceleration * ax, -cap, cap)
            self.vy[i] = clamp(self.vy[i] + self.acceleration * ay, -cap, cap)
            if self.walls:
                self.x[i] = clamp(self.x[i] + self.vx[i], 0.0, w)
                self.y[i] = clamp(self.y[i] + self.vy[i], 0.0, h)
            else:  # wrap around (a step is shorter than the arena)
                self.x[i] = wrap(self.x[i] + self.vx[i], w)
                self.y[i] = wrap(self.y[i] + self.vy[i], h)
        observations, rewards, crash = self.sense()
        self.steps += 1
        cut = not crash and self.steps >= self.max_steps
        info: dict = {}
        if crash or cut:
            boid_steps = float(N * self.steps)
            info = {
                "crowded": self.crowded / boid_steps,
                "alone": self.alone / boid_steps,
                "outside_margin": self.outside / boid_steps,
                "crashed": float(crash),
            }
            self.agents = []
        return self.together(observations, dict(zip(self.possible_agents, rewards, strict=True)), crash, cut, info)

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(72, 48)
        if self.margin_factor > 0:  # the margin band, where it pays
            m = self.margin
            canvas.rect(m / self.width, m / self.height, 1 - 2 * m / self.width, 0.0, ".")
            canvas.rect(m / self.width, 1 - m / self.height, 1 - 2 * m / self.width, 0.0, ".")
        for i in range(N):
            canvas.rect(self.x[i] / self.width - 0.006, self.y[i] / self.height - 0.01, 0.012, 0.02, "@")
        return canvas.show(self.render_mode, f"boids, step {self.steps}")

    def close(self) -> None:
        pass


GAME = Game(
    "boids",
    Boids,
    solved_return=-70.0,
    solved_meaning=(
        "a mean return of -70 per boid over a 256-step episode, as well as the classic boids steering (toward "
        "the flockmates' velocity and centre, away from crowding boids, weights tuned by hand: -68): a flock "
        "that keeps its spacing, heading and neighbours (random steering: -162, no steering: -127)"
    ),
    # Each boid's reward depends on its neighbours' next moves only a few steps ahead: a short horizon;
    # 128 hidden units and 8 minibatches. With a 30M budget seeds 1-3 reach -70 at 16.3M / 12.1M / 25.7M
    # steps (190 / 138 / 293 s, load 2 / 2 / 1); with 20M seed 3 ended at -72.0, still rising (seeds 1
    # and 2 had solved at 10.5M and 14.4M). With 64 units and 4 minibatches it stayed near -80 at 20M.
    config={
        "train": {
            "total_steps": 30_000_000,
            "num_steps": 64,
            "update_epochs": 4,
            "num_minibatches": 8,
            "learning_rate": 1e-3,
            "gamma": 0.95,
        },
        "vec": {"num_envs": 16},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"max_steps": 30, "crash_range": 1},
    cuda_type="Boids",
)
