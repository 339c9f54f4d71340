"""Encoders for Ocean games whose observations a flat MLP reads poorly.

``FlockRadar`` reads a flock listed by index (``ocean/boids_all``: every boid's offset and relative
velocity, 4 floats each): a neighbour lands on different inputs for every index, which a flat MLP does
not learn from. The radar counts the boids per direction and distance ring instead, the same numbers
for any order of the list, and adds their mean relative velocity, near and overall.

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> from pufferbox.api import ActionSpec, ObservationSpec
    >>> obs = ObservationSpec(spaces.Box(-2.0, 2.0, (256,), np.float32))
    >>> radar = FlockRadar(obs, ActionSpec(spaces.MultiDiscrete([5, 5])), hidden_size=128)
    >>> radar(torch.zeros(3, 256)).shape
    torch.Size([3, 128])
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from pufferbox.api import ActionSpec, ObservationSpec, layer_init

SECTORS = 8  # directions, 45 degrees each
# ring edges in the observation's units (offset / arena size): on boids_all's default 1080 x 720 arena,
# 0.1 is 108 pixels across and 72 down, about its protected range of 100
RINGS = (0.05, 0.1, 0.2)


class FlockRadar(nn.Module):
    """A flock seen as ``(dx, dy, dvx, dvy)`` per boid (a zero row is the boid itself): counts per
    direction and ring, mean relative velocity, then two tanh layers."""

    def __init__(self, obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 128, **kwargs: Any):
        super().__init__()
        if not obs_spec.is_leaf or obs_spec.flat_size % 4:
            raise ValueError(f"FlockRadar needs one Box of 4 floats per boid, got {obs_spec.space}")
        self.obs_spec = obs_spec
        self.hidden_size = hidden_size
        self.register_buffer("edges", torch.tensor(RINGS), persistent=False)
        self.cells = SECTORS * (len(RINGS) + 1)
        self.net = nn.Sequential(
            layer_init(nn.Linear(self.cells + 4, hidden_size)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden_size, hidden_size)),
            nn.Tanh(),
        )

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        seen = flat_obs.float().reshape(flat_obs.shape[0], -1, 4)
        dx, dy = seen[..., 0], seen[..., 1]
        r = torch.sqrt(dx * dx + dy * dy)
        other = (r > 0).float()  # the boid itself sits at 0
        sector = ((torch.atan2(dy, dx) + math.pi) * (SECTORS / (2 * math.pi))).long().clamp(0, SECTORS - 1)
        cell = sector * (len(RINGS) + 1) + torch.bucketize(r, self.edges)
        counts = torch.zeros(seen.shape[0], self.cells, device=seen.device).scatter_add_(1, cell, other)
        near = other * (r < self.edges[-1]).float()
        velocity_near = (seen[..., 2:] * near.unsqueeze(-1)).sum(1) / near.sum(1, keepdim=True).clamp(min=1.0)
        return self.net(torch.cat([counts / 8.0, velocity_near, seen[..., 2:].mean(1)], dim=-1))
