"""Robotic warehouse (RWare-like) for four robots: the readable reference of ``c/rware.h`` (same rules, same draws).

Example:
    >>> env = Rware()
    >>> obs, infos = env.reset(seed=1)
    >>> env.possible_agents, obs["robot_0"].shape, env.action_space("robot_0")
    (['robot_0', 'robot_1', 'robot_2', 'robot_3'], (84,), Discrete(5))
    >>> float(obs["robot_0"][9 + 3 * 12])  # the window's centre holds the robot itself
    1.0
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

AGENTS = 4
REACH = 2  # the window spans 2 cells each way
VIEW = 2 * REACH + 1
SELF = 9
OBS = SELF + 3 * VIEW * VIEW
NOOP, FORWARD, LEFT, RIGHT, TOGGLE = range(5)
MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))  # dx, dy of facing 0 up, 1 right, 2 down, 3 left
OFF, AISLE, SLOT, GOAL = -2, 0, 1, 2  # floor codes: twice the observed value
SIZES = ((7, 5, 8), (10, 11, 32), (20, 10, 80), (20, 16, 144))  # width, height, shelves of each layout


def layout_cell(layout: int, x: int, y: int) -> int:
    """The floor code of (x, y) in ``layout``: 0 the small default, 1-3 PufferLib 3.0's rware maps 1-3."""
    left, right = 2 <= x <= 9, 11 <= x <= 18
    if layout == 0:
        if (x, y) == (3, 3):
            return GOAL
        return SLOT if y in (1, 2) and x in (1, 2, 4, 5) else AISLE
    if layout == 1:
        if y == 10 and x in (4, 5):
            return GOAL
        return SLOT if 1 <= y <= 8 and x in (1, 2, 7, 8) else AISLE
    if layout == 2:
        if x == 0 and y in (4, 5):
            return GOAL
        return SLOT if (y in (1, 2, 7, 8) and (left or right)) or (y in (4, 5) and right) else AISLE
    if x == 0 and y in (7, 8):
        return GOAL
    return SLOT if (y in (1, 2, 4, 5, 10, 11, 13, 14) and (left or right)) or (y in (7, 8) and right) else AISLE


class Rware(MultiAgentReference):
    """Four robots lift requested shelves, bring them to a goal and put them back on free shelf slots.

    Layouts (``layout``): 0, 7 x 6 with 8 shelf slots in two 2 x 2 blocks and one goal below them; 1-3,
    PufferLib 3.0's rware maps 1-3 (10 x 11 with 32 slots, 20 x 10 with 80, 20 x 16 with 144, two goals
    each). Every slot starts with its shelf; ``requested`` shelves are requested at a time. Actions: 0
    no-op, 1 forward, 2 turn left, 3 turn right, 4 load/unload (lift the shelf above an empty-handed
    robot; put a carried shelf down on a free slot). Robots carrying a shelf cannot enter a cell where a
    shelf stands; moves are simultaneous (same target: the lowest-numbered robot goes; head-on swaps
    and moves into a robot that stays are blocked; rings of robots turn together). A robot carrying a
    requested shelf onto a goal delivers it (+1 to that robot) and a new standing shelf is requested;
    the delivered shelf must still be put back. ``shaping`` 1 adds +0.5 for a requested shelf's first
    lift and +0.5 for putting a delivered shelf back (at most 2 per delivery). The episode ends after
    ``target_deliveries`` team deliveries (0: never), else it is truncated after ``max_steps``.
    Observation (84 floats): x, y (scaled to [0, 1]), facing one-hot, carrying, carrying a requested
    shelf, steps / max_steps; the 5 x 5 window around the robot (row-major), 3 floats a cell: robot,
    shelf (0.5, 1 requested) and floor (0 aisle, 0.5 slot, 1 goal, -1 off the floor).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_rware"}
    PARAMS = ("layout", "requested", "max_steps", "target_deliveries", "shaping")
    METRICS = ("deliveries", "returned")

    def __init__(
        self,
        layout: int = 0,
        requested: int = 2,
        max_steps: int = 250,
        target_deliveries: int = 0,
        shaping: int = 1,
        render_mode: str | None = None,
    ):
        self.layout = check_positive("rware", "layout", layout, 0, len(SIZES) - 1)
        self.width, self.height, self.shelves = SIZES[self.layout]
        top = self.shelves - AGENTS - 1  # a new request always finds a standing, unrequested shelf
        self.requested = check_positive("rware", f"requested (layout {self.layout})", requested, 1, top)
        self.max_steps = check_positive("rware", "max_steps", max_steps)
        self.target_deliveries = check_positive("rware", "target_deliveries", target_deliveries, 0)
        self.shaping = check_positive("rware", "shaping", shaping, 0, 1)
        self.render_mode = render_mode
        self.possible_agents = [f"robot_{i}" for i in range(AGENTS)]
        self.agents: list[str] = []
        self.observation_spaces = {a: spaces.Box(-1.0, 1.0, (OBS,), dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(5) for a in self.possible_agents}
        self.rng = Rng()
        self.floor = [[layout_cell(self.layout, x, y) for x in range(self.width)] for y in range(self.height)]
        self.slots = [(x, y) for y in range(self.height) for x in range(self.width) if self.floor[y][x] == SLOT]

    def floor_at(self, x: int, y: int) -> int:
        return self.floor[y][x] if 0 <= x < self.width and 0 <= y < self.height else OFF

    def request(self) -> None:
        """Request a standing, unrequested shelf (draws repeat until one is)."""
        while True:
            s = self.rng.below(self.shelves)
            if not self.is_requested[s] and self.standing.get(self.shelf_pos[s]) == s:
                self.is_requested[s] = True
                self.lift_paid[s] = False
                return

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        self.shelf_pos = list(self.slots)  # where each shelf stands (or last stood, while carried)
        self.standing = {cell: s for s, cell in enumerate(self.slots)}  # cell -> shelf standing there
        self.is_requested = [False] * self.shelves
        self.lift_paid = [False] * self.shelves
        self.awaits_return = [False] * self.shelves
        self.steps = self.deliveries = self.returned = 0
        for _ in range(self.requested):
            self.request()
        self.positions: list[tuple[int, int]] = []
        self.facing: list[int] = []
        for _ in range(AGENTS):
            while True:
                cell = self.rng.below(self.width * self.height)
                xy = (cell % self.width, cell // self.width)
                if xy not in self.positions:
                    break
            self.positions.append(xy)
            self.facing.append(self.rng.below(4))
        self.carrying: list[int | None] = [None] * AGENTS
        self.agents = list(self.possible_agents)
        return self.observations(), {a: {} for a in self.agents}

    def seen_shelf(self, cell: tuple[int, int]) -> float:
        s = self.standing.get(cell)
        if s is None and cell in self.positions:
            s = self.carrying[self.positions.index(cell)]
        return 0.0 if s is None else (1.0 if self.is_requested[s] else 0.5)

    def observe(self, i: int) -> np.ndarray:
        x, y = self.positions[i]
        s = self.carrying[i]
        out = [x / (self.width - 1), y / (self.height - 1), 0.0, 0.0, 0.0, 0.0]
        out[2 + self.facing[i]] = 1.0
        out += [float(s is not None), float(s is not None and self.is_requested[s]), self.steps / self.max_steps]
        for dy in range(-REACH, REACH + 1):
            for dx in range(-REACH, REACH + 1):
                cell = (x + dx, y + dy)
                out += [float(cell in self.positions), self.seen_shelf(cell), self.floor_at(*cell) * 0.5]
        return np.array(out, dtype=np.float32)

    def observations(self) -> dict[str, np.ndarray]:
        return {a: self.observe(i) for i, a in enumerate(self.possible_agents)}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        rewards = [0.0] * AGENTS
        target: list[tuple[int, int] | None] = [None] * AGENTS
        for i, agent in enumerate(self.possible_agents):
            action, here, s = int(actions[agent]), self.positions[i], self.carrying[i]
            if action == FORWARD:
                dx, dy = MOVES[self.facing[i]]
                ahead = (here[0] + dx, here[1] + dy)
                if self.floor_at(*ahead) != OFF and not (s is not None and ahead in self.standing):
                    target[i] = ahead
            elif action == LEFT:
                self.facing[i] = (self.facing[i] + 3) % 4
            elif action == RIGHT:
                self.facing[i] = (self.facing[i] + 1) % 4
            elif action == TOGGLE:
                if s is None and here in self.standing:
                    s = self.carrying[i] = self.standing.pop(here)
                    if self.shaping and self.is_requested[s] and not self.lift_paid[s]:
                        rewards[i] += 0.5
                    self.lift_paid[s] = True
                elif s is not None and self.floor_at(*here) == SLOT and here not in self.standing:
                    self.carrying[i] = None
                    self.standing[here] = s
                    self.shelf_pos[s] = here
                    if self.awaits_return[s]:
                        self.awaits_return[s] = False
                        self.returned += 1
                        if self.shaping:
                            rewards[i] += 0.5
        self.resolve_moves(target)
        for i in range(AGENTS):
            s = self.carrying[i]
            x, y = self.positions[i]
            if s is not None and self.is_requested[s] and self.floor[y][x] == GOAL:
                self.is_requested[s] = False
                self.awaits_return[s] = True
                self.deliveries += 1
                rewards[i] += 1.0
                self.request()
        self.steps += 1
        terminated = self.target_deliveries > 0 and self.deliveries >= self.target_deliveries
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            info = {"deliveries": float(self.deliveries), "returned": float(self.returned)}
            self.agents = []
        rewards_by_agent = dict(zip(self.possible_agents, rewards, strict=True))
        return self.together(self.observations(), rewards_by_agent, terminated, truncated, info)

    def resolve_moves(self, target: list) -> None:
        """Simultaneous moves: same target, lowest index goes; swaps and moves into staying robots are blocked."""
        for i in range(AGENTS):
            if target[i] is not None and target[i] in target[:i]:
                target[i] = None
        occupant = {cell: i for i, cell in enumerate(self.positions)}
        for i in range(AGENTS):
            other = occupant.get(target[i]) if target[i] is not None else None
            if other is not None and target[other] == self.positions[i]:
                target[i] = target[other] = None
        changed = True
        while changed:
            changed = False
            for i in range(AGENTS):
                other = occupant.get(target[i]) if target[i] is not None else None
                if other is not None and target[other] is None:
                    target[i], changed = None, True
        self.positions = [t if t is not None else p for p, t in zip(self.positions, target, strict=True)]

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(self.width, self.height)
        for y in range(self.height):
            for x in range(self.width):
                canvas.cell(x, y, {SLOT: ".", GOAL: "#"}.get(self.floor[y][x], " "))
        for (x, y), s in self.standing.items():
            canvas.cell(x, y, "x" if self.is_requested[s] else "o")
        for (x, y), load in zip(self.positions, self.carrying, strict=True):
            canvas.cell(x, y, "@" if load is None else ("*" if self.is_requested[load] else "+"))
        title = f"step {self.steps}  deliveries {self.deliveries}  returned {self.returned}"
        return canvas.show(self.render_mode, title)


GAME = Game(
    "rware",
    Rware,
    solved_return=15.0,
    solved_meaning=(
        "the four robots deliver about 30 requested shelves per 250-step episode and put them back (return: mean "
        "over robots of 1 per delivery plus the 0.5 + 0.5 shaping, 2 per cycle; random actions: 0.26, about "
        "0.3 deliveries)"
    ),
    config={
        "train": {
            "total_steps": 6_000_000,
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
    check_kwargs={"layout": 0, "requested": 3, "max_steps": 100, "target_deliveries": 1},
    cuda_type="Rware",
)
