"""What every vector backend shares: the env factory, the batch interface, argument checks.

The unit a backend steps is an *env block*: an object simulating ``num_envs`` envs in
``num_agents`` buffer rows, with

* ``set_buffers(buffers)``: the rows it writes into, given once by the backend that allocated
  them (:meth:`EnvFactory.blocks`); a block allocates rows itself only when used alone,
* ``vec_reset(seed) -> Episodes`` and ``vec_step(actions) -> Episodes``: fill the rows,
  auto-resetting finished episodes (``SAME_STEP``), and report the episodes that ended
  (block-local env ids), ``close()``.

An emulated Gymnasium/PettingZoo env is a block of one env; a native batched env
(:mod:`pufferbox.vector.native`) is a block of many. :class:`~pufferbox.vector.stepper.BlockStepper`
is the one loop that steps a range of blocks, in every backend.

Finished episodes: one channel. The 5th element of every backend's ``recv()`` is a
:class:`~pufferbox.episodes.Episodes` (env ids backend-wide, returns, lengths, the metrics the
env's spec declares in ``episode_metrics``) for the envs of that batch. The ``cuda`` backend keeps
its episode log on the GPU, so its per-step ``Episodes`` is always empty; drain the log once per
rollout with ``CudaVectorEnv.episode_stats()``, which returns an ``Episodes`` too. The
Gymnasium-style ``reset()``/``step()`` return the same episodes as Gymnasium's info dict of
arrays (:meth:`Episodes.info_dict`).

Truncation: a block that sets ``writes_final_observations = True`` copies a truncated (not
terminated) episode's last observation into ``Buffers.final_observations`` before its autoreset
(every emulated Gymnasium/PettingZoo env does); :meth:`VectorEnv.final_observations` returns the
last batch's rows of it, or None when the env's blocks do not write it (a learner then has to
treat truncation like termination).

Deadlines: process backends raise :class:`WorkerTimeoutError` when a worker does not answer
within ``step_timeout`` seconds (a hung env, a stopped process) and close themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from pufferbox.buffers import Buffers
from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.errors import PufferboxError
from pufferbox.registry import EnvBuildError, EnvSpec, RegistryError
from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError

__all__ = [
    "EnvFactory",
    "NonFiniteActing",
    "VectorEnv",
    "VectorConfigError",
    "WorkerError",
    "refuse_oversized",
    "WorkerTimeoutError",
    "LOGITS_NOT_FINITE",
    "OBSERVATION_NOT_FINITE",
    "batch_space",
    "env_schema",
    "first_non_finite_row",
]

# What a NaN/inf names, wherever it is caught (host, device or Ray actor); ``row``/``env`` run-wide.
OBSERVATION_NOT_FINITE = "env {env} (agent row {row}) returned an observation with NaN/inf"
LOGITS_NOT_FINITE = "the policy's logits are NaN/inf on the observation of env {env}"

DEFAULT_STEP_TIMEOUT = 60.0  # seconds a worker may take to answer one command before it counts as hung


class VectorConfigError(PufferboxError, ValueError):
    """Backend arguments that cannot work together (the message says which and why)."""


class WorkerError(PufferboxError, RuntimeError):
    """An env raised (in a worker or, with ``main_envs``, the main process), or a worker died.

    The message names the env, the process and the cause, with the env's traceback.
    """


class WorkerTimeoutError(WorkerError):
    """A worker did not answer within ``step_timeout`` seconds (a hung env, a stopped process).

    The message names the worker, its pid and its envs; the vector env is closed (workers killed).
    """


class NonFiniteActing(PufferboxError, RuntimeError):
    """A worker that acts (a Ray rollout actor) met a NaN/inf observation or policy output; the message
    names the env as the host collector's check does, and the trainer adds the update and step."""


def first_non_finite_row(rows: np.ndarray) -> int | None:
    """The index of the first row of ``rows`` (any shape, rows first) holding NaN/inf; None if all finite.

    One pass over the array on the common (finite) path; integer arrays are always finite."""
    if rows.dtype.kind not in "fc" or np.isfinite(rows).all():
        return None
    return int(np.argmin(np.isfinite(rows.reshape(len(rows), -1)).all(axis=1)))


def env_schema(obs_spec: ObservationSpec, act_spec: ActionSpec) -> dict[str, tuple[tuple, np.dtype]]:
    """What a segment stores of the envs per row and step, ``name -> (shape per row, dtype)`` (Ray actors
    return segments of it; a learner adds the policy's arrays)."""
    flag = np.dtype(np.bool_)
    return {
        "obs": ((obs_spec.flat_size,), np.dtype(obs_spec.flat_dtype)),
        "actions": (tuple(act_spec.shape), np.dtype(act_spec.dtype)),
        "rewards": ((), np.dtype(np.float32)),
        "starts": ((), flag),
        "masks": ((), flag),
    }


def check_step_timeout(step_timeout: float | None) -> float:
    value = DEFAULT_STEP_TIMEOUT if step_timeout is None else float(step_timeout)
    if not value > 0:  # also refuses NaN
        raise VectorConfigError(f"step_timeout must be > 0 seconds, got {step_timeout} (set vec.step_timeout, e.g. 60)")
    return value


@dataclass
class EnvFactory:
    """Builds env blocks in any process: picklable, resolved from the spec by reference."""

    spec: EnvSpec
    kwargs: dict = field(default_factory=dict)
    use_native: bool = True
    check_obs: bool = False  # emulated envs: every observation against its space (bounds, NaN/inf)

    @property
    def native(self) -> bool:
        return self.use_native and self.spec.build.native is not None

    @property
    def writes_final_observations(self) -> bool:
        """Whether the blocks this factory builds keep truncated episodes' last observations
        (emulators always do; a native block says so with ``writes_final_observations``)."""
        if "_final_obs" not in self.__dict__:
            self.layout()
        return self.__dict__["_final_obs"]

    def blocks(self, num_envs: int, buffers: Buffers) -> list[Any]:
        """Blocks simulating ``num_envs`` envs on the rows of ``buffers`` (allocated by the backend):
        one native block, or ``num_envs`` emulators."""
        native = self.spec.build.native if self.native else None
        if native is not None:
            blocks = [self.native_block(native, num_envs)]
        else:
            blocks = [self.spec.make_emulated(check_obs=self.check_obs, **self.kwargs) for _ in range(num_envs)]
        row = 0
        for block in blocks:
            block.set_buffers(buffers.slice(row, row + block.num_agents))
            row += block.num_agents
        if row != len(buffers):
            for block in blocks:
                block.close()
            raise VectorConfigError(f"env blocks fill {row} rows, the backend allocated {len(buffers)}")
        return blocks

    def native_block(self, native: Any, num_envs: int) -> Any:
        """The plugin's native block of ``num_envs`` envs; its constructor raising is an :class:`EnvBuildError`."""
        self.spec.ensure_available()
        try:
            return native(num_envs=num_envs, **{**self.spec.build.kwargs, **self.kwargs})
        except (RegistryError, VectorConfigError, SpaceError):
            raise
        except Exception as exc:
            raise EnvBuildError.of(self.spec, exc) from exc

    def layout(self) -> tuple[ObservationSpec, ActionSpec, int]:
        """``(obs_spec, act_spec, agents_per_env)`` without keeping an env around."""
        native = self.spec.build.native if self.native else None
        if native is not None:
            block = self.native_block(native, 1)
            out = (block.obs_spec, block.act_spec, block.num_agents)
            self.__dict__["_final_obs"] = bool(getattr(block, "writes_final_observations", False))
            block.close()
            return out
        self.__dict__["_final_obs"] = True
        return self.spec.flattening(**self.kwargs)

    def slot_action_spaces(self) -> list[gymnasium.Space] | None:
        """Each agent slot's own flat action space where the agents' action spaces differ, else None
        (native blocks have one row layout by construction)."""
        if self.native:
            return None
        specs = self.spec.agent_specs(**self.kwargs)
        if specs is None or all(a is specs[0][1] for _, a in specs):
            return None
        return [a.flat_space for _, a in specs]


def refuse_oversized(factory: EnvFactory, num_envs: int, batch_envs: int | None = None, processes: int = 0) -> None:
    """One line (:class:`VectorConfigError`) when ``num_envs`` of the factory's envs (in ``processes`` worker
    processes) cannot fit in the memory available, before anything of theirs is allocated or started
    (see :mod:`pufferbox.vector.memory`)."""
    from pufferbox.vector.memory import env_memory_needed, refuse_oversized_envs

    obs_spec, act_spec, agents_per_env = factory.layout()
    act_elems = math.prod(act_spec.shape)
    needs = env_memory_needed(
        flat_size=obs_spec.flat_size,
        obs_itemsize=obs_spec.flat_dtype.itemsize,
        act_bytes=act_elems * act_spec.dtype.itemsize,
        act_elems=act_elems,
        rows=num_envs * agents_per_env,
        batch_rows=(batch_envs or num_envs) * agents_per_env,
        emulated=0 if factory.native else num_envs,
        processes=processes,
    )
    refuse_oversized_envs(factory.spec.name, num_envs, needs, VectorConfigError)


def batch_rows(slot_spaces: list[gymnasium.Space], envs: int) -> gymnasium.Space:
    """The batch action space of ``envs`` envs whose agent slots act in their own spaces (row order):
    each row's own range, so ``action_space.sample()`` is legal for every agent.

    >>> batch_rows([gymnasium.spaces.Discrete(3), gymnasium.spaces.Discrete(5)], 2)
    MultiDiscrete([3 5 3 5])
    """
    from gymnasium import spaces

    if all(isinstance(s, spaces.Discrete) for s in slot_spaces):
        return spaces.MultiDiscrete(np.tile([int(cast(Any, s).n) for s in slot_spaces], envs))
    if all(isinstance(s, spaces.MultiDiscrete) for s in slot_spaces):
        return spaces.MultiDiscrete(np.tile(np.stack([cast(Any, s).nvec for s in slot_spaces]), (envs, 1)))
    boxes = [cast(Any, s) for s in slot_spaces]
    low, high = np.stack([b.low for b in boxes]), np.stack([b.high for b in boxes])
    return spaces.Box(np.tile(low, (envs, 1)), np.tile(high, (envs, 1)), dtype=np.float32)


def batch_space(space: gymnasium.Space, n: int) -> gymnasium.Space:
    return gymnasium.vector.utils.batch_space(space, n)


class VectorEnv(gymnasium.vector.VectorEnv):
    """The batch interface of every backend.

    ``num_envs`` envs fill ``num_agents`` rows (``agents_per_env`` each). Each ``recv()``
    returns ``batch_size`` rows: ``(observations, rewards, terminals, truncations, episodes,
    env_ids, masks)``, where ``env_ids`` are the envs in the batch (in row order) and
    ``episodes`` the :class:`~pufferbox.episodes.Episodes` that ended in them. ``send(actions)``
    takes one action row per row of the last batch. ``reset``/``step`` are the synchronous
    Gymnasium-style pair (episodes as Gymnasium's info dict of arrays).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
    backend = "base"
    # Optional capabilities, declared here so a trainer asks instead of probing (the cuda backend has them).
    samples_actions = False  # sample(probs): a sampler kernel draws discrete actions where the env reads them

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
        refuse_oversized(factory, num_envs, self.batch_envs)  # before the batch spaces, buffers or envs exist
        self.single_observation_space = self.obs_spec.flat_space
        self.single_action_space = self.act_spec.flat_space
        self.observation_space = batch_space(self.single_observation_space, self.batch_size)
        slots = factory.slot_action_spaces()
        self.action_space = (
            batch_space(self.single_action_space, self.batch_size) if slots is None else batch_rows(slots, self.batch_envs)
        )
        self.is_multiagent = self.agents_per_env > 1

    # Subclasses implement these three.
    def async_reset(self, seed: int | None = 0) -> None:
        raise NotImplementedError

    def send(self, actions: np.ndarray) -> None:
        raise NotImplementedError

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Episodes, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def final_observations(self) -> Any:
        """Rows of ``Buffers.final_observations`` for the last ``recv()`` batch (read them where the
        batch's ``truncations`` are set and ``terminals`` are not), or None when the envs do not
        report final observations."""
        return None

    def sample(self, probs: Any) -> Any:
        """Discrete actions drawn from ``probs`` (rows x actions) into the action buffer; where
        ``samples_actions`` is declared."""
        raise NotImplementedError(f"the {self.backend} backend has no sampler kernel (samples_actions is False)")

    def episode_stats(self) -> Episodes:
        """Episodes ended since the last call that ``recv()`` did not report (a device-side log); the CPU
        backends report every episode in ``recv()``, so none here."""
        return NO_EPISODES

    @property
    def episodes_dropped(self) -> int:
        """Episodes lost between two :meth:`episode_stats` reads (a device log's overflow); none here."""
        return 0

    def state_tensor(self, name: str) -> Any:
        """Env state array ``name`` as a tensor sharing its memory, or None where the backend keeps none."""
        return None

    def reset(self, *, seed: int | None = 0, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.require_sync("reset")
        self.async_reset(seed)
        obs, _, _, _, episodes, _, _ = self.recv()
        return obs, episodes.info_dict(self.num_envs)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        self.require_sync("step")
        self.send(actions)
        obs, rewards, terminals, truncations, episodes, _, _ = self.recv()
        return obs, rewards, terminals, truncations, episodes.info_dict(self.num_envs)

    def require_sync(self, what: str) -> None:
        if self.batch_envs != self.num_envs:
            raise VectorConfigError(
                f"{what}() needs batch_size == num_envs; with a pool "
                f"({self.batch_envs} of {self.num_envs} envs per batch) use send()/recv()"
            )

    def check_actions(self, actions: np.ndarray) -> np.ndarray:
        actions = np.asarray(actions)
        expected = (self.batch_size, *self.act_spec.shape)
        if actions.shape != expected:
            raise ValueError(
                f"{self.env_name}: actions have shape {actions.shape}, expected {expected} "
                f"(one row per agent slot of the last batch)"
            )
        return actions

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
