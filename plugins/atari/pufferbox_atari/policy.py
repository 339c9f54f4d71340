"""NatureCNN (Mnih et al. 2015): the default Atari encoder.

pufferbox's own :class:`~pufferbox.encoders.CNNEncoder` is exactly this network
(three conv layers and a linear layer over ``uint8`` frames scaled to [0, 1]); Atari's
stacked grayscale frames are channels-first ``(frames, 84, 84)``.

Example:
    >>> import numpy as np
    >>> import torch
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ObservationSpec, ActionSpec
    >>> obs = ObservationSpec(spaces.Box(0, 255, (4, 84, 84), np.uint8))
    >>> enc = NatureCNN(obs, ActionSpec(spaces.Discrete(4)), hidden_size=512)
    >>> enc(torch.zeros(2, obs.flat_size, dtype=torch.uint8)).shape
    torch.Size([2, 512])
"""

from __future__ import annotations

from pufferbox.api import CNNEncoder


class NatureCNN(CNNEncoder):
    """The Atari encoder (named for ``policy="pufferbox_atari.policy:NatureCNN"`` and checkpoints)."""
