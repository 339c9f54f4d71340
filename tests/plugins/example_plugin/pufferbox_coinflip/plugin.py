"""Guess the coin that is shown: a minimal third-party pufferbox plugin."""

import gymnasium
import numpy as np
from gymnasium import spaces

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl


class CoinFlip(gymnasium.Env):
    """Each step shows a coin (0 or 1); reward 1 for naming it. Ten steps per episode."""

    def __init__(self, horizon: int = 10):
        self.horizon = horizon
        self.observation_space = spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random: all randomness comes from it
        self.tick = 0
        self.coin = int(self.np_random.integers(2))
        return np.array([self.coin], dtype=np.float32), {}

    def step(self, action):
        reward = 1.0 if int(action) == self.coin else 0.0
        self.tick += 1
        self.coin = int(self.np_random.integers(2))
        obs = np.array([self.coin], dtype=np.float32)
        return obs, reward, self.tick == self.horizon, False, {}


@hookimpl
def register_envs(register):
    register(
        EnvSpec(
            name="coinflip",
            build=EnvBuild(binding=CoinFlip),
            training=TrainDefaults(solved_return=9.0),
            meta=EnvMeta(description="Name the coin you are shown."),
        )
    )
