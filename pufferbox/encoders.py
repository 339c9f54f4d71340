"""Encoders: a flat observation row -> features. Below the trainer, so env plugins build on them.

The encoder contract, which plugins implement for their own default policy::

    Encoder(obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 256, **kwargs)
    encoder.hidden_size                      # width of the features
    encoder(flat_obs[B, flat_size]) -> Tensor[B, hidden_size]
    encoder.output_layers(outputs) -> (action_layer, value_layer)   # optional

Without ``output_layers`` the agent reads the features with its own linear action layer (``outputs``
wide: logits, then a continuous action's means) and value layer. An encoder that defines it supplies
both, ``nn.Linear``-like modules from ``(B, hidden_size)`` features to ``(B, outputs)`` and ``(B, 1)``:
a policy that must score moves in a structured way (pzclassic's board symmetries average each image's
move scores back onto the real board) owns that step; the ``weight``/``bias`` of its action layer are what
zeroing makes a uniform player.

Encoders call ``obs_spec.torch_layout()`` in ``__init__`` and ``obs_spec.unflatten_torch``
first in ``forward`` (views only, no graph breaks under torch.compile). A plugin reaches these
through :mod:`pufferbox.api`; the trainer's agent (:mod:`pufferbox.train.policies`) puts the
actor/critic heads and the optional LSTM on top.

Example:
    >>> import gymnasium, torch
    >>> from pufferbox.spaces import ObservationSpec, ActionSpec
    >>> obs, act = ObservationSpec(gymnasium.spaces.Box(-1, 1, (4,))), ActionSpec(gymnasium.spaces.Discrete(2))
    >>> MLPEncoder(obs, act, hidden_size=32)(torch.zeros(3, 4)).shape
    torch.Size([3, 32])
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from pufferbox.spaces import ActionSpec, ObservationSpec

__all__ = ["MLPEncoder", "CNNEncoder", "is_image_space", "layer_init", "leaf_width", "flatten_tree"]


LayerT = TypeVar("LayerT", bound=nn.Module)


def layer_init(layer: LayerT, std: float = np.sqrt(2), bias: float = 0.0) -> LayerT:
    """Orthogonal init, as in CleanRL / the PPO implementation details."""
    nn.init.orthogonal_(cast(torch.Tensor, layer.weight), std)
    nn.init.constant_(cast(torch.Tensor, layer.bias), bias)
    return layer


MAX_ONE_HOT = 256  # Discrete leaves up to this size are one-hot encoded, larger ones fed as a number


def leaf_width(space: spaces.Space) -> int:
    if isinstance(space, spaces.Discrete):
        return int(space.n) if space.n <= MAX_ONE_HOT else 1
    return int(np.prod(space.shape or (), dtype=np.int64))


class MLPEncoder(nn.Module):
    """Every leaf as floats (small Discrete leaves one-hot), concatenated, then two tanh layers."""

    def __init__(self, obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 256, **kwargs: Any):
        super().__init__()
        self.obs_spec = obs_spec
        obs_spec.torch_layout()
        self.hidden_size = hidden_size
        # The action mask is not a feature: the policy applies it to the logits (Agent), and in the games
        # that declare one it follows from the rest of the observation anyway.
        self.skip = obs_spec.mask.index if obs_spec.mask is not None else -1
        in_size = sum(leaf_width(leaf.space) for i, leaf in enumerate(obs_spec.leaves) if i != self.skip)
        # (n, start) per leaf to one-hot, None to cast: plain tuples, so compile sees constants
        self.one_hot = tuple(
            (int(leaf.space.n), int(leaf.space.start))
            if isinstance(leaf.space, spaces.Discrete) and leaf.space.n <= MAX_ONE_HOT
            else None
            for leaf in obs_spec.leaves
        )
        self.net = nn.Sequential(
            layer_init(nn.Linear(in_size, hidden_size)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden_size, hidden_size)),
            nn.Tanh(),
        )

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        tree = self.obs_spec.unflatten_torch(flat_obs)
        leaves = [tree] if self.obs_spec.is_leaf else flatten_tree(tree)
        parts = []
        for i, (leaf, one_hot) in enumerate(zip(leaves, self.one_hot)):
            if i == self.skip:
                continue
            if one_hot is None:
                parts.append(leaf.reshape(flat_obs.shape[0], -1).float())
            else:
                n, start = one_hot
                index = (leaf.reshape(flat_obs.shape[0]).long() - start).clamp(0, n - 1)
                parts.append(nn.functional.one_hot(index, n).float())
        return self.net(parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1))


def flatten_tree(tree: Any) -> list[torch.Tensor]:
    if isinstance(tree, dict):
        return [t for v in tree.values() for t in flatten_tree(v)]
    if isinstance(tree, tuple):
        return [t for v in tree for t in flatten_tree(v)]
    return [tree]


def is_image_space(space: spaces.Space) -> bool:
    """A uint8 Box of rank 3 (HWC or CHW)."""
    return isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3


class CNNEncoder(nn.Module):
    """NatureCNN over a uint8 image Box observation (HWC or CHW, found from the channel count)."""

    def __init__(self, obs_spec: ObservationSpec, act_spec: ActionSpec, hidden_size: int = 512, **kwargs: Any):
        super().__init__()
        if not (obs_spec.is_leaf and is_image_space(obs_spec.space)):
            raise ValueError(f"CNNEncoder needs a uint8 image Box observation, got {obs_spec.space}")
        self.obs_spec = obs_spec
        obs_spec.torch_layout()
        self.hidden_size = hidden_size
        shape = tuple(obs_spec.space.shape or ())
        self.channels_last = shape[-1] <= 4 < shape[0] or (shape[-1] <= 4 and shape[0] > shape[-1])
        c, h, w = (shape[2], shape[0], shape[1]) if self.channels_last else shape
        small = min(h, w) < 36  # NatureCNN's 8x8/4 stem needs at least 36 pixels
        self.conv = nn.Sequential(
            layer_init(nn.Conv2d(c, 32, 3 if small else 8, stride=1 if small else 4)),
            nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 3 if small else 4, stride=1 if small else 2)),
            nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            n_flat = self.conv(torch.zeros(1, c, h, w)).shape[1]
        self.fc = nn.Sequential(layer_init(nn.Linear(n_flat, hidden_size)), nn.ReLU())

    def forward(self, flat_obs: torch.Tensor) -> torch.Tensor:
        x = self.obs_spec.unflatten_torch(flat_obs)
        if self.channels_last:
            x = x.permute(0, 3, 1, 2)
        return self.fc(self.conv(x.float() / 255.0))
