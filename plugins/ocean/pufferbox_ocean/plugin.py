"""Registers the Ocean games (``ocean/NAME``: C blocks with Python references) and the seven sanity envs.

Sanity envs: ``solved_return`` is about 0.9 x the env's optimal expected return (see each env's
docstring), a level a correct PPO with a small MLP (an LSTM for ``memory``) reaches
within a minute on a laptop CPU.
"""

from __future__ import annotations

import importlib

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl
from pufferbox_ocean import envs, native
from pufferbox_ocean.block import LIBRARY
from pufferbox_ocean.games.common import Game

# name, single env, native twin, solved_return (0.9 x optimum), training steps
OCEAN = [
    ("squared", envs.Squared, native.SquaredNative, 3.6, 200_000),
    ("password", envs.Password, native.PasswordNative, 0.9, 100_000),
    ("stochastic", envs.Stochastic, native.StochasticNative, 0.81, 100_000),
    ("memory", envs.Memory, native.MemoryNative, 0.9, 200_000),
    ("multiagent", envs.Multiagent, native.MultiagentNative, 0.9, 50_000),
    ("spaces", envs.Spaces, native.SpacesNative, 0.9, 200_000),
    ("bandit", envs.Bandit, native.BanditNative, 0.72, 50_000),
]


# Settings beyond the trainer's defaults, found with benchmarks/bench_train_ocean.py: memory needs
# an LSTM (it recalls bits seen steps ago); spaces pays each step for that step only, so a short
# horizon, short rollouts over many envs and a constant high learning rate suit it.
TUNED = {
    "memory": {
        "policy": {"lstm": True},
        "vec": {"num_envs": 64},
        "train": {"num_steps": 16, "learning_rate": 3e-3, "gamma": 0.9},
    },
    "spaces": {
        "vec": {"num_envs": 128},
        "train": {"num_steps": 8, "learning_rate": 5e-3, "gamma": 0.5, "ent_coef": 0.0, "anneal_lr": False},
    },
}


# The C games: one per c/NAME.h (the compiled table is generated from the headers; pufferbox.native), each
# with its reference (games/NAME.py): a game added is registered, none is listed by hand.
GAME_NAMES = LIBRARY.names


def defaults_for(name: str, steps: int) -> dict:
    tuned = TUNED.get(name, {})
    out = {section: dict(values) for section, values in tuned.items()}
    out.setdefault("train", {})["total_steps"] = steps
    return out


def summary(cls: type) -> str:
    return (cls.__doc__ or "").strip().splitlines()[0]


def games() -> list[Game]:
    """The compiled games: each ``games/NAME.py``'s ``GAME`` record, in the C table's order."""
    return [importlib.import_module(f"pufferbox_ocean.games.{name}").GAME for name in GAME_NAMES]


@hookimpl
def register_envs(register):
    for name, single, batched, solved, steps in OCEAN:
        register(
            EnvSpec(
                name=name,
                build=EnvBuild(binding=single, native=batched),
                training=TrainDefaults(config=defaults_for(name, steps), solved_return=solved),
                meta=EnvMeta(description=summary(single)),
                aliases=(f"ocean/{name}",),
            )
        )
    LIBRARY.register(register, games(), prefix="ocean/")
