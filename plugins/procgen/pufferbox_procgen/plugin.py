"""Registers ``procgen/<game>`` for the 16 Procgen games (``procgen-mirror==0.10.7``).

Each env has a single-env Gymnasium binding (:class:`~pufferbox_procgen.envs.ProcgenEnv`)
and a native batched block (:class:`~pufferbox_procgen.envs.ProcgenBlock`, one gym3 env
simulating all ``num_envs`` games in C++), which the vector backends use by default.
Keyword arguments: ``distribution_mode`` (easy (default), hard, extreme, memory,
exploration; not every game has every mode), ``start_level``, ``num_levels`` (0: unlimited).

procgen is imported when an env is made, never by this module, so without it the envs
are listed as unavailable with the install command.

Example:
    >>> from pufferbox.vector import make                                  # doctest: +SKIP
    >>> venv = make("procgen/bigfish", num_envs=64, env_kwargs={"distribution_mode": "hard"})  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl
from pufferbox_procgen.envs import GAMES, ProcgenBlock, ProcgenEnv

REQUIRES = {"procgen": "procgen-mirror==0.10.7", "gym3": "gym3==0.3.3"}

DEFAULTS = {
    "env": {"distribution_mode": "easy"},
    "train": {
        "total_steps": 25_000_000,
        "learning_rate": 5e-4,
        # 3 epochs of 2,048-sample minibatches cost 2x these per sample on a 2-core CPU (RESULTS.md,
        # "Procgen bigfish against CleanRL"); 64-step rollouts give several updates in a CPU budget.
        "num_steps": 64,
        "gamma": 0.999,
        "gae_lambda": 0.95,
        "ent_coef": 0.01,
        "update_epochs": 2,
        "num_minibatches": 16,
        "clip_coef": 0.2,
        "autocast": "auto",  # the IMPALA ResNet's convs are most of the update: bf16 where it is native
    },
    "vec": {"num_envs": 64},
    "policy": {"hidden_size": 256},
}
# The GPU profile (checked on the GPU run: 25M Procgen steps do not fit a 2-core machine). The Procgen
# paper's PPO, which ran on GPUs: 16,384 rows per update in 8 minibatches of 2,048, three epochs, at the
# defaults' rate, gamma and lambda; here as 256 envs (spread over the workers the machine has cores for)
# x the defaults' 64 steps instead of 64 x 256, so 15 workers each step a share.
GPU_CONFIG = {"train": {"num_steps": 64, "update_epochs": 3, "num_minibatches": 8}, "vec": {"num_envs": 256}}


def make_procgen(game: str, **kwargs: Any) -> ProcgenEnv:
    """One Procgen game as a Gymnasium env (see :class:`ProcgenEnv` for the keyword arguments)."""
    return ProcgenEnv(game, **kwargs)


@hookimpl
def register_envs(register):
    for game in GAMES:
        register(
            EnvSpec(
                name=f"procgen/{game}",
                build=EnvBuild(
                    binding=make_procgen,
                    kwargs={"game": game},
                    native=ProcgenBlock,
                    episode_metrics=("prev_level_complete",),
                ),
                training=TrainDefaults(
                    config=DEFAULTS, gpu_config=GPU_CONFIG, policy="pufferbox_procgen.policy:ImpalaResNet"
                ),
                meta=EnvMeta(
                    description=f"Procgen {game}: 64x64 RGB, 15 actions, procedurally generated levels (gym3, batched)",
                    requires=REQUIRES,
                ),
            )
        )
