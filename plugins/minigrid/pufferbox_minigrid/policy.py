"""The default MiniGrid/BabyAI encoder: embedded grid cells through a small CNN, the
mission's bytes through an embedding and a 1-D convolution, the direction one-hot.

Grid cells are ids, not intensities: each of the three channels (object, colour, state)
gets its own embedding table and the three vectors are summed per cell (BabyAI's
"bag of words" cell encoding), so a door and a key are not "close" because their ids are.

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ObservationSpec, ActionSpec
    >>> obs = ObservationSpec(spaces.Dict({"image": spaces.Box(0, 255, (7, 7, 3), np.uint8),
    ...                                    "direction": spaces.Discrete(4),
    ...                                    "mission": spaces.Box(0, 255, (160,), np.uint8)}))
    >>> enc = MiniGridEncoder(obs, ActionSpec(spaces.Discrete(7)), hidden_size=64)
    >>> enc(torch.zeros(3, obs.flat_size, dtype=torch.uint8)).shape
    torch.Size([3, 64])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pufferbox.api import ActionSpec, ObservationSpec

CELL_IDS = 32  # per channel; MiniGrid uses 0..10 (objects), 0..5 (colours), 0..2 (states)
CELL_DIM = 16
GRID_CHANNELS = 32
CHAR_DIM = 16
MISSION_CHANNELS = 64


class MiniGridEncoder(nn.Module):
    """Encodes ``{"image", "direction", "mission"}`` into ``hidden_size`` features."""

    def __init__(self, obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 128, **kwargs: Any):
        super().__init__()
        space = obs_spec.space
        missing = {"image", "direction", "mission"} - set(getattr(space, "spaces", {}))
        if missing:
            raise ValueError(
                f"MiniGridEncoder needs observation keys image, direction and mission; "
                f"{', '.join(sorted(missing))} missing from {space}"
            )
        self.obs_spec = obs_spec
        obs_spec.torch_layout()  # precomputed so forward() stays free of graph breaks
        self.hidden_size = hidden_size
        rows, cols, channels = space["image"].shape
        self.directions = int(space["direction"].n)
        self.cell_embedding = nn.Embedding(channels * CELL_IDS, CELL_DIM)
        self.register_buffer("channel_offset", torch.arange(channels) * CELL_IDS, persistent=False)
        self.grid_cnn = nn.Sequential(
            nn.Conv2d(CELL_DIM, GRID_CHANNELS, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(GRID_CHANNELS, GRID_CHANNELS, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            grid_out = self.grid_cnn(torch.zeros(1, CELL_DIM, rows, cols)).shape[1]
        self.char_embedding = nn.Embedding(256, CHAR_DIM, padding_idx=0)
        self.mission_cnn = nn.Sequential(nn.Conv1d(CHAR_DIM, MISSION_CHANNELS, 6, stride=2), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(grid_out + MISSION_CHANNELS + self.directions, hidden_size), nn.ReLU())

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        obs = self.obs_spec.unflatten_torch(flat_obs)
        cells = obs["image"].long().clamp(0, CELL_IDS - 1) + self.channel_offset
        grid = self.cell_embedding(cells).sum(dim=3).permute(0, 3, 1, 2)  # (B, CELL_DIM, rows, cols)
        chars = self.char_embedding(obs["mission"].long()).transpose(1, 2)
        mission = self.mission_cnn(chars).amax(dim=2)
        direction = nn.functional.one_hot(obs["direction"].long().reshape(-1), self.directions).float()
        return self.head(torch.cat([self.grid_cnn(grid), mission, direction], dim=1))
