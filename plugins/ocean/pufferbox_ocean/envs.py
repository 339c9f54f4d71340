"""The Ocean sanity envs, one env per class (Gymnasium; ``Multiagent`` is a PettingZoo ParallelEnv).

Each env tests one thing a correct trainer must get right, keeps episodes to tens of
steps, and draws all randomness from ``self.np_random`` (seeded by ``reset(seed=)``).
:mod:`pufferbox_ocean.native` holds batched versions that must stay bit-for-bit equal
to these: when changing an env here, change its native twin the same way (same RNG
calls in the same order, same float arithmetic).

Example:
    >>> env = Squared()
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape
    (5, 5)
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

__all__ = [
    "Squared",
    "Password",
    "Stochastic",
    "Memory",
    "Multiagent",
    "Spaces",
    "Bandit",
    "KING_MOVES",
    "perimeter",
    "stochastic_reward",
    "password_bits",
    "good_arm",
]

# dy, dx of the 8 king moves (Squared's actions).
KING_MOVES = np.array([(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)], dtype=np.int64)


def perimeter(size: int) -> np.ndarray:
    """``(4 * (size - 1), 2)`` cells on the border of a ``size x size`` grid, row-major."""
    cells = [(r, c) for r in range(size) for c in range(size) if r in (0, size - 1) or c in (0, size - 1)]
    return np.array(cells, dtype=np.int64)


class Squared(gymnasium.Env):
    """Move to targets on the border of a square; reward 1 per target hit.

    The agent starts at the centre of a ``(2d+1)^2`` grid; ``num_targets`` targets sit on
    distinct border cells (drawn per reset). Hitting a target for the first time pays 1
    and teleports the agent back to the centre. With king moves each target is ``d``
    steps away, so the optimum is ``num_targets`` in ``num_targets * d`` steps; the
    episode is truncated after twice that. Observation: the grid, agent ``1``, targets
    not yet hit ``-1``. Tests credit assignment over a few steps and spatial input.
    """

    metadata = {"render_modes": []}

    def __init__(self, distance: int = 2, num_targets: int = 4):
        if distance < 1 or not 1 <= num_targets <= 8 * distance:
            raise ValueError(
                f"squared: need distance >= 1 and 1 <= num_targets <= {8 * distance}, "
                f"got distance={distance}, num_targets={num_targets}"
            )
        self.distance, self.num_targets = distance, num_targets
        self.size = 2 * distance + 1
        self.max_steps = 2 * num_targets * distance
        self.cells = perimeter(self.size)
        self.observation_space = spaces.Box(-1.0, 1.0, (self.size, self.size), dtype=np.float32)
        self.action_space = spaces.Discrete(len(KING_MOVES))

    def observe(self) -> np.ndarray:
        grid = np.zeros((self.size, self.size), dtype=np.float32)
        for (r, c), hit in zip(self.targets, self.hit):
            if not hit:
                grid[r, c] = -1.0
        grid[self.pos[0], self.pos[1]] = 1.0
        return grid

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        chosen = self.np_random.choice(len(self.cells), size=self.num_targets, replace=False)
        self.targets = self.cells[chosen]
        self.hit = np.zeros(self.num_targets, dtype=bool)
        self.pos = np.array([self.distance, self.distance], dtype=np.int64)
        self.tick = 0
        return self.observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.pos = np.clip(self.pos + KING_MOVES[int(action)], 0, self.size - 1)
        self.tick += 1
        reward = 0.0
        on = np.flatnonzero((self.targets == self.pos).all(axis=1) & ~self.hit)
        if on.size:
            self.hit[on[0]] = True
            reward = 1.0
            self.pos = np.array([self.distance, self.distance], dtype=np.int64)
        terminated = bool(self.hit.all())
        truncated = not terminated and self.tick >= self.max_steps
        return self.observe(), reward, terminated, truncated, {}


def password_bits(length: int, password_seed: int) -> np.ndarray:
    """The static password: fixed by ``password_seed``, never by the reset seed."""
    return np.random.default_rng(password_seed).integers(0, 2, size=length)


class Password(gymnasium.Env):
    """Type a static ``length``-bit password one bit per step; reward 1 only if all bits match.

    The password depends on ``password_seed`` only (the same for every reset), so the
    reward is found by exploration once in ``2**length`` random tries and must then be
    latched onto. Observation: bits typed so far as ``+1``/``-1``, ``0`` for not yet typed.
    Optimum 1 per episode of ``length`` steps.
    """

    metadata = {"render_modes": []}

    def __init__(self, length: int = 5, password_seed: int = 0):
        self.length = length
        self.password = password_bits(length, password_seed)
        self.observation_space = spaces.Box(-1.0, 1.0, (length,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.typed = np.zeros(self.length, dtype=np.float32)
        self.tick = 0
        return self.typed.copy(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.typed[self.tick] = 1.0 if int(action) == 1 else -1.0
        self.tick += 1
        terminated = self.tick == self.length
        reward = 1.0 if terminated and bool(((self.typed > 0) == (self.password == 1)).all()) else 0.0
        return self.typed.copy(), reward, terminated, False, {}


def stochastic_reward(count0: int | np.ndarray, horizon: int, p: float) -> float | np.ndarray:
    """End-of-episode reward: 1 when the share of action 0 equals ``p``, falling linearly away."""
    return 1.0 - np.abs(count0 / horizon - p) / max(p, 1.0 - p)


class Stochastic(gymnasium.Env):
    """The optimal memoryless policy plays action 0 with probability about ``p``.

    The observation is constant, so a feed-forward policy cannot schedule its actions
    and must learn a non-uniform *stochastic* policy. After ``horizon`` steps the reward
    is ``1 - |share of action 0 - p| / max(p, 1-p)``. With ``p=0.75, horizon=20`` the best
    expected return is 0.899 (at ``P(0) = 0.758``); any deterministic policy gets at most
    0.667. A recurrent policy could count and cheat: use an MLP for this test.
    """

    metadata = {"render_modes": []}

    def __init__(self, p: float = 0.75, horizon: int = 20):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"stochastic: p must be in [0, 1], got {p}")
        self.p, self.horizon = p, horizon
        self.observation_space = spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.tick = self.count0 = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.count0 += int(action) == 0
        self.tick += 1
        terminated = self.tick == self.horizon
        reward = float(stochastic_reward(self.count0, self.horizon, self.p)) if terminated else 0.0
        return np.zeros(1, dtype=np.float32), reward, terminated, False, {}


class Memory(gymnasium.Env):
    """Recite a random bit sequence after a delay: needs memory (an LSTM) to solve.

    Steps ``0..length-1`` show one bit each (observation ``[+1 or -1, 0]``), then ``delay``
    blank steps (``[0, 0]``), then ``length`` recall steps (``[0, 1]``) where action ``b``
    earns ``1/length`` if it equals the bit shown at the same position. The sequence is
    drawn per reset. Optimum 1; a memoryless policy expects 0.5.
    """

    metadata = {"render_modes": []}

    def __init__(self, length: int = 3, delay: int = 1):
        self.length, self.delay = length, delay
        self.horizon = 2 * length + delay
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def observe(self) -> np.ndarray:
        obs = np.zeros(2, dtype=np.float32)
        if self.tick < self.length:
            obs[0] = 1.0 if self.bits[self.tick] == 1 else -1.0
        elif self.tick >= self.length + self.delay:
            obs[1] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.bits = self.np_random.integers(0, 2, size=self.length)
        self.tick = 0
        return self.observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        recall = self.tick - self.length - self.delay
        reward = 1.0 / self.length if recall >= 0 and int(action) == self.bits[recall] else 0.0
        self.tick += 1
        terminated = self.tick == self.horizon
        return self.observe(), reward, terminated, False, {}


class Multiagent(ParallelEnv):
    """Two agents sharing one policy: ``agent_0`` must play 0, ``agent_1`` must play 1.

    Observation: the agent's one-hot id. ``agent_0`` lives ``horizon`` steps; ``agent_1``
    leaves early, after a lifetime drawn per reset from ``[2, horizon)``, so backends
    must pad its slot and mask it. Each correct action earns ``1/lifetime``: the optimum
    is 1 per agent.
    """

    metadata = {"render_modes": [], "name": "ocean_multiagent_v0"}

    def __init__(self, horizon: int = 8):
        if horizon < 3:
            raise ValueError(f"multiagent: horizon must be >= 3, got {horizon}")
        self.horizon = horizon
        self.possible_agents = ["agent_0", "agent_1"]
        self.agents: list[str] = []
        self.render_mode = None
        self.observation_spaces = {a: spaces.Box(0.0, 1.0, (2,), dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(2) for a in self.possible_agents}
        self.np_random, _ = seeding.np_random()

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def observe(self, agent: str) -> np.ndarray:
        obs = np.zeros(2, dtype=np.float32)
        obs[self.possible_agents.index(agent)] = 1.0
        return obs

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        self.lifetime = {"agent_0": self.horizon, "agent_1": int(self.np_random.integers(2, self.horizon))}
        self.agents = list(self.possible_agents)
        self.tick = 0
        return {a: self.observe(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.tick += 1
        target = {"agent_0": 0, "agent_1": 1}
        rewards = {a: (1.0 / self.lifetime[a] if int(actions[a]) == target[a] else 0.0) for a in self.agents}
        terminations = {a: self.tick >= self.lifetime[a] for a in self.agents}
        truncations = {a: False for a in self.agents}
        observations = {a: self.observe(a) for a in self.agents}
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not terminations[a]]
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        return np.array([self.tick, len(self.agents)], dtype=np.float32)


class Spaces(gymnasium.Env):
    """Nested Dict/Tuple observations and a Dict action; full reward needs every subspace.

    Observation ``{"image": 5x5 Box with one lit cell at (row, col), "meta": (k in
    Discrete(4), {"bits": MultiBinary(3)})}``, redrawn each step. Action ``{"choice":
    Discrete(4), "bits": MultiDiscrete([2, 2, 2])}``. Per step, ``choice == (k + row) % 4``
    earns 0.5 and each bit of ``bits == obs bits XOR (col % 2)`` earns 1/6, divided by
    ``horizon``: the image, the Discrete and the MultiBinary all matter. Optimum 1.
    """

    metadata = {"render_modes": []}

    def __init__(self, horizon: int = 8):
        self.horizon = horizon
        self.observation_space = spaces.Dict(
            {
                "image": spaces.Box(0.0, 1.0, (5, 5), dtype=np.float32),
                "meta": spaces.Tuple((spaces.Discrete(4), spaces.Dict({"bits": spaces.MultiBinary(3)}))),
            }
        )
        self.action_space = spaces.Dict({"choice": spaces.Discrete(4), "bits": spaces.MultiDiscrete([2, 2, 2])})

    def draw(self) -> None:
        self.cell = self.np_random.integers(0, 5, size=2)
        self.k = int(self.np_random.integers(0, 4))
        self.bits = self.np_random.integers(0, 2, size=3).astype(np.int8)

    def observe(self) -> dict:
        image = np.zeros((5, 5), dtype=np.float32)
        image[self.cell[0], self.cell[1]] = 1.0
        return {"image": image, "meta": (np.int64(self.k), {"bits": self.bits.copy()})}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.tick = 0
        self.draw()
        return self.observe(), {}

    def step(self, action: dict) -> tuple[dict, float, bool, bool, dict]:
        choice_ok = int(action["choice"]) == (self.k + int(self.cell[0])) % 4
        bits_ok = int((np.asarray(action["bits"]) == (self.bits ^ (self.cell[1] % 2))).sum())
        reward = (0.5 * choice_ok + 0.5 * bits_ok / 3) / self.horizon
        self.tick += 1
        self.draw()
        return self.observe(), float(reward), self.tick == self.horizon, False, {}


def good_arm(num_arms: int, arm_seed: int) -> int:
    """The paying arm: fixed by ``arm_seed`` (the env's configuration), not by the reset seed."""
    return int(np.random.default_rng(arm_seed).integers(0, num_arms))


class Bandit(gymnasium.Env):
    """A multi-armed bandit: one good arm pays with probability ``p_good``, the others ``p_bad``.

    Arms are fixed per configuration (``arm_seed``), the same for every reset and every
    reset seed, so one policy can solve all copies; the Bernoulli reward draws come from
    ``np_random``. Each pay-out is ``1/horizon``: optimum ``p_good`` (0.8) per episode.
    """

    metadata = {"render_modes": []}

    def __init__(self, num_arms: int = 4, horizon: int = 10, p_good: float = 0.8, p_bad: float = 0.2, arm_seed: int = 0):
        self.horizon = horizon
        self.probs = np.full(num_arms, p_bad)
        self.probs[good_arm(num_arms, arm_seed)] = p_good
        self.observation_space = spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
        self.action_space = spaces.Discrete(num_arms)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.tick = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        paid = self.np_random.random() < self.probs[int(action)]
        reward = 1.0 / self.horizon if paid else 0.0
        self.tick += 1
        return np.zeros(1, dtype=np.float32), reward, self.tick == self.horizon, False, {}
