"""Registers the NLE task family: ``nethack`` (NetHackScore-v0) and ``nethack/<task>``.

The env itself is :func:`pufferbox_nethack.env.make_nethack` (observation, rendering, seeding);
this module names the tasks, their training defaults and the policy.

Vector envs of every task but ``challenge`` default to the native block of
:mod:`pufferbox_nethack.native` (the nle cores stepped without the gym env's Python, bit for
bit with it); ``native=False`` steps the gym env through the emulator instead.
"""

from __future__ import annotations

from typing import Any

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl
from pufferbox_nethack.env import (  # noqa: F401 - re-exported: minihack's plugin, tests and benchmarks use them
    NATIVE_TASKS,
    OBSERVATION_KEYS,
    TASKS,
    TTY_KEYS,
    NetHackObservation,
    make_nethack,
)

REQUIRES = {"nle": "nle==1.3.0"}
DEFAULTS = {
    "train": {
        "total_steps": 200_000,
        "learning_rate": 3e-4,
        # PufferLib's NetHack batch shape scaled to a small machine (16 envs x 64 steps, one epoch of
        # 4 minibatches): half the update of 8 x 128 x 2 epochs per step; RESULTS.md, "Return at 1M steps"
        "num_steps": 64,
        "ent_coef": 0.01,
        "gamma": 0.99,
        "update_epochs": 1,
        "num_minibatches": 4,
        "autocast": "auto",  # bf16 where native: 1.15x the whole step on an AVX512-BF16 CPU, same return at 1M
    },
    "vec": {"num_envs": 16},
    "policy": {"hidden_size": 256},
}
# The GPU profile (checked on the GPU run: NLE steps a few thousand times per second per core, too slow to
# train to a score here). PufferLib's NetHack shape at GPU scale: 512 envs over the workers the machine
# has cores for (525 on 16 cores: 15 workers), the defaults' 64-step horizon, one epoch over four
# minibatches of about 8,400 rows (33,600 rows per update). One epoch because the envs, not the update,
# are the cost: the GPU's pass over 33k rows takes a fraction of the ~0.5 s the workers need to step them.
GPU_CONFIG = {"train": {"num_steps": 64, "update_epochs": 1, "num_minibatches": 4}, "vec": {"num_envs": 512}}


def make_native(num_envs: int, **kwargs: Any) -> Any:
    """The ``native=`` entry: a :class:`pufferbox_nethack.native.NetHackNative` block (nle imported on use)."""
    from pufferbox_nethack.native import NetHackNative

    return NetHackNative(num_envs, **kwargs)


@hookimpl
def register_envs(register):
    for task, gym_id in TASKS.items():
        register(
            EnvSpec(
                name="nethack" if task == "score" else f"nethack/{task}",
                build=EnvBuild(
                    binding=make_nethack,
                    kwargs={"task": task},
                    native=make_native if task in NATIVE_TASKS else None,
                    episode_metrics=("end_status", "is_ascended"),
                ),
                training=TrainDefaults(
                    config=DEFAULTS, gpu_config=GPU_CONFIG, policy="pufferbox_nethack.policy:NetHackEncoder"
                ),
                meta=EnvMeta(
                    description=f"NetHack ({gym_id}, nle 1.3.0): glyphs + bottom-line stats + message", requires=REQUIRES
                ),
                aliases=("nethack/score",) if task == "score" else (),
            )
        )
