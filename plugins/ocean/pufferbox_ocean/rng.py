"""The Ocean games' random generator: the C game SDK's SplitMix64 (``pufferbox.native``), the same
numbers as ``OceanRng`` in C.

Example:
    >>> hex(Rng(0).next())  # SplitMix64's published first output for seed 0
    '0xe220a8397b1dcdaf'
"""

from __future__ import annotations

from pufferbox.api import GameRng as Rng

__all__ = ["Rng"]
