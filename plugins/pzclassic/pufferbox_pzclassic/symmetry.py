"""Board-game policies that play every symmetric image of a position alike.

Tic-tac-toe's board has eight symmetries (four rotations, each mirrored) and connect four's two (the
mirror across the middle column). A policy that sees each position through all its images trains a rare
position, and its images, with every visit to any of them, and cannot play two images of one position
differently: :class:`SymmetricBoard` runs one MLP (:class:`pufferbox.api.MLPEncoder`) on each image of the
observation, and its output layers score each image's moves, map them back to the real board's moves and
average them (the value too). The agent's policy is then equivariant by construction, not by augmentation.

Used through the encoder contract's ``output_layers`` (``pufferbox.encoders``): the trainer's agent takes
its action and value layers from the encoder. ``--set policy.encoder=\"mlp\"`` trains the plain MLP instead.

Example:
    >>> import gymnasium, numpy as np, torch
    >>> from pufferbox.spaces import ActionSpec, ObservationSpec
    >>> board, mask = gymnasium.spaces.Box(0, 1, (3, 3, 2), np.int8), gymnasium.spaces.Box(0, 1, (9,), np.int8)
    >>> obs = ObservationSpec(gymnasium.spaces.Dict({"observation": board, "action_mask": mask}))
    >>> policy = TicTacToePolicy(obs, ActionSpec(gymnasium.spaces.Discrete(9)), hidden_size=16)
    >>> policy(torch.zeros(5, obs.flat_size)).shape, policy.hidden_size  # 8 images of 16 features each
    (torch.Size([5, 128]), 128)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from pufferbox.api import MLPEncoder, layer_init


def tictactoe_images() -> list[tuple[np.ndarray, np.ndarray]]:
    """The 3x3 board's eight symmetries, each ``(cells, moves)``: image cell ``p`` shows real cell ``cells[p]``,
    and the image's move ``p`` is the real move ``moves[p]`` (a move marks the cell of the same number)."""
    grid = np.arange(9).reshape(3, 3)
    images = []
    for turns in range(4):
        for flip in (False, True):
            image = np.rot90(grid, turns)
            image = image[:, ::-1] if flip else image
            images.append((image.ravel().copy(), image.ravel().copy()))
    return images


def connect_four_images() -> list[tuple[np.ndarray, np.ndarray]]:
    """Connect four's board (6x7) as it is and mirrored; a move is a column."""
    grid = np.arange(42).reshape(6, 7)
    return [(grid.ravel(), np.arange(7)), (grid[:, ::-1].ravel().copy(), np.arange(7)[::-1].copy())]


def leaf_units(obs_spec: Any, key: str) -> np.ndarray:
    """The flat row's positions of leaf ``key``: an int array of the leaf's shape plus one axis for the
    units each element takes in the row (1 when all leaves share a dtype)."""
    leaf = next(leaf for leaf in obs_spec.leaves if leaf.path == (key,))
    unit = obs_spec.flat_dtype.itemsize
    per = leaf.dtype.itemsize // unit
    return (leaf.offset // unit + np.arange(int(np.prod(leaf.shape)) * per)).reshape(*leaf.shape, per)


class SymmetricBoard(nn.Module):
    """One MLP over each symmetric image of a PettingZoo board observation (``observation``: ``(rows, cols,
    planes)``, ``action_mask``: one entry per move), the images' features side by side (``images x
    hidden_size`` wide); :meth:`output_layers` gives the agent layers that undo each image's symmetry on its
    move scores and average the images."""

    def __init__(self, obs_spec: Any, act_spec: Any, hidden_size: int = 128, images: list | None = None, **kwargs: Any):
        super().__init__()
        if images is None:
            raise TypeError("SymmetricBoard needs the board's images (use TicTacToePolicy or ConnectFourPolicy)")
        board, mask = leaf_units(obs_spec, "observation"), leaf_units(obs_spec, "action_mask")
        cells = board.reshape(-1, *board.shape[2:])  # per cell: its planes' positions
        rows = []
        for image_cells, image_moves in images:
            permuted = np.arange(obs_spec.flat_size)
            permuted[cells.ravel()] = cells[image_cells].ravel()
            permuted[mask.ravel()] = mask[image_moves].ravel()
            rows.append(permuted)
        self.register_buffer("gather", torch.as_tensor(np.stack(rows)), persistent=False)  # (images, flat)
        # image move p is real move moves[p]: real move m's score is the image's at position inverse[m]
        inverse = np.stack([np.argsort(moves) for _, moves in images])
        self.register_buffer("unpermute", torch.as_tensor(inverse), persistent=False)  # (images, moves)
        self.images, self.features = len(images), hidden_size
        self.mlp = MLPEncoder(obs_spec, act_spec, hidden_size=hidden_size)
        self.hidden_size = self.images * hidden_size

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        batch = flat_obs.shape[0]
        images = flat_obs[:, self.gather]  # (batch, images, flat)
        return self.mlp(images.reshape(batch * self.images, -1)).reshape(batch, self.hidden_size)

    def output_layers(self, outputs: int) -> tuple[nn.Module, nn.Module]:
        """``(action layer, value layer)`` for the agent: each image's move scores back on the real board,
        averaged over the images; the value likewise."""
        if outputs != self.unpermute.shape[1]:
            raise ValueError(
                f"SymmetricBoard: the action head has {outputs} outputs, the board {self.unpermute.shape[1]} moves"
            )
        return ImageAverage(self.features, outputs, self.unpermute, std=0.01), ImageAverage(self.features, 1, None, std=1.0)


class ImageAverage(nn.Linear):
    """A linear layer shared by every image's features, its outputs mapped back to the real board
    (``unpermute``: per image, the index of each real output) and averaged over the images. A plain
    :class:`~torch.nn.Linear` in its parameters, so zeroing them still gives uniform moves."""

    def __init__(self, features: int, outputs: int, unpermute: torch.Tensor | None, std: float):
        super().__init__(features, outputs)
        layer_init(self, std=std)
        self.unpermute: torch.Tensor | None
        self.register_buffer("unpermute", None if unpermute is None else unpermute.clone(), persistent=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        per_image = super().forward(hidden.reshape(hidden.shape[0], -1, self.in_features))  # (batch, images, outputs)
        if self.unpermute is not None:
            index = self.unpermute.expand(hidden.shape[0], -1, -1)
            per_image = per_image.gather(2, index)
        return per_image.mean(1)


class TicTacToePolicy(SymmetricBoard):
    """Tic-tac-toe's eight symmetries."""

    def __init__(self, obs_spec: Any, act_spec: Any, hidden_size: int = 128, **kwargs: Any):
        super().__init__(obs_spec, act_spec, hidden_size, images=tictactoe_images())


class ConnectFourPolicy(SymmetricBoard):
    """Connect four's mirror."""

    def __init__(self, obs_spec: Any, act_spec: Any, hidden_size: int = 128, **kwargs: Any):
        super().__init__(obs_spec, act_spec, hidden_size, images=connect_four_images())
