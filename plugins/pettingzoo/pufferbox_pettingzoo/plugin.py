"""Registers PettingZoo butterfly envs and MPE scenarios as fixed-slot multi-agent envs.

* butterfly (``pettingzoo[butterfly]``): ``pistonball`` (20 pistons; discrete actions by
  default, ``continuous=True`` for the Box version), ``cooperative_pong`` (2 paddles),
  ``knights_archers_zombies`` (2 archers + 2 knights, vector observations). Headless:
  ``SDL_VIDEODRIVER=dummy`` is set when unset.
* MPE (``mpe2``): ``mpe/simple``, ``mpe/simple_spread``, ``mpe/simple_reference``,
  ``mpe/simple_line``, ``mpe/simple_formation`` (agents already alike), and
  ``mpe/simple_adversary``, ``mpe/simple_crypto``, ``mpe/simple_push``, ``mpe/simple_tag``,
  ``mpe/collect_treasure``, ``mpe/simple_speaker_listener`` and ``mpe/simple_world_comm`` (roles
  observe different lengths, and in the last two act differently: 3 vs 5 and 20 vs 5 actions).
* Team envs train one policy per team (``EnvSpec.groups``, by agent-id prefix), each on its team's
  own spaces (the emulator keeps each agent's own record in rows of one width):
  ``knights_archers_zombies``, ``mpe/simple_adversary``, ``simple_push``, ``simple_tag``,
  ``simple_speaker_listener``, ``simple_world_comm``. The role envs without teams
  (``simple_crypto``, ``collect_treasure``) train one shared policy on padded observations plus a
  role one-hot (:mod:`pufferbox_pettingzoo.uniform`).

The env packages are imported inside the bindings only, so without them the envs are
listed as unavailable with the install command.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl

BUTTERFLY_REQUIRES = {"pygame": "pygame-ce==2.5.8", "pymunk": "pymunk==7.3.1", "pettingzoo": "pettingzoo[butterfly]==1.27.0"}
MPE_REQUIRES = {"mpe2": "mpe2==1.1.1", "pettingzoo": "pettingzoo==1.27.0"}

BUTTERFLY = {
    "pistonball": (
        "pistonball_v6",
        {"continuous": False},
        "20 pistons move a ball left together (pixels 457x120x3 per piston)",
    ),
    "cooperative_pong": ("cooperative_pong_v6", {}, "two paddles keep a ball in play (pixels 280x480x3)"),
    "knights_archers_zombies": (
        "knights_archers_zombies_v11",
        {},
        "2 archers and 2 knights fight zombies (vector observations 27x5)",
    ),
}
MPE_ALIKE = {
    "simple": "simple_v3",
    "simple_spread": "simple_spread_v3",
    "simple_reference": "simple_reference_v3",
    "simple_line": "simple_line_v1",
    "simple_formation": "simple_formation_v1",
}
MPE_PADDED = {
    "simple_adversary": "simple_adversary_v3",
    "simple_crypto": "simple_crypto_v3",
    "simple_push": "simple_push_v3",
    "simple_tag": "simple_tag_v3",
    "collect_treasure": "collect_treasure_v1",
    # roles with different Discrete action counts too
    "simple_speaker_listener": "simple_speaker_listener_v4",
    "simple_world_comm": "simple_world_comm_v3",
}

MPE_DEFAULTS = {
    "train": {"total_steps": 2_000_000, "learning_rate": 7e-4, "num_steps": 128, "ent_coef": 0.01},
    "vec": {"num_envs": 8},
    "policy": {"hidden_size": 128},
}
BUTTERFLY_DEFAULTS = {
    "train": {"total_steps": 5_000_000, "learning_rate": 3e-4, "num_steps": 128},
    "vec": {"num_envs": 4},
    "policy": {"hidden_size": 256},
}


def make_butterfly(module: str, **kwargs: Any) -> Any:
    """``pettingzoo.butterfly.<module>.parallel_env(**kwargs)``, headless by default."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame opens no window without a display
    env_module = importlib.import_module(f"pettingzoo.butterfly.{module}")
    return env_module.parallel_env(**kwargs)


def make_mpe(module: str, pad: bool = False, **kwargs: Any) -> Any:
    """``mpe2.<module>.parallel_env(**kwargs)``, observations padded to one layout when ``pad``."""
    env = importlib.import_module(f"mpe2.{module}").parallel_env(**kwargs)
    if pad:
        from pufferbox_pettingzoo.uniform import PadObservations

        env = PadObservations(env)
    return env


TEAMS = {
    "knights_archers_zombies",
    "mpe/simple_adversary",
    "mpe/simple_push",
    "mpe/simple_tag",
    "mpe/simple_speaker_listener",
    "mpe/simple_world_comm",
}


def team_groups(env: Any) -> dict[str, list]:
    """One policy per team, named by the agent-id prefix (``adversary_0`` -> ``adversary``)."""
    out: dict[str, list] = {}
    for agent in env.possible_agents:
        out.setdefault(str(agent).rsplit("_", 1)[0], []).append(agent)
    return out


@hookimpl
def register_envs(register):
    for name, (module, kwargs, what) in BUTTERFLY.items():
        register(
            EnvSpec(
                name=name,
                build=EnvBuild(binding=make_butterfly, kwargs={"module": module, **kwargs}),
                training=TrainDefaults(config=BUTTERFLY_DEFAULTS, groups=team_groups if name in TEAMS else None),
                meta=EnvMeta(description=f"PettingZoo butterfly {module}: {what}", requires=BUTTERFLY_REQUIRES),
                aliases=(f"butterfly/{name}",),
            )
        )
    for name, module in {**MPE_ALIKE, **MPE_PADDED}.items():
        padded = name in MPE_PADDED and f"mpe/{name}" not in TEAMS  # teams get their own spaces, no padding
        register(
            EnvSpec(
                name=f"mpe/{name}",
                build=EnvBuild(binding=make_mpe, kwargs={"module": module, "pad": padded}),
                training=TrainDefaults(config=MPE_DEFAULTS, groups=team_groups if f"mpe/{name}" in TEAMS else None),
                meta=EnvMeta(
                    description=f"MPE {module} (mpe2)" + (": observations padded, role one-hot appended" if padded else ""),
                    requires=MPE_REQUIRES,
                ),
            )
        )
