"""Registers ``cartpole`` (Gymnasium ``CartPole-v1``)."""

from __future__ import annotations

import gymnasium

from pufferbox import EnvSpec, hookimpl
from pufferbox_classic.native import make_cartpole_native


def make_cartpole(**kwargs) -> gymnasium.Env:
    return gymnasium.make("CartPole-v1", **kwargs)


@hookimpl
def register_envs(register):
    register(EnvSpec(
        name="cartpole",
        binding=make_cartpole,
        native=make_cartpole_native,
        description="Balance a pole on a cart (Gymnasium CartPole-v1).",
        solved_return=475.0,
        # Tuned for time-to-solve on 2 CPU cores (benchmarks/bench_train_cartpole.py): short
        # rollouts over many native envs, RL-Zoo's gamma/lambda, a high learning rate.
        defaults={
            "train": {"total_steps": 500_000, "num_steps": 32, "learning_rate": 3e-3, "update_epochs": 6,
                      "num_minibatches": 2, "gamma": 0.98, "gae_lambda": 0.8, "ent_coef": 0.0,
                      "stop_on_solve": True},
            "vec": {"num_envs": 64},
        },
    ))
