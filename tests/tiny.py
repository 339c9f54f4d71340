"""A tiny CartPole-shaped agent and a batch of segments for tests of the PPO update alone (no env)."""

from __future__ import annotations

import gymnasium
import numpy as np
import torch

from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.policies import Agent, MLPEncoder


def tiny_agent(seed: int = 0) -> Agent:
    """An MLP agent over 4 floats with 2 discrete actions, hidden size 8, seeded."""
    obs_spec = ObservationSpec(gymnasium.spaces.Box(-1, 1, (4,), np.float32))
    act_spec = ActionSpec(gymnasium.spaces.Discrete(2))
    torch.manual_seed(seed)
    return Agent(MLPEncoder(obs_spec, act_spec, hidden_size=8), act_spec)


def tiny_batch(segments: int = 3, horizon: int = 5) -> dict[str, torch.Tensor]:
    """``segments`` segments of ``horizon`` steps (+1 bootstrap) in the collectors' layout, reward 1 everywhere."""
    width = (segments, horizon + 1)
    return {
        "obs": torch.randn(*width, 4),
        "actions": torch.randint(0, 2, width),
        "logprobs": torch.full(width, -0.69),
        "values": torch.zeros(width),
        "rewards": torch.ones(width),
        "starts": torch.zeros(width, dtype=torch.bool),
        "masks": torch.ones(width, dtype=torch.bool),
    }
