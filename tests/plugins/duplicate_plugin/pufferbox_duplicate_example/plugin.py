"""Registers ``cartpole`` a second time: loading it next to pufferbox-classic must fail loudly."""

import gymnasium

from pufferbox import EnvBuild, EnvSpec, hookimpl


def make_cartpole() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1")


@hookimpl
def register_envs(register):
    register(EnvSpec(name="cartpole", build=EnvBuild(binding=make_cartpole)))
