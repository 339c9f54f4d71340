"""Small envs that exercise backends (multi-agent padding, faults, uneven step times) and policies (hybrid actions).

They are importable by reference (module-level creators), so every backend's workers
(forked, spawned or Ray actors) can build them. :func:`env_spec_for` gives their
:class:`~pufferbox.registry.EnvSpec` without registering them anywhere.

Example:
    >>> import pufferbox.vector
    >>> venv = pufferbox.vector.make(env_spec_for("uneven"), backend="serial", num_envs=2)
    >>> venv.close()
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import gymnasium
import numpy as np

from pufferbox.registry import EnvBuild, EnvSpec

__all__ = ["CountdownAgents", "FaultyEnv", "HybridTargetEnv", "UnevenStepEnv", "env_spec_for"]


class CountdownAgents:
    """PettingZoo-style ParallelEnv: 3 agents that leave at random times (tests padding/masks)."""

    metadata = {"name": "countdown_agents"}
    render_mode = None

    def __init__(self, max_steps: int = 12):
        self.possible_agents = ["a0", "a1", "a2"]
        self.agents: list[str] = []
        self.max_steps = max_steps
        self.rng = np.random.default_rng()
        self.obs_space = gymnasium.spaces.Box(-100, 100, (3,), np.float32)
        self.act_space = gymnasium.spaces.Discrete(3)

    def observation_space(self, agent: str) -> gymnasium.Space:
        return self.obs_space

    def action_space(self, agent: str) -> gymnasium.Space:
        return self.act_space

    def obs(self, agent: str) -> np.ndarray:
        return np.array([self.life[agent], self.t, self.rng.uniform(-1, 1)], dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = list(self.possible_agents)
        self.life = {a: int(self.rng.integers(2, self.max_steps)) for a in self.agents}
        return {a: self.obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        rewards = {a: float(actions[a]) - 1.0 + 0.1 * self.t for a in self.agents}
        terms = {a: self.t >= self.life[a] for a in self.agents}
        truncs = {a: False for a in self.agents}
        obs = {a: self.obs(a) for a in self.agents}
        self.agents = [a for a in self.agents if not terms[a]]
        return obs, rewards, terms, truncs, {a: {} for a in obs}

    def close(self) -> None:
        pass


BAD_OBSERVATIONS = {
    "short_obs": np.zeros(1, np.float32),
    "none_obs": None,
    "nan_obs": np.array([0.0, np.nan], np.float32),
    "big_obs": np.array([0.0, 5.0], np.float32),
}


class FaultyEnv(gymnasium.Env):
    """Steps normally until ``fail_at`` steps, then raises (``mode="raise"``), kills itself
    (``"kill"``), exits its process with ``os._exit(3)`` (``"exit"``), sleeps forever (``"hang"``),
    returns NaN rewards (``"nan_reward"``) or returns a bad observation (``"short_obs"``: shape
    (1,) instead of (2,); ``"none_obs"``: ``None``; ``"nan_obs"``: NaN; ``"big_obs"``: out of bounds).
    Rewards are a noisy function of the action, so a policy trained on it has gradients. ``"init"``: the
    constructor raises (a missing ROM, a licence, a bad keyword); ``"hang_reset"``: ``reset`` sleeps forever."""

    def __init__(self, fail_at: int = 3, mode: str = "raise", fail_env_seed: int | None = None):
        if mode == "init":
            raise FileNotFoundError("deliberate failure: no ROM at /nowhere/rom.bin")
        self.observation_space = gymnasium.spaces.Box(-1, 1, (2,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.fail_at, self.mode, self.fail_env_seed = fail_at, mode, fail_env_seed
        self.seed_seen: int | None = None
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if self.mode == "hang_reset":
            while True:
                time.sleep(60)
        if seed is not None:
            self.seed_seen = seed
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        armed = self.fail_env_seed is None or self.seed_seen == self.fail_env_seed
        if armed and self.t >= self.fail_at:
            if self.mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.mode == "exit":
                os._exit(3)
            if self.mode == "nan_reward":
                return np.zeros(2, np.float32), float("nan"), False, False, {}
            if self.mode == "hang":
                while True:
                    time.sleep(60)
            if self.mode in BAD_OBSERVATIONS:
                return BAD_OBSERVATIONS[self.mode], 0.0, False, False, {}
            raise ValueError(f"deliberate failure at step {self.t}")
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return obs, float(action) - 0.5 * float(obs[0]), False, False, {}


class UnevenStepEnv(gymnasium.Env):
    """Each step busy-waits a random time (exponential: std = mean), so workers finish unevenly."""

    def __init__(self, mean_step_s: float = 1e-3, episode_length: int = 100):
        self.observation_space = gymnasium.spaces.Box(0, 1, (4,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.mean_step_s, self.episode_length = mean_step_s, episode_length
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.random(4, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        end = time.perf_counter() + self.np_random.exponential(self.mean_step_s)
        while time.perf_counter() < end:  # CPU work, not sleep: the cores are the limit
            pass
        return self.np_random.random(4, dtype=np.float32), float(action), False, self.t >= self.episode_length, {}


class HybridTargetEnv(gymnasium.Env):
    """A hybrid action task: each of ``rounds`` steps the observation shows which of ``targets`` targets pays
    (one-hot) and the amount it wants (last entry, in [-0.8, 0.8]); the action picks a target (``Discrete``)
    and an amount (``Box``). Reward: 1 for the paying target, minus the amount's distance to the wanted one,
    so each head has a signal of its own. Uniform play earns about ``1/targets - 0.6`` a step, the best 1.
    The final info's ``hit_rate`` and ``amount_error`` (episode means) tell each head's progress apart.

    ``mask_key``: the observation is a Dict of ``view`` (the above) and, under that key, the legal targets
    (one non-paying target is illegal each step); ``illegal`` counts illegal targets any instance received."""

    illegal = 0

    def __init__(self, targets: int = 3, rounds: int = 8, mask_key: str | None = None):
        self.targets, self.rounds, self.mask_key = targets, rounds, mask_key
        view = gymnasium.spaces.Box(-1, 1, (targets + 1,), np.float32)
        legal = gymnasium.spaces.Box(0, 1, (targets,), np.int8)
        self.observation_space = view if mask_key is None else gymnasium.spaces.Dict({"view": view, mask_key: legal})
        self.action_space = gymnasium.spaces.Dict(
            {"target": gymnasium.spaces.Discrete(targets), "amount": gymnasium.spaces.Box(-1, 1, (1,), np.float32)}
        )

    def observe(self) -> Any:
        self.paying, self.wanted = int(self.np_random.integers(self.targets)), float(self.np_random.uniform(-0.8, 0.8))
        view = np.append(np.eye(self.targets, dtype=np.float32)[self.paying], np.float32(self.wanted))
        self.legal = np.ones(self.targets, np.int8)
        if self.mask_key is None:
            return view
        self.legal[(self.paying + 1 + self.np_random.integers(self.targets - 1)) % self.targets] = 0
        return {"view": view, self.mask_key: self.legal.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t, self.hits, self.error = 0, 0, 0.0
        return self.observe(), {}

    def step(self, action: dict) -> tuple[Any, float, bool, bool, dict]:
        target = int(action["target"])
        HybridTargetEnv.illegal += int(not self.legal[target])
        hit = target == self.paying
        error = abs(float(np.clip(action["amount"][0], -1, 1)) - self.wanted)
        self.t, self.hits, self.error = self.t + 1, self.hits + hit, self.error + error
        done = self.t >= self.rounds
        info = {"hit_rate": self.hits / self.t, "amount_error": self.error / self.t} if done else {}
        return self.observe(), float(hit) - error, done, False, info


class EmptyMaskEnv(gymnasium.Env):
    """Four choices under an ``action_mask``; every one legal until step ``empty_at`` of an episode, whose
    observation's mask is all zeros (an env that leaves its acting agent no legal move)."""

    def __init__(self, empty_at: int = 5, episode_length: int = 20):
        self.observation_space = gymnasium.spaces.Dict(
            {"x": gymnasium.spaces.Box(0, 1, (2,), np.float32), "action_mask": gymnasium.spaces.Box(0, 1, (4,), np.int8)}
        )
        self.action_space = gymnasium.spaces.Discrete(4)
        self.empty_at, self.episode_length, self.t = empty_at, episode_length, 0

    def observe(self) -> dict:
        mask = np.zeros(4, np.int8) if self.t == self.empty_at else np.ones(4, np.int8)
        return {"x": np.full(2, self.t / self.episode_length, np.float32), "action_mask": mask}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self.observe(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        self.t += 1
        return self.observe(), float(action == 0), self.t >= self.episode_length, False, {}


def make_empty_mask(**kwargs: Any) -> EmptyMaskEnv:
    return EmptyMaskEnv(**kwargs)


def make_countdown(**kwargs: Any) -> CountdownAgents:
    return CountdownAgents(**kwargs)


def make_faulty(**kwargs: Any) -> FaultyEnv:
    return FaultyEnv(**kwargs)


def make_hybrid_target(**kwargs: Any) -> HybridTargetEnv:
    return HybridTargetEnv(**kwargs)


def make_uneven(**kwargs: Any) -> UnevenStepEnv:
    return UnevenStepEnv(**kwargs)


def env_spec_for(name: str, action_mask: str | None = None, **kwargs: Any) -> EnvSpec:
    """An unregistered EnvSpec for ``countdown``, ``empty_mask``, ``faulty``, ``hybrid`` or ``uneven`` (``action_mask``:
    its ``EnvBuild.action_mask``)."""
    bindings = {
        "countdown": make_countdown,
        "empty_mask": make_empty_mask,
        "faulty": make_faulty,
        "hybrid": make_hybrid_target,
        "uneven": make_uneven,
    }
    if name not in bindings:
        raise KeyError(f"unknown test env {name!r}; choose one of {', '.join(bindings)}")
    metrics = ("hit_rate", "amount_error") if name == "hybrid" else ()
    build = EnvBuild(binding=bindings[name], kwargs=kwargs, episode_metrics=metrics, action_mask=action_mask)
    return EnvSpec(name=name, build=build)
