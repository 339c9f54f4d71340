"""Registers ``minigrid/<task>`` and ``babyai/<level>`` for the common MiniGrid and BabyAI envs.

Each env is ``gymnasium.make("MiniGrid-...-v0")`` (or ``BabyAI-...``) with its observation
turned into fixed-size arrays the policy can read:

* ``image``: ``uint8[7, 7, 3]``, the agent's egocentric view as (object, colour, state) ids;
* ``direction``: ``Discrete(4)``, the way the agent faces;
* ``mission``: ``uint8[MISSION_BYTES]``, the mission string as UTF-8 bytes, zero-padded
  (longer missions are cut; the longest BabyAI missions are ~145 bytes).

MiniGrid draws its layouts from ``self.np_random``, so a seeded reset fixes the episode.

minigrid is imported inside :func:`make_minigrid` only: without it the envs are listed as
unavailable with the install command.

Example:
    >>> env = make_minigrid("MiniGrid-DoorKey-5x5-v0")
    >>> obs, _ = env.reset(seed=0)
    >>> bytes(obs["mission"]).rstrip(b"\\0")
    b'use the key to open the door and then get to the goal'
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl

REQUIRES = {"minigrid": "minigrid==3.2.0"}
MISSION_BYTES = 160
POLICY = "pufferbox_minigrid.policy:MiniGridEncoder"

# Gymnasium ids registered (checked against minigrid's registry by the tests) so that
# `pufferbox envs` needs no minigrid. solved_return: a mean return that needs the task done
# quickly nearly every episode (MiniGrid pays 1 - 0.9 * steps / max_steps on success).
TASKS = {
    "MiniGrid-Empty-5x5-v0": 0.9,
    "MiniGrid-Empty-8x8-v0": 0.9,
    "MiniGrid-Empty-16x16-v0": 0.9,
    "MiniGrid-DoorKey-5x5-v0": 0.9,
    "MiniGrid-DoorKey-6x6-v0": 0.9,
    "MiniGrid-DoorKey-8x8-v0": 0.9,
    "MiniGrid-DoorKey-16x16-v0": None,
    "MiniGrid-FourRooms-v0": None,
    "MiniGrid-Unlock-v0": 0.9,
    "MiniGrid-UnlockPickup-v0": None,
    "MiniGrid-KeyCorridorS3R1-v0": None,
    "MiniGrid-KeyCorridorS3R2-v0": None,
    "MiniGrid-KeyCorridorS3R3-v0": None,
    "MiniGrid-MultiRoom-N2-S4-v0": None,
    "MiniGrid-MultiRoom-N4-S5-v0": None,
    "MiniGrid-MultiRoom-N6-v0": None,
    "MiniGrid-LavaGapS5-v0": None,
    "MiniGrid-SimpleCrossingS9N1-v0": None,
    "MiniGrid-MemoryS7-v0": None,
    "MiniGrid-RedBlueDoors-6x6-v0": None,
    "MiniGrid-GoToDoor-5x5-v0": None,
    "MiniGrid-Fetch-5x5-N2-v0": None,
    "BabyAI-GoToRedBall-v0": None,
    "BabyAI-GoToObj-v0": None,
    "BabyAI-GoToLocal-v0": None,
    "BabyAI-PickupLoc-v0": None,
    "BabyAI-PutNextLocal-v0": None,
    "BabyAI-OpenDoor-v0": None,
    "BabyAI-UnlockLocal-v0": None,
    "BabyAI-GoTo-v0": None,
    "BabyAI-Synth-v0": None,
    "BabyAI-BossLevel-v0": None,
}

# rl-starter-files' PPO for MiniGrid (lr 1e-3, 128-step rollouts, 4 epochs, entropy 0.01),
# with 16 envs and minibatches of 256 rows.
DEFAULTS = {
    "train": {
        "total_steps": 1_000_000,
        "learning_rate": 1e-3,
        "num_steps": 128,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "update_epochs": 4,
        "num_minibatches": 8,
        "ent_coef": 0.01,
        "stop_on_solve": True,
    },
    "vec": {"num_envs": 16},
    "policy": {"hidden_size": 128},
}


def env_name(gym_id: str) -> str:
    """``"MiniGrid-DoorKey-5x5-v0"`` → ``"minigrid/doorkey-5x5"``; ``"BabyAI-GoTo-v0"`` → ``"babyai/goto"``."""
    family, rest = gym_id.split("-", 1)
    return f"{family.lower()}/{rest.rsplit('-v', 1)[0].lower()}"


def encode_mission(mission: str) -> np.ndarray:
    """The mission as ``uint8[MISSION_BYTES]``: UTF-8, zero-padded, cut at ``MISSION_BYTES``."""
    out = np.zeros(MISSION_BYTES, dtype=np.uint8)
    data = mission.encode("utf-8")[:MISSION_BYTES]
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


class MissionBytes(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """MiniGrid's ``{"image", "direction", "mission": str}`` with the mission as bytes."""

    def __init__(self, env: gymnasium.Env):
        gymnasium.utils.RecordConstructorArgs.__init__(self)
        gymnasium.ObservationWrapper.__init__(self, env)
        self.observation_space = spaces.Dict(
            {
                "image": env.observation_space["image"],
                "direction": env.observation_space["direction"],
                "mission": spaces.Box(0, 255, (MISSION_BYTES,), np.uint8),
            }
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {
            "image": observation["image"],
            "direction": observation["direction"],
            "mission": encode_mission(observation["mission"]),
        }


def make_minigrid(gym_id: str, render_mode: str | None = None, **kwargs: Any) -> gymnasium.Env:
    """One MiniGrid/BabyAI env with its mission as bytes (``kwargs`` go to ``gymnasium.make``)."""
    import minigrid

    gymnasium.register_envs(minigrid)
    return MissionBytes(gymnasium.make(gym_id, render_mode=render_mode, **kwargs))


@hookimpl
def register_envs(register):
    for gym_id, solved in TASKS.items():
        register(
            EnvSpec(
                name=env_name(gym_id),
                build=EnvBuild(binding=make_minigrid, kwargs={"gym_id": gym_id}),
                training=TrainDefaults(config=DEFAULTS, policy=POLICY, solved_return=solved),
                meta=EnvMeta(description=f"{gym_id}: 7x7 egocentric grid view, direction, mission bytes", requires=REQUIRES),
            )
        )
