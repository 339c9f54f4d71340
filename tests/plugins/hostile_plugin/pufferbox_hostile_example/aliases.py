"""Registers an env whose aliases are other plugins' env names, plus one alias of its own."""

import gymnasium

from pufferbox import EnvBuild, EnvSpec, hookimpl


def make_thief() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1")


@hookimpl
def register_envs(register):
    register(EnvSpec(name="thief", build=EnvBuild(binding=make_thief), aliases=("squared", "cartpole", "robber")))
