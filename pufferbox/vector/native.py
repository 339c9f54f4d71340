"""Helpers for native batched envs: one object simulating many envs in one process.

A native block (see :mod:`pufferbox.vector.base`) has ``num_envs``, ``num_agents``,
``obs_spec``, ``act_spec``, ``set_buffers``, ``vec_reset``, ``vec_step`` and ``close``.
:class:`NativeBlock` supplies the bookkeeping; a subclass writes the physics.

``vec_reset``/``vec_step`` return the episodes that ended as one
:class:`~pufferbox.episodes.Episodes` (:func:`episodes_ended` builds it from per-env arrays).

Example:
    >>> from pufferbox_classic.native import CartPoleNative   # doctest: +SKIP
    >>> block = CartPoleNative(num_envs=1024)                # doctest: +SKIP
    >>> block.vec_reset(seed=0)                              # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError

__all__ = ["NativeBlock", "episodes_ended"]


class NativeBlock:
    """Base for batched envs writing ``num_envs * agents_per_env`` buffer rows.

    Subclasses set ``obs_spec``/``act_spec``/``agents_per_env`` before calling
    ``super().__init__(num_envs, name)`` and implement ``vec_reset``/``vec_step``. A block whose
    episodes can be truncated copies the last observation of each truncated (not terminated) row
    into ``buffers.final_observations`` before resetting it, and says so by setting
    ``writes_final_observations = True``; without it, learners treat its truncations as terminations.
    """

    obs_spec: ObservationSpec
    act_spec: ActionSpec
    agents_per_env: int = 1
    is_multiagent = False
    writes_final_observations = False

    def __init__(self, num_envs: int, name: str = "native"):
        if num_envs < 1:
            raise ValueError(f"{name}: num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.num_agents = num_envs * self.agents_per_env
        self.name = name
        self.set_buffers(Buffers.allocate(self.obs_spec, self.act_spec, self.num_agents))

    def set_buffers(self, buffers: Buffers) -> None:
        if len(buffers) != self.num_agents:
            raise ValueError(f"{self.name}: needs {self.num_agents} buffer rows, got {len(buffers)}")
        self.buffers = buffers

    def check_discrete_actions(self, actions: np.ndarray, n: int) -> None:
        """One cheap range check (the emulator checks the first step the same way)."""
        if actions.size and (actions.min() < 0 or actions.max() >= n):
            bad = actions[(actions < 0) | (actions >= n)][0]
            raise SpaceError(f"{self.name}: action {bad} is outside the flat action space Discrete({n})")

    def close(self) -> None:
        pass


def episodes_ended(
    done: np.ndarray, returns: np.ndarray, lengths: np.ndarray, metrics: dict[str, np.ndarray] | None = None
) -> Episodes:
    """The episodes of envs where ``done`` (block-local env ids), from per-env arrays; no dicts.

    Example:
        >>> episodes_ended(np.array([False, True]), np.array([1.0, 9.0]), np.array([3, 9])).returns.tolist()
        [9.0]
    """
    envs = np.flatnonzero(done)
    if not len(envs):
        return NO_EPISODES
    return Episodes(
        envs,
        returns[envs].astype(np.float64),
        lengths[envs].astype(np.int64),
        {name: values[envs].astype(np.float64) for name, values in (metrics or {}).items()},
    )
