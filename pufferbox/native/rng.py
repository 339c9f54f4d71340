"""The C games' random generator in Python: SplitMix64, the same numbers as ``c/ocean.h``'s ``OceanRng``.

A game's reference draws from it exactly as its C header does, so a seeded rollout matches bit for bit.

Example:
    >>> hex(GameRng(0).next())  # SplitMix64's published first output for seed 0
    '0xe220a8397b1dcdaf'
    >>> rng = GameRng(7)
    >>> 0 <= rng.below(6) < 6 and 0.0 <= rng.unit() < 1.0
    True
"""

from __future__ import annotations

import os

__all__ = ["GameRng", "MASK"]

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


class GameRng:
    """One 64-bit word of state; ``next``, ``below(n)`` (in [0, n)) and ``unit()`` (in [0, 1)), as
    ``rng_next``, ``rng_below`` and ``rng_unit`` in C."""

    __slots__ = ("state",)

    def __init__(self, seed: int | None = None):
        self.state = (int.from_bytes(os.urandom(8), "little") if seed is None else seed) & MASK

    def next(self) -> int:
        self.state = z = (self.state + GOLDEN) & MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return ((self.next() >> 32) * n) >> 32

    def unit(self) -> float:
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)
