"""The loop every backend shares: step my env blocks over my rows, collect their episodes.

A :class:`BlockStepper` owns the blocks of ``num_envs`` consecutive envs (first env id
``first_env``) built on the rows of one :class:`~pufferbox.buffers.Buffers` that the backend
allocated. The serial backend has one for all envs; each multiprocessing worker, the
multiprocessing main process (``main_envs``) and each Ray actor have one for theirs.

``reset(seed)`` and ``step()`` (actions are read from the rows' ``actions``) return the
episodes that ended as one :class:`~pufferbox.episodes.Episodes` with backend-wide env ids.
When a block raises, :attr:`BlockStepper.failed_env` names the env (or env range) it held,
so a backend's error can name it.

Example:
    >>> from pufferbox.registry import get_registry                      # doctest: +SKIP
    >>> factory = EnvFactory(get_registry().get("cartpole"))              # doctest: +SKIP
    >>> obs_spec, act_spec, agents = factory.layout()                     # doctest: +SKIP
    >>> rows = Buffers.allocate(obs_spec, act_spec, 4 * agents)           # doctest: +SKIP
    >>> stepper = BlockStepper(factory, rows, first_env=0, num_envs=4)    # doctest: +SKIP
    >>> stepper.reset(seed=0); episodes = stepper.step()                  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from pufferbox.buffers import Buffers
from pufferbox.episodes import NO_EPISODES, Episodes

__all__ = ["BlockStepper"]


class BlockStepper:
    """Env blocks for envs ``first_env .. first_env + num_envs - 1`` writing into ``buffers``."""

    def __init__(self, factory: Any, buffers: Buffers, first_env: int, num_envs: int):
        self.first_env, self.num_envs = first_env, num_envs
        self.failed_env: int | str = self.env_range()
        self.blocks: list[Any] = []
        try:
            self.blocks = factory.blocks(num_envs, buffers)
        except BaseException:
            self.close()
            raise
        # (block, its action rows, its first global env id), precomputed so a step slices nothing.
        self.steps: list[tuple[Any, Any, int]] = []
        row, env = 0, first_env
        for block in self.blocks:
            self.steps.append((block, buffers.actions[row : row + block.num_agents], env))
            row += block.num_agents
            env += block.num_envs
        self.one_env_blocks = len(self.blocks) == num_envs  # failures can name the exact env

    def env_range(self) -> str:
        return f"{self.first_env}-{self.first_env + self.num_envs - 1}"

    def reset(self, seed: int | None) -> Episodes:
        """Reset every env (env ``i`` with ``seed + i`` when seeded); the rows hold first observations."""
        parts = []
        env = self.first_env
        try:
            for block, _, env in self.steps:
                episodes = block.vec_reset(None if seed is None else seed + env)
                if episodes is not NO_EPISODES and len(episodes):
                    parts.append((env, episodes))
        except BaseException:
            self.failed_env = env if self.one_env_blocks else self.env_range()
            raise
        return Episodes.gather(parts) if parts else NO_EPISODES

    def step(self) -> Episodes:
        """Step every env with the actions in its rows; episodes that ended, env ids backend-wide."""
        parts = None
        env = self.first_env
        try:
            for block, actions, env in self.steps:
                episodes = block.vec_step(actions)
                # Most steps end no episode: blocks return the shared NO_EPISODES, an identity check.
                if episodes is not NO_EPISODES and len(episodes):
                    if parts is None:
                        parts = [(env, episodes)]
                    else:
                        parts.append((env, episodes))
        except BaseException:
            self.failed_env = env if self.one_env_blocks else self.env_range()
            raise
        return NO_EPISODES if parts is None else Episodes.gather(parts)

    def close(self) -> None:
        """Close every block; one block failing to close does not keep the others open."""
        blocks, self.blocks = self.blocks, []
        for block in blocks:
            try:
                block.close()
            except Exception:
                pass
