"""Continuous action elements of a C game: the fixed point every side of the game agrees on.

An ``ACT_N`` entry of 0 (``OCEAN_CONTINUOUS`` in ``c/ocean.h``) is a continuous element in [-1, 1]. The
block turns the policy's floats into integers before the C call, and the Python reference does the same
with :func:`quantize_actions`, so the C step and the reference see the same int64 and stay bit-exact:
each value is clipped to [-1, 1], multiplied by :data:`ACTION_ONE` (exact: a power of two) and rounded
half to even. NaN has no place in [-1, 1] and is refused (:class:`~pufferbox.spaces.SpaceError`).

Example:
    >>> quantize_actions([0.5, -2.0, 1e-6, 0.0000076]).tolist()
    [32768, -65536, 0, 0]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from pufferbox.spaces import SpaceError

__all__ = ["ACTION_ONE", "CONTINUOUS", "continuous_action_space", "quantize_actions"]

ACTION_ONE = 65536  # OCEAN_ACTION_ONE: the integer that stands for 1.0
CONTINUOUS = 0  # OCEAN_CONTINUOUS: the ACT_N entry of a continuous element


def quantize_actions(actions: Any, out: np.ndarray | None = None, name: str = "actions") -> np.ndarray:
    """``actions`` (floats, any shape) as int64 fixed point in [-ACTION_ONE, ACTION_ONE] (into ``out``
    when given); a NaN raises a one-line :class:`SpaceError` naming ``name``."""
    # in place in one copy: np.clip allocating its result costs several times the rest together
    values = np.array(actions, dtype=np.float64)
    np.clip(values, -1.0, 1.0, out=values)
    np.multiply(values, ACTION_ONE, out=values)
    np.rint(values, out=values)
    if values.size and np.isnan(values.min()):  # min is NaN when any value is
        raise SpaceError(f"{name}: a continuous action is NaN; fix: send values in [-1, 1] (larger ones are clipped)")
    if out is None:
        return values.astype(np.int64)
    out[...] = values
    return out


def continuous_action_space(act_len: int) -> spaces.Box:
    """The action space of a continuous C game of ``act_len`` elements: ``Box(-1, 1, (act_len,), float32)``."""
    return spaces.Box(-1.0, 1.0, (act_len,), dtype=np.float32)
