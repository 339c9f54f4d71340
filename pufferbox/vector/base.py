"""What every vector backend shares: the env factory, the batch interface, argument checks.

The unit a backend steps is an *env block*: an object simulating ``num_envs`` envs in
``num_agents`` buffer rows, with

* ``set_buffers(buffers)``: write into these rows from now on,
* ``vec_reset(seed) -> list[dict]`` and ``vec_step(actions) -> list[dict]``: fill the rows,
  auto-resetting finished episodes (``SAME_STEP``); the dicts are infos of episodes that
  ended, each with ``"env"``, the block-local env index, when the block holds several envs
  (a native block may return an :class:`~pufferbox.vector.native.EpisodeInfos` instead: a
  sequence of such dicts kept as arrays, which backends pass on without building dicts),
* ``close()``.

An emulated Gymnasium/PettingZoo env is a block of one env; a native batched env
(:mod:`pufferbox.vector.native`) is a block of many. Backends only move rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from pufferbox.buffers import Buffers
from pufferbox.registry import EnvSpec
from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.vector.native import EpisodeInfos

__all__ = ["EnvFactory", "VectorEnv", "VectorConfigError", "batch_space", "infos_to_dict"]


class VectorConfigError(ValueError):
    """Backend arguments that cannot work together (the message says which and why)."""


@dataclass
class EnvFactory:
    """Builds env blocks in any process: picklable, resolved from the spec by reference."""

    spec: EnvSpec
    kwargs: dict = field(default_factory=dict)
    use_native: bool = True

    @property
    def native(self) -> bool:
        return self.use_native and self.spec.native is not None

    def blocks(self, num_envs: int) -> list[Any]:
        """Blocks simulating ``num_envs`` envs: one native block, or ``num_envs`` emulators."""
        if self.native:
            self.spec.ensure_available()
            return [self.spec.native(num_envs=num_envs, **{**self.spec.kwargs, **self.kwargs})]
        return [self.spec.make_emulated(**self.kwargs) for _ in range(num_envs)]

    def layout(self) -> tuple[ObservationSpec, ActionSpec, int]:
        """``(obs_spec, act_spec, agents_per_env)`` without keeping an env around."""
        if self.native:
            block = self.blocks(1)[0]
            out = (block.obs_spec, block.act_spec, block.num_agents)
            block.close()
            return out
        return self.spec.flattening(**self.kwargs)


def batch_space(space: gymnasium.Space, n: int) -> gymnasium.Space:
    return gymnasium.vector.utils.batch_space(space, n)


def infos_to_dict(infos: Sequence[dict], num_envs: int) -> dict:
    """Gymnasium's vector info layout (``key`` array + ``_key`` mask per env) from info dicts."""
    out: dict[str, Any] = {}
    if isinstance(infos, EpisodeInfos) and infos.key == "env_id":  # arrays in, arrays out: no dicts
        for key, values in (("episode_return", infos.returns), ("episode_length", infos.lengths)):
            out[key] = np.zeros(num_envs, dtype=values.dtype)
            out[key][infos.envs] = values
            out["_" + key] = np.zeros(num_envs, dtype=bool)
            out["_" + key][infos.envs] = True
        return out
    for info in infos:
        env_id = info["env_id"]
        for key, value in info.items():
            if key == "env_id":
                continue
            if key not in out:
                arr = np.asarray(value)
                dtype = arr.dtype if arr.dtype != object and arr.ndim == 0 else object
                out[key] = np.zeros(num_envs, dtype=dtype)
                out["_" + key] = np.zeros(num_envs, dtype=bool)
            out[key][env_id] = value
            out["_" + key][env_id] = True
    return out


class VectorEnv(gymnasium.vector.VectorEnv):
    """The batch interface of every backend.

    ``num_envs`` envs fill ``num_agents`` rows (``agents_per_env`` each). Each ``recv()``
    returns ``batch_size`` rows: ``(observations, rewards, terminals, truncations, infos,
    env_ids, masks)``, where ``env_ids`` are the envs in the batch (in row order) and
    ``infos`` a list of dicts with ``env_id``. ``send(actions)`` takes one action row per
    row of the last batch. ``reset``/``step`` are the synchronous Gymnasium-style pair.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
    backend = "base"

    def setup_layout(self, factory: EnvFactory, num_envs: int, batch_size: int | None) -> None:
        self.factory = factory
        self.env_name = factory.spec.name
        self.obs_spec, self.act_spec, self.agents_per_env = factory.layout()
        self.num_envs = num_envs
        self.num_agents = num_envs * self.agents_per_env
        self.batch_envs = num_envs if batch_size is None else batch_size
        if self.batch_envs <= 0 or num_envs % self.batch_envs:
            raise VectorConfigError(f"num_envs ({num_envs}) must be a multiple of batch_size ({self.batch_envs})")
        self.batch_size = self.batch_envs * self.agents_per_env
        self.single_observation_space = self.obs_spec.flat_space
        self.single_action_space = self.act_spec.flat_space
        self.observation_space = batch_space(self.single_observation_space, self.batch_size)
        self.action_space = batch_space(self.single_action_space, self.batch_size)
        self.is_multiagent = self.agents_per_env > 1 or getattr(factory.spec, "multiagent", False)

    # Subclasses implement these three.
    def async_reset(self, seed: int | None = 0) -> None:
        raise NotImplementedError

    def send(self, actions: np.ndarray) -> None:
        raise NotImplementedError

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict], np.ndarray, np.ndarray]:
        raise NotImplementedError

    def reset(self, *, seed: int | None = 0, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.require_sync("reset")
        self.async_reset(seed)
        obs, _, _, _, infos, _, _ = self.recv()
        return obs, infos_to_dict(infos, self.num_envs)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        self.require_sync("step")
        self.send(actions)
        obs, rewards, terminals, truncations, infos, _, _ = self.recv()
        return obs, rewards, terminals, truncations, infos_to_dict(infos, self.num_envs)

    def require_sync(self, what: str) -> None:
        if self.batch_envs != self.num_envs:
            raise VectorConfigError(f"{what}() needs batch_size == num_envs; with a pool "
                                    f"({self.batch_envs} of {self.num_envs} envs per batch) use send()/recv()")

    def check_actions(self, actions: np.ndarray) -> np.ndarray:
        actions = np.asarray(actions)
        expected = (self.batch_size, *self.act_spec.shape)
        if actions.shape != expected:
            raise ValueError(f"{self.env_name}: actions have shape {actions.shape}, expected {expected} "
                             f"(one row per agent slot of the last batch)")
        return actions

    def __enter__(self) -> "VectorEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def assign_blocks(blocks: list[Any], buffers: Buffers) -> list[tuple[int, int, int]]:
    """Give each block its rows; returns ``(row_start, row_stop, first_env)`` per block."""
    spans, row, env = [], 0, 0
    for block in blocks:
        block.set_buffers(buffers.slice(row, row + block.num_agents))
        spans.append((row, row + block.num_agents, env))
        row += block.num_agents
        env += block.num_envs
    if row != len(buffers):
        raise VectorConfigError(f"env blocks fill {row} rows, buffers have {len(buffers)}")
    return spans
