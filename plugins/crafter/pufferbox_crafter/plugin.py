"""Registers ``crafter`` (Crafter's reward setting) and ``crafter/noreward``.

:class:`CrafterEnv` adapts ``crafter.Env`` (the old gym API) to Gymnasium: observations are
``uint8[64, 64, 3]`` frames (the local view and the inventory), 17 discrete actions, the
reward is +1 per achievement unlocked for the first time in the episode and ±0.1 per health
point gained or lost. An episode ends ``terminated`` when the player dies and ``truncated``
after ``length`` steps (10,000 by default).

Achievements are episode metrics: the final step's info holds ``achievement_<name>`` (1.0
when unlocked in the episode, else 0.0) for each of the 22 achievements, and
``achievements`` (how many were unlocked); the EnvSpec declares these names
(``episode_metrics``), so every backend reports them in ``Episodes.metrics`` and the trainer
logs their means (``episode_achievements``, ``episode_achievement_collect_wood``, ...).

Seeding: ``reset(seed=s)`` draws Crafter's world seed from ``self.np_random`` and restarts
its episode counter, so a seed fixes that episode's world and every unseeded one after it.
Crafter itself is not reproducible: its creature (de)spawning picks from a Python ``set``
of objects, whose order follows memory addresses; :func:`deterministic_env_class` visits
them by position instead (any order is Crafter's; this one is the same on every run).

crafter is imported inside :class:`CrafterEnv` only: without it the envs are listed as
unavailable with the install command.

Example:
    >>> env = CrafterEnv()
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, env.action_space
    ((64, 64, 3), Discrete(17))
"""

from __future__ import annotations

import contextlib
import io
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl

REQUIRES = {"crafter": "crafter==1.8.3"}
# crafter.constants.achievements of crafter 1.8.3 (checked by the tests), so that the metric
# names are known without crafter.
ACHIEVEMENTS = (
    "collect_coal",
    "collect_diamond",
    "collect_drink",
    "collect_iron",
    "collect_sapling",
    "collect_stone",
    "collect_wood",
    "defeat_skeleton",
    "defeat_zombie",
    "eat_cow",
    "eat_plant",
    "make_iron_pickaxe",
    "make_iron_sword",
    "make_stone_pickaxe",
    "make_stone_sword",
    "make_wood_pickaxe",
    "make_wood_sword",
    "place_furnace",
    "place_plant",
    "place_stone",
    "place_table",
    "wake_up",
)
EPISODE_METRICS = tuple(f"achievement_{name}" for name in ACHIEVEMENTS) + ("achievements",)
SEED_BOUND = 2**31 - 1  # crafter seeds numpy's RandomState (below 2**32) from hash((seed, episode))

# PPO as in the Crafter paper's baseline budget (1M steps), NatureCNN-sized features.
DEFAULTS = {
    "train": {
        "total_steps": 1_000_000,
        "learning_rate": 3e-4,
        "num_steps": 128,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "update_epochs": 4,
        "num_minibatches": 8,
        "ent_coef": 0.01,
    },
    "vec": {"num_envs": 16},
    "policy": {"hidden_size": 512},
}


def import_crafter() -> Any:
    # crafter imports the unmaintained `gym` (for its space classes only) when it is installed,
    # which prints a deprecation notice to stderr on every run; that notice is not ours to show.
    with contextlib.redirect_stderr(io.StringIO()):
        import crafter
    return crafter


_ENV_CLASS: Any = None


def deterministic_env_class() -> Any:
    """``crafter.Env`` whose chunk balancing sees each chunk's objects sorted by position."""
    global _ENV_CLASS  # one subclass per process, built on first use (crafter is optional)
    if _ENV_CLASS is None:
        crafter = import_crafter()

        class DeterministicCrafter(crafter.Env):
            def _balance_chunk(self, chunk: Any, objs: Any) -> None:
                super()._balance_chunk(chunk, sorted(objs, key=lambda obj: (int(obj.pos[0]), int(obj.pos[1]))))

        _ENV_CLASS = DeterministicCrafter
    return _ENV_CLASS


class CrafterEnv(gymnasium.Env):
    """Crafter with the Gymnasium API and per-episode achievement metrics in the final info."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, reward: bool = True, length: int = 10_000, size: int = 64, render_mode: str | None = None):
        self.crafter = deterministic_env_class()(size=(size, size), reward=reward, length=length, seed=0)
        self.length = length
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.action_space = spaces.Discrete(len(import_crafter().constants.actions))
        self.seeded = False

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None or not self.seeded:
            self.crafter._seed = int(self.np_random.integers(SEED_BOUND))
            self.crafter._episode = 0
            self.seeded = True
        return self.crafter.reset(), {}

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict]:
        obs, reward, done, raw = self.crafter.step(int(action))
        terminated = done and raw["discount"] == 0.0  # health reached 0
        truncated = done and not terminated
        info: dict[str, Any] = {}
        if done:
            unlocked = raw["achievements"]
            info.update({f"achievement_{name}": float(unlocked[name] > 0) for name in ACHIEVEMENTS})
            info["achievements"] = float(sum(unlocked[name] > 0 for name in ACHIEVEMENTS))
        return obs, float(reward), bool(terminated), bool(truncated), info

    def render(self) -> np.ndarray | None:
        return self.crafter.render() if self.render_mode == "rgb_array" else None


@hookimpl
def register_envs(register):
    register(
        EnvSpec(
            name="crafter",
            build=EnvBuild(binding=CrafterEnv, episode_metrics=EPISODE_METRICS),
            training=TrainDefaults(config=DEFAULTS),
            meta=EnvMeta(
                description="Crafter (open-world survival, 22 achievements); 64x64 RGB, the trainer's CNN", requires=REQUIRES
            ),
        )
    )
    register(
        EnvSpec(
            name="crafter/noreward",
            build=EnvBuild(binding=CrafterEnv, kwargs={"reward": False}, episode_metrics=EPISODE_METRICS),
            training=TrainDefaults(config=DEFAULTS),
            meta=EnvMeta(
                description="Crafter without reward (unsupervised agents); achievements still reported", requires=REQUIRES
            ),
        )
    )
