"""Registers Gymnasium's classic control and Box2D envs.

Classic control (no extra package): ``cartpole`` (``CartPole-v1``, with a compiled native
block), ``acrobot`` (``Acrobot-v1``), ``mountaincar`` (``MountainCar-v0``),
``mountaincar_continuous`` (``MountainCarContinuous-v0``), ``pendulum`` (``Pendulum-v1``).
Box2D (needs ``Box2D``, imported by Gymnasium only when one is made): ``lunarlander``
(``LunarLander-v3``), ``lunarlander_continuous`` (``LunarLander-v3`` with
``continuous=True``), ``bipedalwalker`` (``BipedalWalker-v3``; ``env.hardcore=true`` for
the hardcore course).

Each env's training defaults follow RL-Baselines3-Zoo's tuned PPO settings (its minibatch
of 64 rows as ``num_minibatches``; fewer envs where the Zoo uses many; ``normalize: true`` as
``train.norm_obs``/``norm_reward``); ``solved_return`` is Gymnasium's
``reward_threshold`` where it has one (Pendulum has none: -200 is the customary bar).

Example:
    >>> env = make_classic("Acrobot-v1")
    >>> env.spec.id
    'Acrobot-v1'
"""

from __future__ import annotations

import gymnasium

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl
from pufferbox_classic.native import make_cartpole_native

BOX2D_REQUIRES = {"Box2D": "Box2D==2.3.10"}


def make_cartpole(**kwargs) -> gymnasium.Env:
    return gymnasium.make("CartPole-v1", **kwargs)


def make_classic(gym_id: str, **kwargs) -> gymnasium.Env:
    """``gymnasium.make(gym_id, **kwargs)``: the binding of every env here but CartPole."""
    return gymnasium.make(gym_id, **kwargs)


def ppo(total_steps: int, num_envs: int, **train: object) -> dict:
    """A defaults table: ``train`` keys plus ``total_steps``, ``num_envs`` and solve-stopping."""
    return {"train": {"total_steps": total_steps, "stop_on_solve": True, **train}, "vec": {"num_envs": num_envs}}


# (name, gym id, kwargs, solved_return, requires, defaults, description)
CLASSIC = (
    (
        "acrobot",
        "Acrobot-v1",
        {},
        -100.0,
        {},
        ppo(
            500_000,
            16,
            num_steps=256,
            gamma=0.99,
            gae_lambda=0.94,
            update_epochs=4,
            ent_coef=0.0,
            num_minibatches=64,
            learning_rate=1e-3,
            norm_obs=True,
            norm_reward=True,
        ),
        "Swing a two-link pendulum's tip above a line (Gymnasium Acrobot-v1).",
    ),
    (
        "mountaincar",
        "MountainCar-v0",
        {},
        -110.0,
        {},
        ppo(
            1_000_000,
            16,
            num_steps=16,
            gamma=0.99,
            gae_lambda=0.98,
            update_epochs=4,
            ent_coef=0.0,
            norm_obs=True,
            norm_reward=True,
        ),
        "Drive an underpowered car up a hill, discrete pushes (Gymnasium MountainCar-v0).",
    ),
    (
        "mountaincar_continuous",
        "MountainCarContinuous-v0",
        {},
        90.0,
        {},
        ppo(
            200_000,
            8,
            num_steps=64,
            gamma=0.9999,
            gae_lambda=0.9,
            update_epochs=10,
            ent_coef=0.00429,
            num_minibatches=2,
            learning_rate=7.77e-5,
            clip_coef=0.1,
            max_grad_norm=5.0,
            vf_coef=0.19,
            norm_obs=True,
            norm_reward=True,
        ),
        "Drive an underpowered car up a hill, continuous force (Gymnasium MountainCarContinuous-v0).",
    ),
    (
        "pendulum",
        "Pendulum-v1",
        {},
        -200.0,
        {},
        ppo(
            200_000,
            4,
            num_steps=1024,
            gamma=0.9,
            gae_lambda=0.95,
            update_epochs=10,
            ent_coef=0.0,
            learning_rate=1e-3,
            num_minibatches=64,
        ),
        "Swing up and balance a pendulum, continuous torque (Gymnasium Pendulum-v1).",
    ),
    (
        "lunarlander",
        "LunarLander-v3",
        {},
        200.0,
        BOX2D_REQUIRES,
        ppo(
            1_000_000,
            16,
            num_steps=1024,
            gamma=0.999,
            gae_lambda=0.98,
            update_epochs=4,
            ent_coef=0.01,
            num_minibatches=256,
            learning_rate=3e-4,
            # RL-Zoo reaches 200 without normalization using separate actor and critic networks; on
            # pufferbox's shared trunk the unnormalized returns (hundreds) let the value loss swamp the
            # policy's gradient: 88 at 1M steps without, solved at 524k with (RESULTS.md)
            norm_obs=True,
            norm_reward=True,
        ),
        "Land a lander on the pad, discrete engines (Gymnasium LunarLander-v3, Box2D).",
    ),
    (
        "lunarlander_continuous",
        "LunarLander-v3",
        {"continuous": True},
        200.0,
        BOX2D_REQUIRES,
        ppo(
            1_000_000,
            16,
            num_steps=1024,
            gamma=0.999,
            gae_lambda=0.98,
            update_epochs=4,
            ent_coef=0.01,
            num_minibatches=256,
            learning_rate=3e-4,
        ),
        "Land a lander on the pad, continuous throttles (Gymnasium LunarLander-v3 continuous, Box2D).",
    ),
    (
        "bipedalwalker",
        "BipedalWalker-v3",
        {},
        300.0,
        BOX2D_REQUIRES,
        ppo(
            5_000_000,
            16,
            num_steps=2048,
            gamma=0.999,
            gae_lambda=0.95,
            update_epochs=10,
            ent_coef=0.001,
            num_minibatches=512,
            learning_rate=2.5e-4,
            norm_obs=True,
            norm_reward=True,
        ),
        "Walk a 2D biped over rough terrain, continuous torques (Gymnasium BipedalWalker-v3, Box2D).",
    ),
)


@hookimpl
def register_envs(register):
    register(
        EnvSpec(
            name="cartpole",
            build=EnvBuild(binding=make_cartpole, native=make_cartpole_native),
            training=TrainDefaults(
                # Tuned for time-to-solve on 2 CPU cores (benchmarks/bench_train_cartpole.py): short
                # rollouts over many native envs, RL-Zoo's gamma/lambda, a high learning rate.
                config={
                    "train": {
                        "total_steps": 500_000,
                        "num_steps": 32,
                        "learning_rate": 3e-3,
                        "update_epochs": 6,
                        "num_minibatches": 2,
                        "gamma": 0.98,
                        "gae_lambda": 0.8,
                        "ent_coef": 0.0,
                        "stop_on_solve": True,
                    },
                    "vec": {"num_envs": 64},
                },
                # The GPU profile: 131,072 rows per update (2,048 envs x 64 steps), four epochs over eight
                # minibatches of 16,384 at the defaults' rate: solves within 100 updates
                # (benchmarks/gpu_profiles.py; RESULTS.md, "GPU profiles")
                gpu_config={
                    "train": {"total_steps": 100 * 131_072, "num_steps": 64, "update_epochs": 4, "num_minibatches": 8},
                    "vec": {"num_envs": 2048},
                },
                solved_return=475.0,
            ),
            meta=EnvMeta(description="Balance a pole on a cart (Gymnasium CartPole-v1)."),
        )
    )
    for name, gym_id, kwargs, solved, requires, defaults, description in CLASSIC:
        register(
            EnvSpec(
                name=name,
                build=EnvBuild(binding=make_classic, kwargs={"gym_id": gym_id, **kwargs}),
                training=TrainDefaults(config=defaults, solved_return=solved),
                meta=EnvMeta(description=description, requires=requires),
            )
        )
