"""Multi-agent trash pickup on a small grid: the readable reference of ``c/trash.h`` (same rules, same draws).

Example:
    >>> env = Trash()
    >>> obs, infos = env.reset(seed=1)
    >>> env.possible_agents, obs["agent_0"].shape, env.action_space("agent_0")
    (['agent_0', 'agent_1', 'agent_2'], (22,), Discrete(5))
    >>> _, rewards, terminations, truncations, _ = env.step({a: 0 for a in env.agents})
    >>> rewards
    {'agent_0': 0.0, 'agent_1': 0.0, 'agent_2': 0.0}
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

AGENTS = 3
NEAREST = 3  # items on the ground each agent sees
OBS = 3 + 3 * NEAREST + 2 + 3 * (AGENTS - 1) + 2
MIN_SIDE, MAX_SIDE = 7, 16
MAX_ITEMS, MAX_BINS = 32, 4
MOVES = ((0, 0), (0, -1), (0, 1), (-1, 0), (1, 0))  # dx, dy of 0 stay, 1 up, 2 down, 3 left, 4 right


class Trash(MultiAgentReference):
    """Three agents carry ``num_trash`` items, one at a time, into ``num_bins`` bins on a small grid.

    Reset places the bins, then the agents, then the items, each on a uniformly drawn empty cell.
    Each step the agents act in order (agent 0 first): 0 stay, 1 up, 2 down, 3 left, 4 right; a move
    off the grid or onto another agent is blocked. Then an empty-handed agent picks up the item on its
    cell, and an agent carrying an item on a bin delivers it (+1 to that agent). The episode ends when
    every item is delivered (terminal), else after ``max_steps`` (truncated); the return (mean over
    agents) is items delivered / 3.
    Observation (22 floats; distances scaled by the grid's width - 1 and height - 1): own x, y,
    carrying; the three nearest items on the ground (Manhattan, ties by item index) as dx, dy, 1 (zeros
    when fewer remain); the nearest bin's dx, dy; each other agent's dx, dy, carrying; the fraction of
    items not yet delivered; steps / max_steps.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_trash"}
    PARAMS = ("width", "height", "num_trash", "num_bins", "max_steps")
    METRICS = ("delivered", "cleared")

    def __init__(
        self,
        width: int = 10,
        height: int = 10,
        num_trash: int = 8,
        num_bins: int = 2,
        max_steps: int = 150,
        render_mode: str | None = None,
    ):
        self.width = check_positive("trash", "width", width, MIN_SIDE, MAX_SIDE)
        self.height = check_positive("trash", "height", height, MIN_SIDE, MAX_SIDE)
        self.num_trash = check_positive("trash", "num_trash", num_trash, 1, MAX_ITEMS)
        self.num_bins = check_positive("trash", "num_bins", num_bins, 1, MAX_BINS)
        self.max_steps = check_positive("trash", "max_steps", max_steps)
        self.render_mode = render_mode
        self.possible_agents = [f"agent_{i}" for i in range(AGENTS)]
        self.agents: list[str] = []
        self.observation_spaces = {a: spaces.Box(-1.0, 1.0, (OBS,), dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(5) for a in self.possible_agents}
        self.rng = Rng()

    def free_cell(self) -> tuple[int, int]:
        """A uniformly drawn cell with no bin, agent or item on it (draws repeat until one is)."""
        while True:
            cell = self.rng.below(self.width * self.height)
            x, y = cell % self.width, cell // self.width
            if (x, y) not in self.bins and (x, y) not in self.positions and (x, y) not in self.ground:
                return x, y

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        self.bins: list[tuple[int, int]] = []
        self.positions: list[tuple[int, int]] = []
        self.ground: dict[tuple[int, int], int] = {}  # cell -> index of the item lying there
        for _ in range(self.num_bins):
            self.bins.append(self.free_cell())
        for _ in range(AGENTS):
            self.positions.append(self.free_cell())
        for item in range(self.num_trash):
            self.ground[self.free_cell()] = item
        self.carrying = [False] * AGENTS
        self.steps = self.delivered = 0
        self.agents = list(self.possible_agents)
        return self.observations(), {a: {} for a in self.agents}

    def observe(self, i: int) -> np.ndarray:
        x, y = self.positions[i]
        sx, sy = self.width - 1, self.height - 1
        out = [x / sx, y / sy, float(self.carrying[i])]
        items = sorted(self.ground.items(), key=lambda entry: (abs(entry[0][0] - x) + abs(entry[0][1] - y), entry[1]))
        for k in range(NEAREST):
            if k < len(items):
                (ix, iy), _ = items[k]
                out += [(ix - x) / sx, (iy - y) / sy, 1.0]
            else:
                out += [0.0, 0.0, 0.0]
        bx, by = min(self.bins, key=lambda cell: abs(cell[0] - x) + abs(cell[1] - y))  # the first of the nearest
        out += [(bx - x) / sx, (by - y) / sy]
        for j, (ox, oy) in enumerate(self.positions):
            if j != i:
                out += [(ox - x) / sx, (oy - y) / sy, float(self.carrying[j])]
        out += [(self.num_trash - self.delivered) / self.num_trash, self.steps / self.max_steps]
        return np.array(out, dtype=np.float32)

    def observations(self) -> dict[str, np.ndarray]:
        return {a: self.observe(i) for i, a in enumerate(self.possible_agents)}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        rewards = {}
        for i, agent in enumerate(self.possible_agents):
            dx, dy = MOVES[int(actions[agent])]
            x, y = self.positions[i][0] + dx, self.positions[i][1] + dy
            if 0 <= x < self.width and 0 <= y < self.height and (x, y) not in self.positions:
                self.positions[i] = (x, y)
            here = self.positions[i]
            rewards[agent] = 0.0
            if not self.carrying[i] and here in self.ground:
                del self.ground[here]
                self.carrying[i] = True
            elif self.carrying[i] and here in self.bins:
                self.carrying[i] = False
                self.delivered += 1
                rewards[agent] = 1.0
        self.steps += 1
        terminated = self.delivered >= self.num_trash
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            info = {"delivered": float(self.delivered), "cleared": float(terminated)}
            self.agents = []
        return self.together(self.observations(), rewards, terminated, truncated, info)

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(self.width, self.height)
        for x, y in self.bins:
            canvas.cell(x, y, "#")
        for x, y in self.ground:
            canvas.cell(x, y, "x")
        for i, (x, y) in enumerate(self.positions):
            canvas.cell(x, y, "*" if self.carrying[i] else "@")
        title = f"step {self.steps}  delivered {self.delivered}/{self.num_trash}"
        return canvas.show(self.render_mode, title)


GAME = Game(
    "trash",
    Trash,
    solved_return=2.6,
    solved_meaning=(
        "the team delivers 7.8 of the 8 items per 150-step episode on average (return = items / 3; "
        "random actions deliver 2 items, return 0.66)"
    ),
    config={
        "train": {
            "total_steps": 5_000_000,
            "stop_on_solve": True,
            "num_steps": 64,
            "num_minibatches": 4,
            "update_epochs": 4,
            "learning_rate": 1e-3,
            "ent_coef": 0.01,
        },
        "vec": {"num_envs": 64},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"width": 7, "height": 7, "num_trash": 1, "num_bins": 4, "max_steps": 25},
    cuda_type="Trash",
)
