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
        defaults={"train": {"total_steps": 200_000}},
    ))
