"""The IMPALA ResNet encoder (Espeholt et al. 2018), the usual Procgen baseline.

Example:
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ObservationSpec, ActionSpec
    >>> obs = ObservationSpec(spaces.Box(0, 255, (64, 64, 3), np.uint8))
    >>> enc = ImpalaResNet(obs, ActionSpec(spaces.Discrete(15)), hidden_size=256)
    >>> enc(torch.zeros(2, obs.flat_size, dtype=torch.uint8)).shape
    torch.Size([2, 256])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pufferbox.api import ActionSpec, ObservationSpec


class ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


class ConvSequence(nn.Module):
    """Conv, 3x3 max-pool with stride 2, two residual blocks: halves height and width."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.res0, self.res1 = ResidualBlock(out_channels), ResidualBlock(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.res1(self.res0(self.pool(self.conv(x))))


class ImpalaResNet(nn.Module):
    """Three conv sequences (16, 32, 32 channels) over ``uint8[H, W, C]`` frames scaled to [0, 1]."""

    def __init__(
        self,
        obs_spec: ObservationSpec,
        act_spec: ActionSpec,
        hidden_size: int = 256,
        channels: tuple[int, ...] = (16, 32, 32),
        **kwargs: Any,
    ):
        super().__init__()
        self.obs_spec = obs_spec
        obs_spec.torch_layout()  # precomputed so forward() stays free of graph breaks
        shape = obs_spec.leaves[0].shape
        if len(obs_spec.leaves) != 1 or len(shape) != 3:
            raise ValueError(f"ImpalaResNet needs one (height, width, channels) image, got {obs_spec.space}")
        self.hidden_size = hidden_size
        layers, in_channels = [], shape[2]
        for out_channels in channels:
            layers.append(ConvSequence(in_channels, out_channels))
            in_channels = out_channels
        self.body = nn.Sequential(*layers, nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            body_out = self.body(torch.zeros(1, shape[2], shape[0], shape[1])).shape[1]
        self.fc = nn.Sequential(nn.Linear(body_out, hidden_size), nn.ReLU())

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        frames = self.obs_spec.unflatten_torch(flat_obs)
        x = frames.permute(0, 3, 1, 2).float() / 255.0
        return self.fc(self.body(x))
