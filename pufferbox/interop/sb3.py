"""A pufferbox vector env as a Stable-Baselines3 ``VecEnv``.

Each env is one SB3 env. Multi-agent envs are refused: their padded agent slots (masked out
of pufferbox's PPO) would reach SB3, which has no masks, as real transitions. Finished
episodes arrive as SB3's ``Monitor`` would report them: ``infos[i]["episode"] = {"r", "l", "t"}``,
so ``model.ep_info_buffer`` and SB3's logger work.

``terminal_observation``: pufferbox resets finished episodes on the same step
(``SAME_STEP``), so the row already holds the next episode's first observation. For *truncated*
episodes the backend keeps the last one (``venv.final_observations()``) and the adapter hands
it to SB3 as ``terminal_observation`` with ``TimeLimit.truncated`` True, so SB3's PPO bootstraps
the cut-off value. For *terminated* ones it is left out (SB3 reads it with ``.get``; their value
is 0, SB3 never needs it).

Example:
    >>> import pufferbox.vector
    >>> from stable_baselines3 import PPO
    >>> venv = SB3VecEnv(pufferbox.vector.make("cartpole", backend="serial", num_envs=8))  # doctest: +SKIP
    >>> PPO("MlpPolicy", venv, n_steps=64).learn(4096)                                    # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from pufferbox.errors import PufferboxError

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv
except ImportError as exc:  # an optional extra: say how to get it
    raise ImportError(f"pufferbox.interop.sb3 needs stable-baselines3 ({exc}); pip install 'pufferbox[sb3]'") from exc

__all__ = ["SB3VecEnv", "InteropError"]


class InteropError(PufferboxError, ValueError):
    """The vector env cannot be wrapped as asked (e.g. an async pool); one line says why."""


class SB3VecEnv(VecEnv):
    """Wraps a synchronous pufferbox vector env (``batch_size == num_envs``) for SB3."""

    def __init__(self, venv: Any):
        if venv.batch_envs != venv.num_envs:
            raise InteropError(
                f"SB3VecEnv needs a synchronous vector env; this one steps {venv.batch_envs} of "
                f"{venv.num_envs} envs per batch (make it with batch_size=num_envs)"
            )
        if venv.agents_per_env > 1 or venv.is_multiagent:
            raise InteropError(
                f"{venv.env_name} is multi-agent; SB3 has no agent masks, so SB3VecEnv takes "
                f"single-agent envs only (train multi-agent envs with `pufferbox train`)"
            )
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self.actions: np.ndarray | None = None
        self.start = time.perf_counter()

    # -- the stepping pair -----------------------------------------------------------
    def reset(self) -> np.ndarray:
        seed = self._seeds[0]  # pufferbox seeds env k with seed + k, as SB3's seed() does
        obs, _ = self.venv.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.start = time.perf_counter()
        return np.array(obs, copy=True)

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = np.asarray(actions).reshape(self.venv.action_space.shape)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        obs, rewards, terminals, truncations, info = self.venv.step(self.actions)
        terminals, truncations = np.asarray(terminals, bool), np.asarray(truncations, bool)
        dones = terminals | truncations
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        final = self.venv.final_observations() if (truncations & ~terminals).any() else None
        for row in np.flatnonzero(dones):
            truncated = bool(truncations[row] and not terminals[row])
            infos[row]["TimeLimit.truncated"] = truncated
            if truncated and final is not None:
                infos[row]["terminal_observation"] = np.array(final[row], copy=True)
        mask = info.get("_episode_return")
        if mask is not None:
            elapsed = round(time.perf_counter() - self.start, 6)
            for env in np.flatnonzero(mask):
                infos[env]["episode"] = {
                    "r": float(info["episode_return"][env]),
                    "l": int(info["episode_length"][env]),
                    "t": elapsed,
                }
        # copies: the backend reuses its buffers on the next step, SB3 keeps references
        return np.array(obs, copy=True), np.array(rewards, dtype=np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    # -- attribute access: one vector env, not N python envs ------------------------------
    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self.venv, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]
