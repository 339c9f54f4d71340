"""The default NetHack encoder: glyph embeddings + a small CNN over the map, an MLP over
the bottom-line stats, and a byte-level convolution over the message line.

Example:
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ObservationSpec, ActionSpec
    >>> obs = ObservationSpec(spaces.Dict({
    ...     "glyphs": spaces.Box(0, 5976, (21, 79), np.int16),
    ...     "blstats": spaces.Box(-2**31, 2**31 - 1, (27,), np.int64),
    ...     "message": spaces.Box(0, 255, (256,), np.uint8)}))
    >>> enc = NetHackEncoder(obs, ActionSpec(spaces.Discrete(23)), hidden_size=128)
    >>> enc(torch.zeros(3, obs.flat_size, dtype=torch.uint8)).shape
    torch.Size([3, 128])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from pufferbox.api import ActionSpec, ObservationSpec

GLYPH_DIM = 16
MAP_CHANNELS = 32
CHAR_DIM = 16
MESSAGE_CHANNELS = 32
STATS_HIDDEN = 64


class NetHackEncoder(nn.Module):
    """Encodes ``{"glyphs", "blstats", "message"}`` into ``hidden_size`` features."""

    def __init__(self, obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 256, **kwargs: Any):
        super().__init__()
        space = obs_spec.space
        missing = {"glyphs", "blstats", "message"} - set(getattr(space, "spaces", {}))
        if missing:
            raise ValueError(
                f"NetHackEncoder needs observation keys glyphs, blstats and message; "
                f"{', '.join(sorted(missing))} missing from {space}"
            )
        self.obs_spec = obs_spec
        obs_spec.torch_layout()  # precomputed so forward() stays free of graph breaks
        self.hidden_size = hidden_size
        self.keys = [leaf.path[0] for leaf in obs_spec.leaves]
        num_glyphs = int(np.max(space["glyphs"].high)) + 1
        rows, cols = space["glyphs"].shape
        stats = int(np.prod(space["blstats"].shape))

        self.glyph_embedding = nn.Embedding(num_glyphs, GLYPH_DIM)
        # Strided from the first layer: a full-resolution 21x79 conv made this encoder, not
        # NetHack, the bottleneck of CPU training (4x the multiply-adds for little gain).
        self.map_cnn = nn.Sequential(
            nn.Conv2d(GLYPH_DIM, MAP_CHANNELS, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(MAP_CHANNELS, MAP_CHANNELS, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            map_out = self.map_cnn(torch.zeros(1, GLYPH_DIM, rows, cols)).shape[1]
        self.stats_mlp = nn.Sequential(
            nn.Linear(stats, STATS_HIDDEN), nn.ReLU(), nn.Linear(STATS_HIDDEN, STATS_HIDDEN), nn.ReLU()
        )
        self.char_embedding = nn.Embedding(256, CHAR_DIM, padding_idx=0)
        self.message_cnn = nn.Sequential(nn.Conv1d(CHAR_DIM, MESSAGE_CHANNELS, 8, stride=4), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(map_out + STATS_HIDDEN + MESSAGE_CHANNELS, hidden_size), nn.ReLU())

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        obs = self.obs_spec.unflatten_torch(flat_obs)
        glyphs = self.glyph_embedding(obs["glyphs"].long()).permute(0, 3, 1, 2)
        map_features = self.map_cnn(glyphs)
        stats = obs["blstats"].float()
        # Stats span 0..1e6 (score, turn counter): a signed log keeps them in a trainable range.
        stats_features = self.stats_mlp(torch.sign(stats) * torch.log1p(stats.abs()))
        chars = self.char_embedding(obs["message"].long()).transpose(1, 2)
        message_features = self.message_cnn(chars).amax(dim=2)
        return self.head(torch.cat([map_features, stats_features, message_features], dim=1))
