"""Discrete Tag (WarpDrive's benchmark game): the kernel's CPU reference and a PettingZoo env on it.

Taggers (the first ``num_taggers`` agents) chase runners on a grid; a runner sharing a cell
with a tagger is tagged (``tag_penalty``), leaves the game, and each tagger there earns
``tag_reward``. Episodes end when every runner is tagged or after ``episode_length`` steps;
a finished env restarts from the positions drawn at the first reset (WarpDrive's reset).
``k_nearest > 0`` gives partial observations of the K nearest agents. With many agents per cell
the kernel finds them through a cell index (``cell_capacity``): the observations are the same.

Example:
    >>> env = TagEnv(num_taggers=1, num_runners=4)
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs)[:2], obs["agent_0"].shape
    (['agent_0', 'agent_1'], (20,))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv

from pufferbox.api import BatchedReference
from pufferbox.cuda.rng import env_keys, f32, hash32
from pufferbox_warp.tag_common import catches, leave_and_count, nearest_agents, other_agents, report_done

SOURCE = Path(__file__).parent / "kernels" / "tag.cu"
MOVES = np.array([[0, 0], [0, 1], [0, -1], [-1, 0], [1, 0]], dtype=np.int32)  # stay, up, down, left, right


class TagReference(BatchedReference):
    """``num_envs`` discrete Tag games in numpy, phase for phase like ``tag.cu``."""

    state_arrays = ("pos", "in_game", "steps", "tagged", "cell_count", "cell_agents", "cell_overflow")
    reset_arrays: tuple[str, ...] = ("pos", "in_game", "steps")  # + the cell index's arrays when it is on
    scratch_arrays = ("cell_agents",)  # the kernel files agents in atomic (arrival) order
    step_kernels = ("tag_move", "tag_tag", "tag_count")
    observe_kernel = "tag_observe"

    def __init__(
        self,
        num_envs: int = 1,
        num_taggers: int = 1,
        num_runners: int = 4,
        grid: int = 20,
        episode_length: int = 100,
        k_nearest: int = 0,
        tag_reward: float = 1.0,
        tag_penalty: float = -1.0,
        cell_capacity: int | None = None,
    ):
        """``cell_capacity``: agents one cell of the kernel's cell index holds (0: no index, the
        nearest-K search scans every agent; None: an index where it pays, see :func:`cell_capacity_for`)."""
        if num_taggers < 1 or num_runners < 1:
            raise ValueError("tag needs at least one tagger and one runner")
        self.num_envs, self.num_taggers = num_envs, num_taggers
        self.num_agents, self.grid, self.episode_length = num_taggers + num_runners, grid, episode_length
        if not 0 <= k_nearest <= self.num_agents - 1:
            raise ValueError(f"k_nearest must be in [0, {self.num_agents - 1}] (0 = observe everyone), got {k_nearest}")
        self.k_nearest = k_nearest
        if cell_capacity is None:
            cell_capacity = cell_capacity_for(self.num_agents, grid, k_nearest)
        if cell_capacity < 0:
            raise ValueError(f"cell_capacity must be >= 0 (0 = no cell index), got {cell_capacity}")
        self.cell_capacity = cell_capacity if k_nearest else 0
        self.cells = grid * grid if self.cell_capacity else 1
        if self.cell_capacity:  # a restored env gets the index of its restored positions
            self.reset_arrays = (*self.reset_arrays, "cell_count", "cell_agents", "cell_overflow")
        self.observed = k_nearest or self.num_agents - 1
        self.obs_dim, self.num_actions = 4 + 4 * self.observed, 5
        self.tag_reward, self.tag_penalty = f32(tag_reward), f32(tag_penalty)
        self.allocate()

    def state_layout(self) -> dict:
        i32 = np.dtype(np.int32)
        return {
            "pos": (2 * self.num_agents, i32),
            "in_game": (self.num_agents, i32),
            "steps": (1, i32),
            "tagged": (self.num_agents, i32),
            "cell_count": (self.cells, i32),
            "cell_agents": (self.cells * max(self.cell_capacity, 1), i32),
            "cell_overflow": (1, i32),
        }

    def constants(self) -> dict:
        return {
            **super().constants(),
            "NUM_TAGGERS": self.num_taggers,
            "GRID": self.grid,
            "GRID_F": float(self.grid),
            "EPISODE_LENGTH": self.episode_length,
            "EPISODE_LENGTH_F": float(self.episode_length),
            "K_NEAREST": self.k_nearest,
            "CELL_INDEX": int(self.cell_capacity > 0),
            "CELLS": self.cells,
            "CELL_CAP": max(self.cell_capacity, 1),
            "TAG_REWARD": float(self.tag_reward),
            "TAG_PENALTY": float(self.tag_penalty),
        }

    def init_state(self, seed: int) -> None:
        a = self.arrays
        keys = env_keys(seed, self.num_envs)[:, None]
        counters = np.arange(2 * self.num_agents, dtype=np.uint32)[None, :]
        a["pos"][:] = (hash32(keys, counters) % np.uint32(self.grid)).astype(np.int32)
        a["in_game"][:] = 1
        a["steps"][:] = 0
        a["tagged"][:] = 0
        self.file_cells()

    def xy(self) -> np.ndarray:
        return self.arrays["pos"].reshape(self.num_envs, self.num_agents, 2)

    def tag_move(self) -> None:
        a = self.arrays
        a["rewards"][:] = 0
        a["masks"][:] = a["in_game"] != 0
        moved = np.clip(self.xy() + MOVES[a["actions"]], 0, self.grid - 1)
        pos = self.xy()
        pos[:] = np.where((a["in_game"] != 0)[..., None], moved, pos)

    def tag_tag(self) -> None:
        a, t = self.arrays, self.num_taggers
        pos, alive = self.xy(), a["in_game"] != 0
        same = (pos[:, :, None, :] == pos[:, None, :, :]).all(-1)  # [env, agent, other]
        is_tagger = np.arange(self.num_agents) < t
        caught, hit = catches(same, alive, is_tagger)
        a["tagged"][:] = hit
        self.file_cells()
        rewards = np.where(is_tagger, self.tag_reward * caught.astype(np.float32), np.where(hit, self.tag_penalty, f32(0.0)))
        a["rewards"][:] = np.where(alive, rewards, a["rewards"])

    def tag_count(self) -> None:
        leave_and_count(self.arrays, self.num_taggers, self.episode_length)

    def file_cells(self) -> None:
        """The cell index: each agent filed under its cell, lower indices first (the kernel's order may differ)."""
        if not self.cell_capacity:  # the arrays stay as allocated: zeros, one word per env
            return
        a = self.arrays
        a["cell_count"][:] = 0
        a["cell_agents"][:] = 0
        pos, cap = self.xy(), self.cell_capacity
        cells = pos[..., 1] * self.grid + pos[..., 0]  # [env, agent]
        envs = np.arange(self.num_envs)[:, None]
        np.add.at(a["cell_count"], (np.broadcast_to(envs, cells.shape), cells), 1)
        order = np.argsort(cells, axis=1, kind="stable")  # agents by cell, by index within a cell
        by_cell = np.take_along_axis(cells, order, axis=1)
        first = np.cumsum(a["cell_count"], axis=1) - a["cell_count"]  # [env, cell]: first rank of the cell
        rank = np.arange(self.num_agents)[None, :] - first[envs, by_cell]
        kept = rank < cap
        a["cell_agents"][np.broadcast_to(envs, kept.shape)[kept], (by_cell * cap + rank)[kept]] = order[kept]
        a["cell_overflow"][:, 0] = (a["cell_count"] > cap).any(axis=1)

    def tag_observe(self) -> None:
        a = self.arrays
        report_done(a)
        pos, n, g = self.xy(), self.num_agents, f32(self.grid)
        obs = self.view("observations")
        obs[:, :, 0:2] = pos.astype(np.float32) / g
        obs[:, :, 2] = np.arange(n) < self.num_taggers
        obs[:, :, 3] = a["steps"].astype(np.float32) / f32(self.episode_length)
        # a few envs at a time: [env, agent, other] temporaries of 1000-agent games would take tens of GB
        chunk = max(1, 2**22 // (n * n))
        for lo in range(0, self.num_envs, chunk):
            obs[lo : lo + chunk, :, 4:] = self.observed_agents(pos[lo : lo + chunk], a["in_game"][lo : lo + chunk])

    def observed_agents(self, pos: np.ndarray, in_game: np.ndarray) -> np.ndarray:
        """``[env, agent, 4 * observed]`` features of the agents each agent observes."""
        envs, n, g = pos.shape[0], self.num_agents, f32(self.grid)
        delta = pos[:, None, :, :] - pos[:, :, None, :]  # [env, agent, other, 2]: other - self
        if self.k_nearest:
            squares = delta * delta
            others = nearest_agents(squares[..., 0] + squares[..., 1], self.k_nearest)
        else:
            others = other_agents(envs, n)
        e_idx, a_idx = np.arange(envs)[:, None, None], np.arange(n)[None, :, None]
        feats = np.empty((envs, n, self.observed, 4), np.float32)
        feats[..., 0:2] = delta[e_idx, a_idx, others].astype(np.float32) / g
        feats[..., 2] = others < self.num_taggers
        feats[..., 3] = in_game[e_idx, others] != 0
        return feats.reshape(envs, n, -1)


def cell_capacity_for(num_agents: int, grid: int, k_nearest: int) -> int:
    """The kernel's cell index where it pays, else 0: its ring search visits about
    ``4 * k_nearest * grid**2 / (pi * num_agents)`` cells against ``num_agents`` agents a full scan reads,
    so the index is used when ``16 * k_nearest * grid**2 <= num_agents**2`` (1000 agents on a 20 x 20
    grid, k 5: yes; 45 agents: no). A cell holds 4x the mean agents per cell, at least 16; an env with a
    fuller cell scans every agent that step.

    >>> cell_capacity_for(1000, 20, 5), cell_capacity_for(45, 20, 5)
    (16, 0)
    """
    if not k_nearest or 16 * k_nearest * grid * grid > num_agents * num_agents:
        return 0
    return min(num_agents, max(16, 4 * -(-num_agents // (grid * grid))))


class TagEnv(ParallelEnv):
    """The CPU reference as a PettingZoo ``ParallelEnv`` (one game; tagged runners leave ``agents``)."""

    metadata = {"name": "tag_v0", "render_modes": []}
    reference = TagReference

    def __init__(self, **kwargs: Any):
        self.core = self.reference(num_envs=1, **kwargs)
        self.possible_agents = [f"agent_{i}" for i in range(self.core.num_agents)]
        self.agents: list[str] = []
        high = np.full(self.core.obs_dim, np.float32(1e6), np.float32)  # scaled positions; wide bounds for safety
        self._obs_space = gymnasium.spaces.Box(-high, high, dtype=np.float32)
        self._act_space = gymnasium.spaces.Discrete(self.core.num_actions)
        self.seed_counter = None

    def observation_space(self, agent: str) -> gymnasium.Space:
        return self._obs_space

    def action_space(self, agent: str) -> gymnasium.Space:
        return self._act_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None or (not self.agents and self.seed_counter is None):
            self.core.reset(seed if seed is not None else int(np.random.SeedSequence().entropy % 2**31))
            self.seed_counter = 0
        else:  # WarpDrive's reset: back to the positions drawn at the last seeded reset
            self.core.arrays["done"][:] = 1
            self.core.restore_done()
            self.core.arrays["done"][:] = 0
            self.core.arrays["masks"][:] = 1
            self.core.observe()
        self.agents = list(self.possible_agents)
        obs = self.core.view("observations")[0]
        return {agent: obs[i].copy() for i, agent in enumerate(self.possible_agents)}, {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        row = np.zeros((1, self.core.num_agents), np.int32)
        for i, agent in enumerate(self.possible_agents):
            row[0, i] = int(actions.get(agent, 0))
        self.core.step(row, autoreset=False)
        arr, obs = self.core.arrays, self.core.view("observations")[0]
        acting = [i for i, agent in enumerate(self.possible_agents) if agent in self.agents]
        names = [self.possible_agents[i] for i in acting]
        result = (
            {n: obs[i].copy() for n, i in zip(names, acting)},
            {n: float(arr["rewards"][0, i]) for n, i in zip(names, acting)},
            {n: bool(arr["terminals"][0, i]) for n, i in zip(names, acting)},
            {n: bool(arr["truncations"][0, i]) for n, i in zip(names, acting)},
            {n: {} for n in names},
        )
        self.agents = [n for n in names if not (result[2][n] or result[3][n])]
        return result

    def state(self) -> np.ndarray:
        return self.core.arrays["pos"][0].copy()
