"""Native batched Ocean envs: ``num_envs`` copies stepped with numpy in one object.

Each class implements the env block protocol of :mod:`pufferbox.vector.base` and is
bit-for-bit equal to its single-env twin in :mod:`pufferbox_ocean.envs`: env ``i`` of a
block reset with ``seed`` matches the single env reset with ``seed + i``. That holds
because every env keeps its own ``np.random.Generator`` created exactly like
Gymnasium's ``seeding.np_random(seed + i)`` and makes the same draws in the same order;
only the arithmetic, which consumes no randomness, is vectorized.

Example:
    >>> block = SquaredNative(num_envs=4)
    >>> block.vec_reset(seed=0)
    []
    >>> block.buffers.observations.shape
    (4, 25)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding

from pufferbox.api import NO_EPISODES, ActionSpec, APIUsageError, Episodes, NativeBlock, ObservationSpec, episodes_ended
from pufferbox_ocean import envs

__all__ = [
    "OceanBlock",
    "SquaredNative",
    "PasswordNative",
    "StochasticNative",
    "MemoryNative",
    "MultiagentNative",
    "SpacesNative",
    "BanditNative",
]


class OceanBlock(NativeBlock):
    """Single-agent bookkeeping: per-env generators, episode stats, SAME_STEP autoreset.

    Subclasses implement ``reset_envs(idx)`` (new episodes for envs ``idx``, drawing from
    ``self.rngs[i]`` in env order), ``step_envs(actions) -> (rewards, terminated,
    truncated)`` (float64, bool, bool arrays) and ``write_observations()``.
    """

    writes_final_observations = True

    def __init__(self, num_envs: int, single: Any, name: str):
        self.obs_spec = ObservationSpec(single.observation_space)
        self.act_spec = ActionSpec(single.action_space)
        super().__init__(num_envs, name)
        self.rngs = [seeding.np_random()[0] for _ in range(num_envs)]
        self.episode_return = np.zeros(num_envs, dtype=np.float64)
        self.episode_length = np.zeros(num_envs, dtype=np.int64)
        self.needs_reset = True

    def set_buffers(self, buffers: Any) -> None:
        super().set_buffers(buffers)
        self.views = dict(zip((leaf.path for leaf in self.obs_spec.leaves), self.obs_spec.leaf_views(buffers.observations)))

    def vec_reset(self, seed: int | None = None) -> Episodes:
        if seed is not None:
            self.rngs = [seeding.np_random(seed + i)[0] for i in range(self.num_envs)]
        self.reset_envs(np.arange(self.num_envs))
        self.write_observations()
        b = self.buffers
        b.rewards[:] = 0.0
        b.terminals[:] = b.truncations[:] = False
        b.masks[:] = True
        self.episode_return[:] = 0.0
        self.episode_length[:] = 0
        self.needs_reset = False
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        rewards, terminated, truncated = self.step_envs(actions)
        b = self.buffers
        b.rewards[:] = rewards
        b.terminals[:] = terminated
        b.truncations[:] = truncated
        # float64 sum of the env's own rewards, as the emulator sums float(reward).
        self.episode_return += rewards
        self.episode_length += 1
        ended = terminated | truncated
        infos = episodes_ended(ended, self.episode_return, self.episode_length)
        done = np.flatnonzero(ended)
        if done.size:
            cut = truncated & ~terminated
            if cut.any():  # keep the truncated episodes' last observations past their reset
                self.write_observations()
                b.final_observations[cut] = b.observations[cut]
            self.episode_return[done] = 0.0
            self.episode_length[done] = 0
            self.reset_envs(done)
        self.write_observations()
        return infos

    def discrete_actions(self, actions: np.ndarray) -> np.ndarray:
        actions = np.asarray(actions).reshape(self.num_envs)
        self.check_discrete_actions(actions, int(self.act_spec.flat_space.n))
        return actions.astype(np.int64)

    def reset_envs(self, idx: np.ndarray) -> None:
        raise NotImplementedError

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def write_observations(self) -> None:
        raise NotImplementedError


class SquaredNative(OceanBlock):
    """Batched :class:`~pufferbox_ocean.envs.Squared`."""

    def __init__(self, num_envs: int = 1, distance: int = 2, num_targets: int = 4):
        self.single = envs.Squared(distance, num_targets)
        super().__init__(num_envs, self.single, "squared")
        n, t = num_envs, num_targets
        self.center = distance
        self.pos = np.full((n, 2), distance, dtype=np.int64)
        self.targets = np.zeros((n, t, 2), dtype=np.int64)
        self.hit = np.zeros((n, t), dtype=bool)
        self.tick = np.zeros(n, dtype=np.int64)

    def reset_envs(self, idx: np.ndarray) -> None:
        s = self.single
        for i in idx:
            self.targets[i] = s.cells[self.rngs[i].choice(len(s.cells), size=s.num_targets, replace=False)]
        self.hit[idx] = False
        self.pos[idx] = self.center
        self.tick[idx] = 0

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.single
        self.pos = np.clip(self.pos + envs.KING_MOVES[self.discrete_actions(actions)], 0, s.size - 1)
        self.tick += 1
        on = (self.targets == self.pos[:, None, :]).all(axis=2) & ~self.hit
        scored = on.any(axis=1)
        self.hit |= on  # targets occupy distinct cells: at most one per env
        self.pos[scored] = self.center
        terminated = self.hit.all(axis=1)
        truncated = ~terminated & (self.tick >= s.max_steps)
        return scored.astype(np.float64), terminated, truncated

    def write_observations(self) -> None:
        grid = self.views[()]
        grid[:] = 0.0
        env, target = np.nonzero(~self.hit)
        grid[env, self.targets[env, target, 0], self.targets[env, target, 1]] = -1.0
        grid[np.arange(self.num_envs), self.pos[:, 0], self.pos[:, 1]] = 1.0


class PasswordNative(OceanBlock):
    """Batched :class:`~pufferbox_ocean.envs.Password`."""

    def __init__(self, num_envs: int = 1, length: int = 5, password_seed: int = 0):
        self.single = envs.Password(length, password_seed)
        super().__init__(num_envs, self.single, "password")
        self.typed = np.zeros((num_envs, length), dtype=np.float32)
        self.tick = np.zeros(num_envs, dtype=np.int64)

    def reset_envs(self, idx: np.ndarray) -> None:
        self.typed[idx] = 0.0
        self.tick[idx] = 0

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = self.discrete_actions(actions)
        self.typed[np.arange(self.num_envs), self.tick] = np.where(a == 1, 1.0, -1.0)
        self.tick += 1
        terminated = self.tick == self.single.length
        correct = ((self.typed > 0) == (self.single.password == 1)).all(axis=1)
        rewards = np.where(terminated & correct, 1.0, 0.0)
        return rewards, terminated, np.zeros(self.num_envs, dtype=bool)

    def write_observations(self) -> None:
        self.views[()][:] = self.typed


class StochasticNative(OceanBlock):
    """Batched :class:`~pufferbox_ocean.envs.Stochastic`."""

    def __init__(self, num_envs: int = 1, p: float = 0.75, horizon: int = 20):
        self.single = envs.Stochastic(p, horizon)
        super().__init__(num_envs, self.single, "stochastic")
        self.tick = np.zeros(num_envs, dtype=np.int64)
        self.count0 = np.zeros(num_envs, dtype=np.int64)

    def reset_envs(self, idx: np.ndarray) -> None:
        self.tick[idx] = 0
        self.count0[idx] = 0

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.single
        self.count0 += self.discrete_actions(actions) == 0
        self.tick += 1
        terminated = self.tick == s.horizon
        rewards = np.where(terminated, envs.stochastic_reward(self.count0, s.horizon, s.p), 0.0)
        return rewards, terminated, np.zeros(self.num_envs, dtype=bool)

    def write_observations(self) -> None:
        self.views[()][:] = 0.0


class MemoryNative(OceanBlock):
    """Batched :class:`~pufferbox_ocean.envs.Memory`."""

    def __init__(self, num_envs: int = 1, length: int = 3, delay: int = 1):
        self.single = envs.Memory(length, delay)
        super().__init__(num_envs, self.single, "memory")
        self.bits = np.zeros((num_envs, length), dtype=np.int64)
        self.tick = np.zeros(num_envs, dtype=np.int64)

    def reset_envs(self, idx: np.ndarray) -> None:
        for i in idx:
            self.bits[i] = self.rngs[i].integers(0, 2, size=self.single.length)
        self.tick[idx] = 0

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.single
        a = self.discrete_actions(actions)
        recall = self.tick - s.length - s.delay
        shown = self.bits[np.arange(self.num_envs), np.clip(recall, 0, s.length - 1)]
        rewards = np.where((recall >= 0) & (a == shown), 1.0 / s.length, 0.0)
        self.tick += 1
        return rewards, self.tick == s.horizon, np.zeros(self.num_envs, dtype=bool)

    def write_observations(self) -> None:
        s = self.single
        obs = self.views[()]
        showing = self.tick < s.length
        shown = self.bits[np.arange(self.num_envs), np.clip(self.tick, 0, s.length - 1)]
        obs[:, 0] = np.where(showing, np.where(shown == 1, 1.0, -1.0), 0.0)
        obs[:, 1] = np.where(self.tick >= s.length + s.delay, 1.0, 0.0)


class SpacesNative(OceanBlock):
    """Batched :class:`~pufferbox_ocean.envs.Spaces` (writes each leaf of the nested record)."""

    def __init__(self, num_envs: int = 1, horizon: int = 8):
        self.single = envs.Spaces(horizon)
        super().__init__(num_envs, self.single, "spaces")
        slots = {path: (start, size) for path, _, start, size in self.act_spec.leaves}
        self.choice_slot = slots[("choice",)][0]
        start, size = slots[("bits",)]
        self.bits_slots = slice(start, start + size)
        self.cell = np.zeros((num_envs, 2), dtype=np.int64)
        self.k = np.zeros(num_envs, dtype=np.int64)
        self.bits = np.zeros((num_envs, 3), dtype=np.int8)
        self.tick = np.zeros(num_envs, dtype=np.int64)

    def draw(self, idx: np.ndarray) -> None:
        for i in idx:  # same draws, same order as Spaces.draw
            rng = self.rngs[i]
            self.cell[i] = rng.integers(0, 5, size=2)
            self.k[i] = rng.integers(0, 4)
            self.bits[i] = rng.integers(0, 2, size=3)

    def reset_envs(self, idx: np.ndarray) -> None:
        self.tick[idx] = 0
        self.draw(idx)

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        actions = np.asarray(actions)
        choice_ok = actions[:, self.choice_slot] == (self.k + self.cell[:, 0]) % 4
        wanted = self.bits ^ (self.cell[:, 1:2] % 2)
        bits_ok = (actions[:, self.bits_slots] == wanted).sum(axis=1)
        rewards = (0.5 * choice_ok + 0.5 * bits_ok / 3) / self.single.horizon
        self.tick += 1
        self.draw(np.arange(self.num_envs))
        return rewards, self.tick == self.single.horizon, np.zeros(self.num_envs, dtype=bool)

    def write_observations(self) -> None:
        image = self.views[("image",)]
        image[:] = 0.0
        image[np.arange(self.num_envs), self.cell[:, 0], self.cell[:, 1]] = 1.0
        self.views[("meta", 0)][:] = self.k
        self.views[("meta", 1, "bits")][:] = self.bits


class BanditNative(OceanBlock):
    """Batched :class:`~pufferbox_ocean.envs.Bandit`."""

    def __init__(
        self,
        num_envs: int = 1,
        num_arms: int = 4,
        horizon: int = 10,
        p_good: float = 0.8,
        p_bad: float = 0.2,
        arm_seed: int = 0,
    ):
        self.single = envs.Bandit(num_arms, horizon, p_good, p_bad, arm_seed)
        super().__init__(num_envs, self.single, "bandit")
        self.tick = np.zeros(num_envs, dtype=np.int64)

    def reset_envs(self, idx: np.ndarray) -> None:
        self.tick[idx] = 0

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = self.discrete_actions(actions)
        draws = np.array([rng.random() for rng in self.rngs])
        rewards = np.where(draws < self.single.probs[a], 1.0 / self.single.horizon, 0.0)
        self.tick += 1
        return rewards, self.tick == self.single.horizon, np.zeros(self.num_envs, dtype=bool)

    def write_observations(self) -> None:
        self.views[()][:] = 0.0


class MultiagentNative(NativeBlock):
    """Batched :class:`~pufferbox_ocean.envs.Multiagent`: two rows per env, padded like the emulator.

    A departed agent's row is zero with reward 0, terminal ``True`` and mask ``False``;
    episode returns are the mean over agents of float32 rewards summed in float64, as
    :class:`~pufferbox.emulation.PettingZooEmulator` reports them.
    """

    writes_final_observations = True  # its episodes end by termination only: nothing to keep

    agents_per_env = 2
    is_multiagent = True

    def __init__(self, num_envs: int = 1, horizon: int = 8):
        self.single = envs.Multiagent(horizon)
        self.obs_spec = ObservationSpec(self.single.observation_space("agent_0"))
        self.act_spec = ActionSpec(self.single.action_space("agent_0"))
        super().__init__(num_envs, "multiagent")
        self.horizon = horizon
        self.rngs = [seeding.np_random()[0] for _ in range(num_envs)]
        self.lifetime = np.zeros((num_envs, 2), dtype=np.int64)
        self.alive = np.zeros((num_envs, 2), dtype=bool)
        self.tick = np.zeros(num_envs, dtype=np.int64)
        self.episode_returns = np.zeros((num_envs, 2), dtype=np.float64)
        self.episode_length = np.zeros(num_envs, dtype=np.int64)
        self.needs_reset = True

    def rows(self, array: np.ndarray) -> np.ndarray:
        """A ``(num_envs, 2, ...)`` view of a per-row buffer."""
        return array.reshape(self.num_envs, 2, *array.shape[1:])

    def reset_envs(self, idx: np.ndarray) -> None:
        for i in idx:
            self.lifetime[i] = (self.horizon, int(self.rngs[i].integers(2, self.horizon)))
        self.alive[idx] = True
        self.tick[idx] = 0
        obs = self.rows(self.buffers.observations)
        obs[idx] = np.eye(2, dtype=np.float32)
        self.rows(self.buffers.masks)[idx] = True

    def vec_reset(self, seed: int | None = None) -> Episodes:
        if seed is not None:
            self.rngs = [seeding.np_random(seed + i)[0] for i in range(self.num_envs)]
        self.reset_envs(np.arange(self.num_envs))
        b = self.buffers
        b.rewards[:] = 0.0
        b.terminals[:] = b.truncations[:] = False
        self.episode_returns[:] = 0.0
        self.episode_length[:] = 0
        self.needs_reset = False
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        actions = np.asarray(actions).reshape(self.num_envs, 2)
        self.check_discrete_actions(actions[self.alive], 2)
        self.tick += 1
        correct = actions == np.array([0, 1])
        rewards = self.rows(self.buffers.rewards)
        rewards[:] = np.where(self.alive & correct, 1.0 / self.lifetime, 0.0)
        leaving = self.alive & (self.tick[:, None] >= self.lifetime)
        # Absent agents read terminal; agents acting this step report their own termination.
        self.rows(self.buffers.terminals)[:] = np.where(self.alive, leaving, True)
        self.buffers.truncations[:] = False
        obs, masks = self.rows(self.buffers.observations), self.rows(self.buffers.masks)
        # Rows of agents that acted this step show their observation; earlier departures are padding.
        obs[:] = np.where(self.alive[:, :, None], np.eye(2, dtype=np.float32), 0.0)
        masks[:] = self.alive
        self.episode_returns += rewards  # float32 rewards summed in float64, like the emulator
        self.episode_length += 1
        self.alive &= ~leaving
        ended = ~self.alive.any(axis=1)
        infos = episodes_ended(ended, self.episode_returns.mean(axis=1), self.episode_length)
        done = np.flatnonzero(ended)
        if done.size:
            self.episode_returns[done] = 0.0
            self.episode_length[done] = 0
            self.reset_envs(done)
        return infos
