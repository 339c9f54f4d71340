"""CleanRL-style loops on pufferbox vector envs.

Every backend already is a ``gymnasium.vector.VectorEnv`` with ``SAME_STEP`` autoreset:
``envs.single_observation_space``, ``envs.single_action_space``, ``envs.reset(seed=...)``
and ``envs.step(actions) -> (obs, rewards, terminations, truncations, infos)`` behave as in
CleanRL's Gymnasium scripts. Finished episodes arrive as ``infos["episode_return"]`` /
``infos["episode_length"]`` with ``_`` masks; :class:`EpisodeStatistics` renames them to the
``infos["episode"] = {"r", "l", "t"}`` + ``infos["_episode"]`` layout of Gymnasium's
``RecordEpisodeStatistics`` that CleanRL reads, so such a loop runs unchanged.

Example:
    >>> import pufferbox.vector
    >>> envs = EpisodeStatistics(pufferbox.vector.make("cartpole", num_envs=4))      # doctest: +SKIP
    >>> obs, _ = envs.reset(seed=1)                                                  # doctest: +SKIP
    >>> obs, r, term, trunc, infos = envs.step(envs.action_space.sample())           # doctest: +SKIP
    >>> if "episode" in infos: print(infos["episode"]["r"][infos["_episode"]])        # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium
import numpy as np

__all__ = ["EpisodeStatistics"]


class EpisodeStatistics(gymnasium.vector.VectorWrapper):
    """Adds Gymnasium's ``infos["episode"]`` / ``infos["_episode"]`` to a pufferbox vector env."""

    def __init__(self, env: Any):
        super().__init__(env)
        self.start = time.perf_counter()

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self.start = time.perf_counter()
        return self.env.reset(**kwargs)

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict]:
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        mask = infos.get("_episode_return")
        if mask is not None and mask.any():
            infos = dict(infos)
            infos["episode"] = {
                "r": infos["episode_return"],
                "l": infos["episode_length"],
                "t": np.where(mask, time.perf_counter() - self.start, 0.0),
            }
            infos["_episode"] = mask
        return obs, rewards, terminations, truncations, infos
