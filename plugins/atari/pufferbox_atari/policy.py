"""NatureCNN (Mnih et al. 2015): the default Atari encoder.

Example:
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ObservationSpec, ActionSpec
    >>> obs = ObservationSpec(spaces.Box(0, 255, (4, 84, 84), np.uint8))
    >>> enc = NatureCNN(obs, ActionSpec(spaces.Discrete(4)), hidden_size=512)
    >>> enc(torch.zeros(2, obs.flat_size, dtype=torch.uint8)).shape
    torch.Size([2, 512])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from pufferbox.spaces import ActionSpec, ObservationSpec


def layer_init(layer: nn.Module, std: float = float(np.sqrt(2)), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class NatureCNN(nn.Module):
    """Three conv layers and a linear layer over stacked ``uint8`` frames scaled to [0, 1]."""

    def __init__(self, obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 512, **kwargs: Any):
        super().__init__()
        self.obs_spec = obs_spec
        obs_spec.torch_layout()  # precomputed so forward() stays free of graph breaks
        shape = obs_spec.leaves[0].shape
        if len(obs_spec.leaves) != 1 or len(shape) != 3:
            raise ValueError(f"NatureCNN needs one (frames, height, width) image observation, got {obs_spec.space}")
        self.hidden_size = hidden_size
        self.conv = nn.Sequential(
            layer_init(nn.Conv2d(shape[0], 32, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            conv_out = self.conv(torch.zeros(1, *shape)).shape[1]
        self.fc = nn.Sequential(layer_init(nn.Linear(conv_out, hidden_size)), nn.ReLU())

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        frames = self.obs_spec.unflatten_torch(flat_obs)
        return self.fc(self.conv(frames.float() / 255.0))
