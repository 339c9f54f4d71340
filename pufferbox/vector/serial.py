"""Serial backend: every env block in this process, stepping one after another.

The reference every other backend is tested against, and often the fastest choice
for envs that step in microseconds (no IPC at all).

An env that raises in ``step``/``reset`` surfaces as :class:`~pufferbox.vector.base.WorkerError`
naming the env, with its traceback in the message and the env's own exception as ``__cause__``
(what the other backends raise too, so ``pufferbox train`` shows one line on every backend).
pufferbox's own one-line errors about the env's contract (:class:`~pufferbox.spaces.SpaceError`,
:class:`~pufferbox.emulation.APIUsageError`) pass through as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.emulation import APIUsageError
from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.spaces import SpaceError
from pufferbox.vector.base import EnvFactory, VectorConfigError, VectorEnv
from pufferbox.vector.pool import main_process_error
from pufferbox.vector.stepper import BlockStepper


class SerialVectorEnv(VectorEnv):
    """All envs in-process; ``batch_size`` must equal ``num_envs``.

    Example:
        >>> import pufferbox.vector
        >>> venv = pufferbox.vector.make("cartpole", backend="serial", num_envs=4)  # doctest: +SKIP
        >>> obs, info = venv.reset(seed=0)                                        # doctest: +SKIP
    """

    backend = "serial"

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int = 1,
        batch_size: int | None = None,
        buffers: Buffers | None = None,
        **unused: Any,
    ):
        self.closed = True  # until the stepper exists: close() then has nothing to free
        if unused:
            raise VectorConfigError(f"serial backend got unsupported options: {', '.join(sorted(unused))}")
        self.setup_layout(factory, num_envs, batch_size)
        if self.batch_envs != num_envs:
            raise VectorConfigError(
                "the serial backend has no pool: batch_size must equal num_envs "
                "(use --backend multiprocessing for an async pool)"
            )
        self.buffers = buffers if buffers is not None else Buffers.allocate(self.obs_spec, self.act_spec, self.num_agents)
        if len(self.buffers) != self.num_agents:
            raise VectorConfigError(
                f"serial backend: buffers have {len(self.buffers)} rows, {num_envs} envs need {self.num_agents}"
            )
        self.stepper = BlockStepper(factory, self.buffers, first_env=0, num_envs=num_envs)
        self.blocks = self.stepper.blocks
        self.closed = False
        self.env_ids = np.arange(num_envs)
        self.action_shape = (self.batch_size, *self.act_spec.shape)
        self.episodes = NO_EPISODES

    def async_reset(self, seed: int | None = 0) -> None:
        self.episodes = self.run_envs(lambda: self.stepper.reset(seed))

    def send(self, actions: np.ndarray) -> None:
        if type(actions) is not np.ndarray or actions.shape != self.action_shape:  # the common case skips a call
            actions = self.check_actions(actions)
        if actions is not self.buffers.actions:
            self.buffers.actions[:] = actions
        self.episodes = self.run_envs(self.stepper.step)

    def run_envs(self, run: Callable[[], Episodes]) -> Episodes:
        """Step or reset every env; an env's own exception becomes a :class:`WorkerError` naming it."""
        try:
            return run()
        except (SpaceError, APIUsageError):
            raise
        except Exception as exc:  # KeyboardInterrupt and the like propagate as they are
            raise main_process_error(self.env_name, self.stepper.failed_env) from exc

    def recv(self):
        b = self.buffers
        return b.observations, b.rewards, b.terminals, b.truncations, self.episodes, self.env_ids, b.masks

    def final_observations(self) -> np.ndarray | None:
        return self.buffers.final_observations if self.factory.writes_final_observations else None

    def render(self) -> Any:
        """The first env's frame (its ``render_mode``), what ``pufferbox eval --render/--video`` shows."""
        return self.blocks[0].render()

    def close(self, **kwargs: Any) -> None:
        if not self.closed:
            self.closed = True
            self.stepper.close()
