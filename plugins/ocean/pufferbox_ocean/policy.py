"""Encoders for Ocean games whose observations a flat MLP reads poorly.

``FlockRadar`` reads a flock listed by index (``ocean/boids_all``: every boid's offset and relative
velocity, 4 floats each): a neighbour lands on different inputs for every index, which a flat MLP does
not learn from. The radar counts the boids per direction and distance ring instead, the same numbers
for any order of the list, and adds their mean relative velocity, near and overall.

``PlacementPointer`` reads ``ocean/tetris`` with its ``placements``: it scores every placement from
what its drop would do (one small network shared by all 40), points at them with a softmax over those
that fit, and says where the pointed-at placements lie from the falling piece (a turn away, left,
here or right); the heads learn which key takes the piece there. A flat MLP would have to learn an
argmax over 40 placements and a comparison of columns from one layer of numbers.

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
from pufferbox_ocean.games import tetris

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


# where tetris's observation keeps the falling piece's rotation and its placements
TETRIS_ROTATION = 2 * tetris.CELLS + 7
TETRIS_PLACES = 2 * tetris.CELLS + 20
TETRIS_COLUMN = TETRIS_PLACES + (1 + tetris.FEATURES) * tetris.PLACEMENTS
WAYS = 6  # a placement one, two or three turns away; or at this rotation, left of, at or right of the piece


def placement_ways() -> torch.Tensor:
    """(rotation, column, placement) -> which way the placement lies from a piece at that rotation and
    leftmost column."""
    ways = torch.zeros(4, tetris.W, tetris.PLACEMENTS, dtype=torch.long)
    for rot in range(4):
        for column in range(tetris.W):
            for a in range(tetris.PLACEMENTS):
                turns, to = (a // tetris.W - rot) % 4, a % tetris.W
                ways[rot, column, a] = turns - 1 if turns else 4 + (to > column) - (to < column)
    return ways


class PlacementPointer(nn.Module):
    """Tetris moves from its placements: a shared scorer per placement, a softmax over the legal ones,
    the pointed-at share of each way from the piece (and its log), the expected score, and a tanh trunk
    over the board and the pieces' types, rotation and position."""

    def __init__(self, obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 128, **kwargs: Any):
        super().__init__()
        if not obs_spec.is_leaf or obs_spec.flat_size != tetris.OBS:
            raise ValueError(f"PlacementPointer reads ocean/tetris's {tetris.OBS} floats, got {obs_spec.space}")
        if hidden_size <= 2 * WAYS + 1:
            raise ValueError(f"PlacementPointer needs hidden_size > {2 * WAYS + 1}, got {hidden_size}")
        self.obs_spec = obs_spec
        self.hidden_size = hidden_size
        self.register_buffer("ways", placement_ways(), persistent=False)
        self.scorer = nn.Sequential(
            layer_init(nn.Linear(tetris.FEATURES, 32)), nn.ReLU(), layer_init(nn.Linear(32, 1), std=0.1)
        )
        width = hidden_size - 2 * WAYS - 1
        self.trunk = nn.Sequential(  # the board and the pieces (the falling piece's cells add nothing to them)
            layer_init(nn.Linear(tetris.CELLS + 20, width)), nn.Tanh(), layer_init(nn.Linear(width, width)), nn.Tanh()
        )

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        obs = flat_obs.float()
        n, places = obs.shape[0], tetris.PLACEMENTS
        mask = obs[:, TETRIS_PLACES : TETRIS_PLACES + places] > 0
        features = obs[:, TETRIS_PLACES + places : TETRIS_COLUMN].reshape(n, tetris.FEATURES, places)
        score = self.scorer(features.transpose(1, 2)).squeeze(-1)
        point = torch.softmax(score.masked_fill(~mask, -1e9), dim=-1)  # all masked (placements off): uniform
        rot = obs[:, TETRIS_ROTATION : TETRIS_ROTATION + 4].argmax(1)
        column = obs[:, TETRIS_COLUMN : TETRIS_COLUMN + tetris.W].argmax(1)
        way = self.ways[rot, column]
        share = torch.zeros(n, WAYS, device=obs.device).scatter_add_(1, way, point)
        expected = (point * score).sum(1, keepdim=True)
        board = torch.cat([obs[:, : tetris.CELLS], obs[:, 2 * tetris.CELLS : TETRIS_PLACES]], dim=1)
        return torch.cat([self.trunk(board), share, torch.log(share + 1e-4) / 4, expected], dim=-1)
