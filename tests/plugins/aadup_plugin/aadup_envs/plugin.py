"""Offers ``cartpole`` (alias ``acrobot``), clashing with pufferbox-classic, and its own ``aadup/coin`` (alias ``coin``)."""

import gymnasium

from pufferbox import EnvBuild, EnvSpec, hookimpl


def make_cartpole() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1", max_episode_steps=5)  # episodes of 5 steps at most: tells it from classic's


def make_coin() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1", max_episode_steps=10)


@hookimpl
def register_envs(register):
    register(EnvSpec(name="cartpole", build=EnvBuild(binding=make_cartpole), aliases=("acrobot",)))
    register(EnvSpec(name="aadup/coin", build=EnvBuild(binding=make_coin), aliases=("coin",)))
