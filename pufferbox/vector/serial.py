"""Serial backend: every env block in this process, stepping one after another.

The reference every other backend is tested against, and often the fastest choice
for envs that step in microseconds (no IPC at all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.vector.base import EnvFactory, VectorConfigError, VectorEnv, assign_blocks
from pufferbox.vector.native import join_infos, relabel_infos


class SerialVectorEnv(VectorEnv):
    """All envs in-process; ``batch_size`` must equal ``num_envs``.

    Example:
        >>> import pufferbox.vector
        >>> venv = pufferbox.vector.make("cartpole", backend="serial", num_envs=4)  # doctest: +SKIP
        >>> obs, info = venv.reset(seed=0)                                        # doctest: +SKIP
    """

    backend = "serial"

    def __init__(self, factory: EnvFactory, num_envs: int = 1, batch_size: int | None = None,
                 buffers: Buffers | None = None, **unused: Any):
        if unused:
            raise VectorConfigError(f"serial backend got unsupported options: {', '.join(sorted(unused))}")
        self.setup_layout(factory, num_envs, batch_size)
        if self.batch_envs != num_envs:
            raise VectorConfigError("the serial backend has no pool: batch_size must equal num_envs "
                                    "(use --backend multiprocessing for an async pool)")
        self.blocks = factory.blocks(num_envs)
        self.buffers = buffers if buffers is not None else Buffers.allocate(self.obs_spec, self.act_spec, self.num_agents)
        self.spans = assign_blocks(self.blocks, self.buffers)
        # (block, its action rows, first env): precomputed so a step slices nothing.
        self.steps = [(block, self.buffers.actions[start:stop], first_env)
                      for block, (start, stop, first_env) in zip(self.blocks, self.spans)]
        self.env_ids = np.arange(num_envs)
        self.action_shape = (self.batch_size, *self.act_spec.shape)
        self.infos: Sequence[dict] = []
        self.closed = False

    def collect(self, block_infos: Sequence[dict], first_env: int) -> None:
        # Emulators' fresh dicts are relabelled in place; a native block's EpisodeInfos (hundreds of
        # episodes per step) is relabelled as arrays, building no dicts.
        self.infos = join_infos(self.infos, relabel_infos(block_infos, first_env))

    def async_reset(self, seed: int | None = 0) -> None:
        self.infos = []
        for block, (_, _, first_env) in zip(self.blocks, self.spans):
            self.collect(block.vec_reset(None if seed is None else seed + first_env), first_env)

    def send(self, actions: np.ndarray) -> None:
        if type(actions) is not np.ndarray or actions.shape != self.action_shape:  # the common case skips a call
            actions = self.check_actions(actions)
        if actions is not self.buffers.actions:
            self.buffers.actions[:] = actions
        self.infos = []
        for block, block_actions, first_env in self.steps:
            block_infos = block.vec_step(block_actions)
            if block_infos:
                self.collect(block_infos, first_env)

    def recv(self):
        b = self.buffers
        return b.observations, b.rewards, b.terminals, b.truncations, self.infos, self.env_ids, b.masks

    def render(self) -> Any:
        """The first env's frame (its ``render_mode``), what ``pufferbox eval --render/--video`` shows."""
        return self.blocks[0].render()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for block in getattr(self, "blocks", ()):  # unset when __init__ failed: nothing to close
                block.close()
