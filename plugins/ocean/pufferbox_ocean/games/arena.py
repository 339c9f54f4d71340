"""Arena: 256 agents in 4 teams forage and fight on one grid; the readable reference of ``c/arena.h``.

Example:
    >>> env = Arena()
    >>> obs, _ = env.reset(seed=1)
    >>> len(env.possible_agents), obs["agent_0"].shape, env.action_space("agent_0")
    (256, (200,), Discrete(9))
    >>> obs, rewards, terminations, truncations, infos = env.step({a: 0 for a in env.agents})
    >>> sum(rewards.values()) >= 0.0  # standing still: only agents born on a ration eat, nobody dies yet
    True
"""

from __future__ import annotations

import collections

import numpy as np
from gymnasium import spaces
from numpy.lib.stride_tricks import sliding_window_view

from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

AGENTS = 256
TEAMS = 4
MIN_SIZE, MAX_SIZE = 24, 64
R = 3  # window radius
W = 2 * R + 1
WIN = W * W
HP = 10
STOMACH = 40
MEAL = 20
HEAL = 2
DAMAGE = 4
OBS = 4 * WIN + 4
TEAM_GLYPHS = "@x*+"


class Arena(MultiAgentReference):
    """Arena: 256 agents in 4 teams forage and fight on a walled ``size`` x ``size`` grid.

    ``food`` cells (drawn at reset) each hold a ration that regrows ``regrow`` steps after it is eaten.
    Agent i is on team i % 4, with health 10 and a stomach of 40. Each step, in agent order: a move
    (into a free in-map cell, else stay) or an attack on the neighbouring cell (an enemy there loses 4
    health; at 0 it dies); then an agent on a ration eats it (stomach +20, health +2, capped). Then each
    agent digests one stomach unit, or with an empty stomach loses one health (at 0 it starves).
    Rations regrow, and the dead respawn at random free cells, healthy and fed (agents never leave).
    Rewards: +1 a ration eaten, +1 a kill, -1 a death. A team's score is its kills: the episode ends
    for everyone (terminated) when a team reaches ``score_limit``, else it is truncated at ``max_steps``.
    Observation (200 floats): a 7x7 window in 4 planes (wall, ration, ally health / 10, enemy health /
    10; the agent itself left out), then own health / 10, stomach / 40, x / size, y / size.
    Actions: 0 stay, 1-4 move up/down/left/right, 5-8 attack up/down/left/right.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_arena"}
    PARAMS = ("size", "food", "regrow", "score_limit", "max_steps")
    METRICS = ("eaten", "kills", "starved", "decided")

    def __init__(
        self,
        size: int = 48,
        food: int = 288,
        regrow: int = 20,
        score_limit: int = 1000,
        max_steps: int = 512,
        render_mode: str | None = None,
    ):
        self.size = check_positive("arena", "size", size, MIN_SIZE, MAX_SIZE)
        self.food = check_positive("arena", "food", food, 1, self.size * self.size // 2)
        self.regrow = check_positive("arena", "regrow", regrow)
        self.score_limit = check_positive("arena", "score_limit", score_limit)
        self.max_steps = check_positive("arena", "max_steps", max_steps)
        self.render_mode = render_mode
        self.possible_agents = [f"agent_{i}" for i in range(AGENTS)]
        self.agents: list[str] = []
        self._observation_space = spaces.Box(0.0, 1.0, (OBS,), dtype=np.float32)
        self._action_space = spaces.Discrete(9)
        self.stride = self.size + 2 * R  # the grid padded by the window radius with walls, as flat indices
        self.deltas = (-self.stride, self.stride, -1, 1)  # up, down, left, right
        self.team = np.arange(AGENTS) % TEAMS
        self.rng = Rng()

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def draw_cell(self) -> int:
        c = self.rng.below(self.size * self.size)
        return (c // self.size + R) * self.stride + c % self.size + R

    def spawn(self, i: int) -> None:
        c = self.draw_cell()
        while self.occupant[c] >= 0:
            c = self.draw_cell()
        self.occupant[c] = i
        self.pos[i], self.hp[i], self.stomach[i], self.alive[i] = c, HP, STOMACH, True

    def observe(self) -> dict:
        pos = np.array(self.pos)
        ys, xs = pos // self.stride - R, pos % self.stride - R  # window corners (padded grid)
        windows = [sliding_window_view(g.reshape(self.stride, self.stride), (W, W))[ys, xs].reshape(AGENTS, WIN)
                   for g in (self.wall, self.ration, self.occupant)]  # fmt: skip
        wall, ration, occupant = windows
        hp = np.array(self.hp)
        health = np.where(occupant >= 0, hp[occupant] / HP, 0.0)
        team = np.where(occupant >= 0, occupant % TEAMS, -1)
        mine = self.team[:, None]
        ally = (team == mine) & (occupant != np.arange(AGENTS)[:, None])
        enemy = (team >= 0) & (team != mine)
        stats = np.stack([hp / HP, np.array(self.stomach) / STOMACH, xs / self.size, ys / self.size], axis=1)
        rows = np.concatenate(
            [wall, ration, np.where(ally, health, 0.0), np.where(enemy, health, 0.0), stats], axis=1
        ).astype(np.float32)
        return {a: rows[i] for i, a in enumerate(self.possible_agents)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        grid = np.arange(self.stride * self.stride)
        x, y = grid % self.stride - R, grid // self.stride - R
        self.wall = ((x < 0) | (y < 0) | (x >= self.size) | (y >= self.size)).astype(np.uint8)
        self.ration = np.zeros(self.stride * self.stride, dtype=np.uint8)
        self.occupant = np.full(self.stride * self.stride, -1, dtype=np.int64)
        for _ in range(self.food):
            c = self.draw_cell()
            while self.ration[c]:
                c = self.draw_cell()
            self.ration[c] = 1
        self.pos, self.hp, self.stomach, self.alive = [0] * AGENTS, [0] * AGENTS, [0] * AGENTS, [False] * AGENTS
        for i in range(AGENTS):
            self.spawn(i)
        self.regrowing: collections.deque = collections.deque()  # (cell, step it regrows), oldest first
        self.steps = self.eaten = self.kills = self.starved = 0
        self.score = [0] * TEAMS
        self.agents = list(self.possible_agents)
        return self.observe(), {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        reward = [0] * AGENTS
        self.steps += 1
        for i in range(AGENTS):
            if not self.alive[i]:
                continue  # killed earlier this step
            a, me = int(actions[self.possible_agents[i]]), self.pos[i]
            if 1 <= a <= 4:
                to = me + self.deltas[a - 1]
                if not self.wall[to] and self.occupant[to] < 0:
                    self.occupant[me], self.occupant[to], self.pos[i] = -1, i, to
            elif a >= 5:
                at = me + self.deltas[a - 5]
                j = int(self.occupant[at])
                if j >= 0 and j % TEAMS != i % TEAMS:
                    self.hp[j] -= DAMAGE
                    if self.hp[j] <= 0:
                        self.alive[j], self.occupant[at] = False, -1
                        reward[i] += 1
                        reward[j] -= 1
                        self.kills += 1
                        self.score[i % TEAMS] += 1
            here = self.pos[i]
            if self.ration[here]:
                self.ration[here] = 0
                self.regrowing.append((here, self.steps + self.regrow))
                self.stomach[i] = min(self.stomach[i] + MEAL, STOMACH)
                self.hp[i] = min(self.hp[i] + HEAL, HP)
                reward[i] += 1
                self.eaten += 1
        for i in range(AGENTS):
            if not self.alive[i]:
                continue
            if self.stomach[i] > 0:
                self.stomach[i] -= 1
            else:
                self.hp[i] -= 1
                if self.hp[i] <= 0:
                    self.alive[i], self.occupant[self.pos[i]] = False, -1
                    reward[i] -= 1
                    self.starved += 1
        while self.regrowing and self.regrowing[0][1] <= self.steps:
            self.ration[self.regrowing.popleft()[0]] = 1
        for i in range(AGENTS):
            if not self.alive[i]:
                self.spawn(i)

        decided = max(self.score) >= self.score_limit
        truncated = not decided and self.steps >= self.max_steps
        info = {}
        if decided or truncated:
            info = {
                "eaten": self.eaten / AGENTS,
                "kills": self.kills / AGENTS,
                "starved": self.starved / AGENTS,
                "decided": 1.0 if decided else 0.0,
            }
        names = self.possible_agents
        observations = self.observe()
        rewards = {a: float(reward[i]) for i, a in enumerate(names)}
        terminations = {a: decided for a in names}
        truncations = {a: truncated for a in names}
        infos = {a: dict(info) for a in names}
        if decided or truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(self.size, self.size)
        for c in np.flatnonzero(self.ration):
            canvas.cell(int(c) % self.stride - R, int(c) // self.stride - R, "o")
        for i in range(AGENTS):
            canvas.cell(self.pos[i] % self.stride - R, self.pos[i] // self.stride - R, TEAM_GLYPHS[i % TEAMS])
        title = f"step {self.steps}: team kills " + " ".join(f"{g}{s}" for g, s in zip(TEAM_GLYPHS, self.score))
        return canvas.show(self.render_mode, title)


GAME = Game(
    "arena",
    Arena,
    solved_return=20.0,
    solved_meaning=(
        "a mean per-agent return of 20 over the 512-step episode: about 20 rations eaten per agent net of "
        "starvations (random actions: about 8, 13 eaten and 5 starved); kills and deaths cancel in the mean"
    ),
    # One episode's return is already a mean over 256 agents: a 4-episode window (2 rounds of 2 envs)
    # judges as well as Pong's 20 without waiting 10 rounds (2.6M steps) to fill.
    config={"train": {"total_steps": 5_000_000, "stop_on_solve": True, "solve_window": 4}, "vec": {"num_envs": 2}},
    check_kwargs={"size": 24, "food": 100, "regrow": 10, "score_limit": 90, "max_steps": 40},
    cuda_type="Arena",
)
