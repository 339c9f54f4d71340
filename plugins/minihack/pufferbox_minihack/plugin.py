"""Registers ``minihack/<task>`` for MiniHack's navigation and skill tasks.

Each env is ``gymnasium.make("MiniHack-<Task>-v0")`` on the NetHack plugin's nle 1.3.0,
seen through that plugin's observation wrapper
(:class:`pufferbox_nethack.env.NetHackObservation`): the agent gets the same ``glyphs``
(int16[21, 79]), ``blstats`` (int64[27]) and ``message`` (uint8[256]) as ``nethack``, nle
writes them straight into pufferbox's rows, ``render_mode="ansi"`` prints the terminal, and
the NetHack encoder is the default policy. A seeded reset seeds NetHack's core and display
RNGs (and the later unseeded games from the seed's children), so MiniHack's generated
levels repeat.

MiniHack's own step (its reward manager and goal checks run in Python each step) is kept:
the NetHack plugin's native block recomputes only the NLE tasks' rewards, not MiniHack's.
Boxoban is left out (its levels are a separate download).

minihack is imported inside :func:`make_minihack` only: without it (or without nle) the
envs are listed as unavailable with the install command.

Example:
    >>> env = make_minihack("MiniHack-Room-5x5-v0")
    >>> sorted(env.observation_space.spaces)
    ['blstats', 'glyphs', 'message']
"""

from __future__ import annotations

from typing import Any

import gymnasium

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl

REQUIRES = {"nle": "nle==1.3.0", "minihack": "minihack==1.0.2", "pkg_resources": "pkg-resources-backport==1.0.1"}
OBSERVATION_KEYS = ("glyphs", "blstats", "message")

# MiniHack ids (checked against minihack's registry by the tests) so that `pufferbox envs`
# needs no minihack. solved_return: MiniHack pays 1 on success, minus small penalties.
NAVIGATION = (
    "Room-5x5",
    "Room-15x15",
    "Room-Random-5x5",
    "Room-Dark-5x5",
    "Room-Monster-5x5",
    "Room-Trap-5x5",
    "Room-Ultimate-5x5",
    "Corridor-R2",
    "Corridor-R3",
    "Corridor-R5",
    "KeyRoom-Fixed-S5",
    "KeyRoom-S5",
    "MazeWalk-9x9",
    "MazeWalk-15x15",
    "MultiRoom-N2",
    "MultiRoom-N4",
    "MultiRoom-N6",
    "River",
    "River-Narrow",
    "HideNSeek",
    "Memento-Short-F2",
    "CorridorBattle",
    "ExploreMaze-Easy",
    "Labyrinth-Small",
)
# Left out: LavaCrossingS9N1 and SimpleCrossingS9N1 are MiniGrid's crossing envs under MiniHack, and the
# pinned minigrid's constructor refuses the size arguments MiniHack passes (an AssertionError at build).
SKILLS = (
    "Eat",
    "Pray",
    "Sink",
    "Wield",
    "Wear",
    "PutOn",
    "Zap",
    "Read",
    "ClosedDoor",
    "LockedDoor",
    "Levitate-Boots-Restricted",
    "Freeze-Wand-Restricted",
    "LavaCross-Levitate-Potion-Inv-Restricted",
    "WoD-Easy-Restricted",
    "Quest-Easy",
)
SOLVED = {"Room-5x5": 0.9, "Room-Random-5x5": 0.9, "Corridor-R2": 0.9, "Eat": 0.9, "Wield": 0.9}

# The NetHack plugin's PPO settings with MiniHack's short episodes in mind (more envs,
# shorter training).
DEFAULTS = {
    "train": {
        "total_steps": 1_000_000,
        "learning_rate": 3e-4,
        "num_steps": 128,
        "ent_coef": 0.01,
        "gamma": 0.99,
        "update_epochs": 2,
        "num_minibatches": 4,
        "stop_on_solve": True,
    },
    "vec": {"num_envs": 16},
    "policy": {"hidden_size": 256},
}


def gym_id(task: str) -> str:
    return f"MiniHack-{task}-v0"


def env_name(task: str) -> str:
    """``"Room-5x5"`` → ``"minihack/room-5x5"``."""
    return f"minihack/{task.lower()}"


def make_minihack(
    gym_id: str, observation_keys: tuple[str, ...] = OBSERVATION_KEYS, render_mode: str | None = None, **kwargs: Any
) -> gymnasium.Env:
    """One MiniHack env showing ``observation_keys`` (``kwargs`` go to ``gymnasium.make``)."""
    import minihack  # noqa: F401 - registers the MiniHack-* ids; heavy and optional until used
    from pufferbox_nethack.env import TTY_KEYS, NetHackObservation

    if render_mode not in (None, "ansi"):
        raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
    keys = tuple(observation_keys)
    requested = keys + tuple(k for k in TTY_KEYS if k not in keys) if render_mode == "ansi" else keys
    env = gymnasium.make(gym_id, observation_keys=requested, **kwargs)
    return NetHackObservation(env, keys, render_mode)


@hookimpl
def register_envs(register):
    for kind, tasks in (("navigation", NAVIGATION), ("skill", SKILLS)):
        for task in tasks:
            register(
                EnvSpec(
                    name=env_name(task),
                    build=EnvBuild(binding=make_minihack, kwargs={"gym_id": gym_id(task)}),
                    training=TrainDefaults(
                        config=DEFAULTS, policy="pufferbox_nethack.policy:NetHackEncoder", solved_return=SOLVED.get(task)
                    ),
                    meta=EnvMeta(
                        description=f"MiniHack {kind} task {gym_id(task)} (nle 1.3.0): glyphs + stats + message",
                        requires=REQUIRES,
                    ),
                )
            )
