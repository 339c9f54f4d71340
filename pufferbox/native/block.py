"""A block of one C game's envs, stepped by its C code (``c/NAME.h`` through the binding's ``Kernel``).

The block owns the env structs (one byte row each) and the episode records; the backend owns the
rows the game writes. Env ``i`` of a block reset with ``seed`` is the reference env reset with
``seed + i``: same generator, same draws, same arithmetic (checked by ``pufferbox check``).

A game whose action sizes (``ACT_N``) are all 0 is continuous: its action space is
``Box(-1, 1, (ACT_LEN,), float32)`` and the block hands the C step the floats in fixed point
(:mod:`pufferbox.native.actions`), as the reference sees them.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from gymnasium import spaces

from pufferbox.emulation import APIUsageError
from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.native.actions import ACTION_ONE, CONTINUOUS, quantize_actions
from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError
from pufferbox.vector.native import NativeBlock

__all__ = ["GameBlock", "UINT64_MASK"]

UINT64_MASK = (1 << 64) - 1


class GameBlock(NativeBlock):
    """``num_envs`` envs of the compiled game ``game``; ``reference`` is its Python env class and
    ``extension`` the compiled module holding it (:meth:`pufferbox.native.CGameLibrary.extension`).

    Keyword arguments are the reference's (it validates them, so bad values fail the same way in
    both); the block checks that the compiled layout matches the reference's spaces.
    """

    writes_final_observations = True

    def __init__(self, extension: Any, game: str, reference: type, num_envs: int, **kwargs: Any):
        layouts = extension.games()
        if game not in layouts:
            raise ValueError(f"{game}: no such game in the compiled table ({', '.join(layouts)}); fix: name it c/{game}.h")
        self.extension = extension
        self.single = reference(**kwargs)
        env_size, agents, obs_bytes, act_len, act_n, n_params, n_metrics = layouts[game]
        multi = hasattr(self.single, "possible_agents")
        agent = self.single.possible_agents[0] if multi else None
        obs_space = self.single.observation_space(agent) if multi else self.single.observation_space
        act_space = self.single.action_space(agent) if multi else self.single.action_space
        self.obs_spec, self.act_spec = ObservationSpec(obs_space), ActionSpec(act_space)
        self.agents_per_env, self.is_multiagent = agents, multi
        row_bytes = self.obs_spec.flat_size * self.obs_spec.flat_dtype.itemsize
        if (multi and len(self.single.possible_agents) != agents) or row_bytes != obs_bytes:
            raise ValueError(f"{game}: the C table's agents or observation bytes differ from the reference's spaces")
        self.continuous = check_action_layout(game, act_len, act_n, act_space)
        super().__init__(num_envs, name=game)
        self.quantized = np.zeros((self.num_agents, act_len), dtype=np.int64) if self.continuous else None
        self.game, self.act_n, self.metric_names = game, act_n, tuple(getattr(reference, "METRICS", ()))
        self.params = np.array(self.single.params(), dtype=np.int64)
        if len(self.params) != n_params:
            raise ValueError(f"{game}: the reference gives {len(self.params)} parameters, the C game reads {n_params}")
        self.state = np.zeros((num_envs, env_size), dtype=np.uint8)
        self.episode_return = np.zeros(self.num_agents, dtype=np.float64)
        self.episode_length = np.zeros(num_envs, dtype=np.int64)
        self.ended_env = np.zeros(num_envs, dtype=np.int64)
        self.ended_return = np.zeros((num_envs, agents), dtype=np.float64)
        self.ended_length = np.zeros(num_envs, dtype=np.int64)
        self.ended_metrics = np.zeros((num_envs, max(n_metrics, 1)), dtype=np.float64)
        self.kernel: Any = None
        self.seeded = False
        self.bind()

    def bind(self) -> None:
        b = self.buffers
        self.kernel = self.extension.Kernel(
            self.game, self.num_envs, self.state, self.params, b.observations, b.rewards,
            b.terminals, b.truncations, b.final_observations, self.episode_return, self.episode_length,
            self.ended_env, self.ended_return, self.ended_length, self.ended_metrics,
        )  # fmt: skip
        bad = self.kernel.configure()
        if bad:  # the reference accepted it: a C-side bound the reference does not share
            raise ValueError(f"{self.game}: parameter {self.single.PARAMS[-bad - 1]} refused by the C game")

    def set_buffers(self, buffers: Any) -> None:
        super().set_buffers(buffers)
        if getattr(self, "kernel", None) is not None:  # the kernel holds views of these rows: rebind
            self.kernel.close()
            self.bind()

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.close()  # releases its views (a shared-memory segment unmaps only without them)
            self.kernel = None

    def vec_reset(self, seed: int | None = None) -> Episodes:
        if self.kernel is None:
            raise APIUsageError(f"{self.name}: reset() after close()")
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        seeds = np.array([(seed + i) & UINT64_MASK for i in range(self.num_envs)], dtype=np.uint64)
        self.kernel.reset(seeds)
        self.buffers.masks[:] = True
        self.seeded = True
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        if not self.seeded or self.kernel is None:
            raise APIUsageError(f"{self.name}: step() before reset() or after close()")
        if self.quantized is not None:  # floats in [-1, 1] to the fixed point the C step reads
            actions = quantize_actions(np.reshape(actions, self.quantized.shape), self.quantized, self.name)
        try:  # the kernel takes C-contiguous int64 as they are: the usual case pays no check here
            ended = self.kernel.step(actions)
        except (TypeError, BufferError, ValueError):
            actions = np.asarray(actions)
            if actions.dtype.kind not in "iub":
                raise SpaceError(f"{self.name}: actions must be integers, got {actions.dtype}") from None
            actions = np.ascontiguousarray(actions, dtype=np.int64)
            ended = self.kernel.step(actions)
        if ended > 0:  # copies: the kernel's arrays are rewritten next step (metrics: one copy, columns of it)
            metrics = self.ended_metrics[:ended].copy()
            return Episodes.trusted(
                self.ended_env[:ended].copy(),
                np.add.reduce(self.ended_return[:ended], axis=1) / self.ended_return.shape[1],  # mean(axis=1), less overhead
                self.ended_length[:ended].copy(),
                {name: metrics[:, i] for i, name in enumerate(self.metric_names)},
            )
        if ended < 0:
            bad = np.asarray(actions).reshape(-1)[-ended - 1]
            space = f"Discrete({self.act_n[0]})" if len(self.act_n) == 1 else f"MultiDiscrete({list(self.act_n)})"
            space = f"[-{ACTION_ONE}, {ACTION_ONE}] (fixed point)" if self.continuous else space
            raise SpaceError(f"{self.name}: action {bad} is outside the flat action space {space}")
        return NO_EPISODES


def check_action_layout(game: str, act_len: int, act_n: tuple, space: Any) -> bool:
    """Whether the game is continuous (every ``ACT_N`` entry 0); a one-line ``ValueError`` for a mix of
    discrete and continuous elements, or a continuous game whose reference's action space is not
    ``Box(-1, 1, (ACT_LEN,))``."""
    kinds = {n == CONTINUOUS for n in act_n}
    if len(kinds) > 1:
        raise ValueError(
            f"{game}: ACT_N mixes continuous (0) and discrete elements {list(act_n)}; fix: make every element "
            f"continuous (0) or every element discrete (a number of choices)"
        )
    if kinds != {True}:
        return False
    box = isinstance(space, spaces.Box) and space.shape == (act_len,)
    if not box or not (np.all(space.low == -1.0) and np.all(space.high == 1.0)):
        raise ValueError(
            f"{game}: a continuous game's action space must be Box(-1, 1, ({act_len},), float32), "
            f"the reference has {space}; fix: continuous_action_space({act_len})"
        )
    return True
