"""Registers ``cartpole`` a second time: loading it next to pufferbox-classic must fail loudly."""

import gymnasium

from pufferbox import EnvSpec, hookimpl


def make_cartpole() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1")


@hookimpl
def register_envs(register):
    register(EnvSpec(name="cartpole", binding=make_cartpole))
