"""Multi-agent Snake on one walled grid: the readable reference of ``c/snake.h`` (same rules, same draws).

Example:
    >>> env = Snake()
    >>> obs, infos = env.reset(seed=1)
    >>> len(env.possible_agents), obs["snake_0"].shape, env.action_space("snake_0")
    (8, (484,), Discrete(4))
    >>> obs["snake_0"].reshape(11, 11, 4)[5, 5].tolist()  # the centre cell: the own head
    [0.0, 0.0, 1.0, 0.0]
"""

from __future__ import annotations

from collections import deque

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

AGENTS = 8
RADIUS = 5
VIEW = 2 * RADIUS + 1
MIN_SIDE, MAX_SIDE = 10, 32
MAX_LEN = 256
SPAWN_GROWTH = 2  # a respawned snake has length 1 and grows to 3 over its next two moves
EMPTY, WALL, FOOD, BODY = 0, 1, 2, 3  # snake i's body cells hold BODY + i
MOVES = ((0, -1), (0, 1), (-1, 0), (1, 0))  # dx, dy of actions 0 up, 1 down, 2 left, 3 right


class Snake(MultiAgentReference):
    """Eight snakes share a walled map with ``num_food`` food items; each eats to grow and dies on contact.

    Each step every snake moves one cell, snake 0 first: 0 up, 1 down, 2 left, 3 right; the action
    opposite to its heading is ignored (it keeps going). Moving onto food grows it by one (+1);
    otherwise its tail moves first, so it may follow its own tail. Moving into a wall or any body
    (its own, or that of a snake yet to move this step) kills it (-1): its body vanishes and, after
    all moves, it respawns at a random free cell with length 1 (growing to 3 over its next two moves)
    and a random heading; then eaten food reappears at random free cells. A snake reaching
    ``max_length`` ends the episode (terminal); otherwise it is truncated after ``max_steps``.
    Observation: the 11 x 11 window around the head (outside the map is wall), row-major, each
    cell one-hot over wall, food, own body, other snake (all 0: empty), flattened. The return (mean
    over snakes) is food eaten minus deaths.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_snake"}
    PARAMS = ("width", "height", "num_food", "max_length", "max_steps")
    METRICS = ("food", "deaths", "longest")

    def __init__(
        self,
        width: int = 24,
        height: int = 24,
        num_food: int = 16,
        max_length: int = 48,
        max_steps: int = 512,
        render_mode: str | None = None,
    ):
        self.width = check_positive("snake", "width", width, MIN_SIDE, MAX_SIDE)
        self.height = check_positive("snake", "height", height, MIN_SIDE, MAX_SIDE)
        interior = (self.width - 2) * (self.height - 2)
        self.num_food = check_positive("snake", "num_food", num_food, 1, interior // 2)
        # Room for every snake at max_length and all the food, so a free cell always exists.
        longest = min((interior - self.num_food) // AGENTS, MAX_LEN)
        self.max_length = check_positive("snake", "max_length", max_length, 4, longest)
        self.max_steps = check_positive("snake", "max_steps", max_steps)
        self.render_mode = render_mode
        self.possible_agents = [f"snake_{i}" for i in range(AGENTS)]
        self.agents: list[str] = []
        self.observation_spaces = {
            a: spaces.Box(0.0, 1.0, (VIEW * VIEW * 4,), dtype=np.float32) for a in self.possible_agents
        }
        self.action_spaces = {a: spaces.Discrete(4) for a in self.possible_agents}
        self.rng = Rng()

    def free_cell(self) -> tuple[int, int]:
        """A random empty interior cell: uniform draws (row-major index) until one is empty."""
        w, n = self.width - 2, (self.width - 2) * (self.height - 2)
        while True:
            k = self.rng.below(n)
            x, y = 1 + k % w, 1 + k // w
            if self.grid[y][x] == EMPTY:
                return x, y

    def spawn(self, i: int) -> None:
        x, y = self.free_cell()
        self.heading[i] = self.rng.below(4)
        self.bodies[i] = deque([(x, y)])  # the head is the right end
        self.pending[i] = SPAWN_GROWTH
        self.grid[y][x] = BODY + i

    def observe(self, i: int) -> np.ndarray:
        obs = np.zeros((VIEW, VIEW, 4), dtype=np.float32)
        hx, hy = self.bodies[i][-1]
        for dy in range(VIEW):
            for dx in range(VIEW):
                x, y = hx + dx - RADIUS, hy + dy - RADIUS
                inside = 0 <= x < self.width and 0 <= y < self.height
                code = self.grid[y][x] if inside else WALL
                if code == EMPTY:
                    continue
                channel = 0 if code == WALL else 1 if code == FOOD else 2 if code == BODY + i else 3
                obs[dy, dx, channel] = 1.0
        return obs.reshape(-1)

    def observations(self) -> dict[str, np.ndarray]:
        return {a: self.observe(i) for i, a in enumerate(self.possible_agents)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        w, h = self.width, self.height
        self.grid = [[WALL if x in (0, w - 1) or y in (0, h - 1) else EMPTY for x in range(w)] for y in range(h)]
        self.steps = 0
        self.eaten, self.deaths = [0] * AGENTS, [0] * AGENTS
        self.bodies: list[deque] = [deque() for _ in range(AGENTS)]
        self.heading, self.pending = [0] * AGENTS, [0] * AGENTS
        for i in range(AGENTS):
            self.spawn(i)
        for _ in range(self.num_food):
            x, y = self.free_cell()
            self.grid[y][x] = FOOD
        self.agents = list(self.possible_agents)
        return self.observations(), {a: {} for a in self.agents}

    def move(self, i: int, action: int) -> tuple[float, bool]:
        """Snake i's move: its reward, and whether it died."""
        if action != self.heading[i] ^ 1:  # the reverse of the heading is ignored
            self.heading[i] = action
        body = self.bodies[i]
        dx, dy = MOVES[self.heading[i]]
        x, y = body[-1][0] + dx, body[-1][1] + dy
        food = self.grid[y][x] == FOOD
        grow = food or self.pending[i] > 0
        if not food and self.pending[i] > 0:
            self.pending[i] -= 1
        if not grow:
            tx, ty = body.popleft()
            self.grid[ty][tx] = EMPTY
        code = self.grid[y][x]
        if code == WALL or code >= BODY:
            for bx, by in body:
                self.grid[by][bx] = EMPTY
            body.clear()
            self.deaths[i] += 1
            return -1.0, True
        body.append((x, y))
        self.grid[y][x] = BODY + i
        if food:
            self.eaten[i] += 1
            return 1.0, False
        return 0.0, False

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        rewards, died, eaten = {}, [], 0
        for i, agent in enumerate(self.possible_agents):
            rewards[agent], dead = self.move(i, int(actions[agent]))
            eaten += rewards[agent] > 0
            if dead:
                died.append(i)
        for i in died:
            self.spawn(i)
        for _ in range(eaten):
            x, y = self.free_cell()
            self.grid[y][x] = FOOD
        self.steps += 1
        longest = max(len(body) for body in self.bodies)
        terminated = longest >= self.max_length
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            info = {"food": sum(self.eaten) / AGENTS, "deaths": sum(self.deaths) / AGENTS, "longest": float(longest)}
            self.agents = []
        return self.together(self.observations(), rewards, terminated, truncated, info)

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(self.width, self.height)
        for y, row in enumerate(self.grid):
            for x, code in enumerate(row):
                canvas.cell(x, y, {WALL: "#", FOOD: "o"}.get(code, "*" if code >= BODY else " "))
        for body in self.bodies:
            if body:
                canvas.cell(*body[-1], "@")
        title = f"step {self.steps}  food " + " ".join(str(e) for e in self.eaten)
        return canvas.show(self.render_mode, title)


GAME = Game(
    "snake",
    Snake,
    solved_return=60.0,
    solved_meaning=(
        "each snake nets 60 food minus deaths per 512-step episode (about 72 food eaten, 12 deaths; "
        "random actions: 14 food, 30 deaths, return -16)"
    ),
    config={
        "train": {
            "total_steps": 5_000_000,
            "stop_on_solve": True,
            "num_steps": 64,
            "num_minibatches": 8,
            "update_epochs": 4,
            "learning_rate": 1e-3,
            "ent_coef": 0.01,
        },
        "vec": {"num_envs": 32},
        "policy": {"hidden_size": 128},
    },
    # The GPU profile: 131,072 agent rows per update (256 envs x 8 snakes x 64 steps), the defaults'
    # four epochs over eight minibatches of 16,384: solves within 100 updates (benchmarks/gpu_profiles.py;
    # RESULTS.md, "GPU profiles")
    gpu_config={"train": {"total_steps": 228 * 131_072}, "vec": {"num_envs": 256}},
    check_kwargs={"width": 10, "height": 10, "num_food": 8, "max_length": 6, "max_steps": 25},
    cuda_type="Snake",
)
