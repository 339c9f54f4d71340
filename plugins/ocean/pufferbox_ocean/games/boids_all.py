"""Boids where every boid sees the whole flock: the readable reference of ``c/boids_all.h``.

Example:
    >>> env = BoidsAll()
    >>> obs, _ = env.reset(seed=1)
    >>> len(env.possible_agents), obs["boid_0"].shape, env.action_space("boid_0")
    (64, (256,), MultiDiscrete([5 5]))
    >>> obs["boid_3"][12:16].tolist()  # boid 3 sees itself where it stands
    [0.0, 0.0, 0.0, 0.0]
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.boids import clamp, thousandths
from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

N = 64  # boids per env
BOX = 32  # a boid's box: its position is the box's corner
FACTORS = ("avoid_factor", "matching_factor", "centering_factor", "margin_factor")


class BoidsAll(MultiAgentReference):
    """Boids where every boid sees all 64 and steers by a 5 x 5 choice (PufferLib 3.0's Boids rules).

    For comparisons that do the same work as PufferLib's Boids; ``ocean/boids`` is our own design (the
    8 nearest seen, continuous steering). Each step, boid by boid in index order: its action (two
    choices in 0..4) adds (choice - 2) / 2 to each velocity axis (clipped to +-``velocity_cap``), it
    moves (its box's corner clipped to the arena less 32), and its reward is taken against the others
    where they stand now. Closer than ``protected_range`` a boid crowds it; else within
    ``visual_range`` it is a flockmate. Reward, halved: ``-avoid_factor x min(crowding / 5, 1)``; with
    flockmates ``-matching_factor x`` the distance (per axis, summed) of its velocity from their mean
    and ``-centering_factor x`` of its position from their mean; ``+-margin_factor`` per axis inside /
    outside the ``margin`` band. The defaults are PufferLib's shipped config (a visual range inside the
    protected one: no boid is a flockmate, separation alone pays). Episodes are truncated after
    ``max_steps``. Observation (256 floats): every boid in index order, itself included, relative to
    it: position / arena size and velocity / cap, each scaled value rounded to single precision before
    the difference. Action: MultiDiscrete([5, 5]). The default policy reads that list in any order
    (``pufferbox_ocean.policy.FlockRadar``): a flat MLP does not learn from it.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_boids_all"}
    PARAMS = (
        "width",
        "height",
        "velocity_cap",
        "protected_range",
        "visual_range",
        "margin",
        "max_steps",
        "avoid_milli",
        "matching_milli",
        "centering_milli",
        "margin_milli",
    )
    METRICS = ("crowded",)
    TERMINATES = False  # as PufferLib's Boids: episodes end only at max_steps

    def __init__(
        self,
        width: int = 1080,
        height: int = 720,
        velocity_cap: int = 5,
        protected_range: int = 100,
        visual_range: int = 20,
        margin: int = 50,
        max_steps: int = 512,
        avoid_factor: float = 1.0,
        matching_factor: float = 1.0,
        centering_factor: float = 0.0,
        margin_factor: float = 0.0,
        render_mode: str | None = None,
    ):
        self.width = check_positive("boids_all", "width", width, BOX + 1)
        self.height = check_positive("boids_all", "height", height, BOX + 1)
        self.velocity_cap = check_positive("boids_all", "velocity_cap", velocity_cap)
        self.protected_range = check_positive("boids_all", "protected_range", protected_range, 0)
        self.visual_range = check_positive("boids_all", "visual_range", visual_range, 0)
        self.margin = check_positive("boids_all", "margin", margin, 0, (min(self.width, self.height) - 1) // 2)
        self.max_steps = check_positive("boids_all", "max_steps", max_steps)
        values = (avoid_factor, matching_factor, centering_factor, margin_factor)
        milli = [thousandths(name, value) for name, value in zip(FACTORS, values, strict=True)]
        self.avoid_milli, self.matching_milli, self.centering_milli, self.margin_milli = milli
        self.avoid, self.matching, self.centering, self.margin_factor = [m / 1000.0 for m in milli]
        self.render_mode = render_mode
        self.possible_agents = [f"boid_{i}" for i in range(N)]
        self.agents: list[str] = []
        self.observation_spaces = {a: spaces.Box(-2.0, 2.0, (4 * N,), dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: spaces.MultiDiscrete([5, 5]) for a in self.possible_agents}
        self.rng = Rng()
        self.x, self.y, self.vx, self.vy = [0.0] * N, [0.0] * N, [0.0] * N, [0.0] * N
        self.steps = self.crowded = 0

    def reward(self, i: int) -> float:
        """Boid ``i``'s reward against the flock where it stands now."""
        prot2 = float(self.protected_range * self.protected_range)
        vis2 = float(self.visual_range * self.visual_range)
        x, y = self.x[i], self.y[i]
        crowd = seen = 0
        sx = sy = svx = svy = 0.0
        for j in range(N):
            if j == i:
                continue
            dx, dy = x - self.x[j], y - self.y[j]
            d2 = dx * dx + dy * dy
            if d2 < prot2:
                crowd += 1
            elif d2 < vis2:
                seen += 1
                sx, sy, svx, svy = sx + self.x[j], sy + self.y[j], svx + self.vx[j], svy + self.vy[j]
        r = 0.0
        if crowd > 0:
            r = r - self.avoid * clamp(crowd / 5.0, 0.0, 1.0)
        if seen > 0:
            n = float(seen)
            r = r - self.matching * (abs(svx / n - self.vx[i]) + abs(svy / n - self.vy[i]))
            r = r - self.centering * (abs(sx / n - x) + abs(sy / n - y))
        m, w, h = float(self.margin), float(self.width), float(self.height)
        r = r + (-self.margin_factor if (y < m or y > h - m) else self.margin_factor)
        r = r + (-self.margin_factor if (x < m or x > w - m) else self.margin_factor)
        self.crowded += crowd > 0
        return r / 2.0

    def observe(self) -> dict:
        """Each boid's row: every boid's scaled position and velocity (single precision) less its own."""
        w, h, cap = float(self.width), float(self.height), float(self.velocity_cap)
        scaled = np.empty((N, 4), dtype=np.float32)
        for j in range(N):
            scaled[j] = (self.x[j] / w, self.y[j] / h, self.vx[j] / cap, self.vy[j] / cap)
        return {agent: (scaled - scaled[i]).reshape(-1) for i, agent in enumerate(self.possible_agents)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        m = float(self.margin)
        span_x, span_y = float(self.width) - 2.0 * m, float(self.height) - 2.0 * m
        for i in range(N):
            self.x[i] = m + self.rng.unit() * span_x
            self.y[i] = m + self.rng.unit() * span_y
            self.vx[i] = self.vy[i] = 0.0
        self.steps = self.crowded = 0
        self.agents = list(self.possible_agents)
        return self.observe(), {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        cap = float(self.velocity_cap)
        right, bottom = float(self.width - BOX), float(self.height - BOX)
        rewards = {}
        for i, agent in enumerate(self.possible_agents):
            choice = np.asarray(actions[agent]).reshape(-1)
            if choice.shape != (2,) or not (0 <= choice[0] <= 4 and 0 <= choice[1] <= 4):
                raise ValueError(f"boids_all: {agent}'s action must be two choices in 0..4, got {actions[agent]!r}")
            ax, ay = float(int(choice[0]) - 2) / 2.0, float(int(choice[1]) - 2) / 2.0
            self.vx[i] = clamp(self.vx[i] + ax, -cap, cap)
            self.vy[i] = clamp(self.vy[i] + ay, -cap, cap)
            self.x[i] = clamp(self.x[i] + self.vx[i], 0.0, right)
            self.y[i] = clamp(self.y[i] + self.vy[i], 0.0, bottom)
            rewards[agent] = float(np.float32(self.reward(i)))
        observations = self.observe()
        self.steps += 1
        cut = self.steps >= self.max_steps
        info: dict = {}
        if cut:
            info = {"crowded": self.crowded / float(N * self.steps)}
            self.agents = []
        return self.together(observations, rewards, False, cut, info)

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(72, 48)
        for i in range(N):
            canvas.rect(self.x[i] / self.width, self.y[i] / self.height, BOX / self.width, BOX / self.height, "@")
        return canvas.show(self.render_mode, f"boids (all seen), step {self.steps}")


GAME = Game(
    "boids_all",
    BoidsAll,
    solved_return=-30.0,
    solved_meaning=(
        "a mean return of -30 per boid over a 512-step episode: a flock that keeps its distance, about a third "
        "of boid-steps with one boid inside the protected range (random steering: -112, at rest: -144, steering "
        "away from every boid within 160 pixels: -73)"
    ),
    # The observation lists the flock by index, so a neighbour lands on different inputs for every index:
    # with a flat MLP the return fell from -150 to -156 over 8.3M steps. FlockRadar reads it the same for
    # any order (counts per direction and distance ring): solved at 5.8M / 4.7M / 5.8M steps (168 / 142 /
    # 161 s, seeds 1 / 2 / 3, load 2).
    policy="pufferbox_ocean.policy:FlockRadar",
    config={
        "train": {
            "total_steps": 20_000_000,
            "stop_on_solve": True,
            "num_steps": 64,
            "update_epochs": 4,
            "num_minibatches": 8,
            "learning_rate": 1e-3,
            "gamma": 0.95,
        },
        "vec": {"num_envs": 16},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"max_steps": 30},
    cuda_type="BoidsAll",
)
