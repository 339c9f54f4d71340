"""The Ocean games' C library: every ``c/NAME.h`` compiled with the C game SDK's binding
(:mod:`pufferbox.native`), as a third-party plugin's games are.

Env ``i`` of a block reset with ``seed`` is the reference env reset with ``seed + i``: same generator,
same draws, same arithmetic (checked by ``pufferbox check``).

Example:
    >>> from pufferbox_ocean.games.pong import Pong
    >>> block = GameBlock("pong", Pong, num_envs=4)
    >>> _ = block.vec_reset(seed=0)
    >>> block.buffers.observations.shape
    (4, 8)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pufferbox.api import CGameLibrary

__all__ = ["LIBRARY", "GameBlock"]

LIBRARY = CGameLibrary("pufferbox_ocean_games", Path(__file__).parent / "c")


def GameBlock(game: str, reference: type, num_envs: int, **kwargs: Any) -> Any:
    """``num_envs`` envs of the Ocean game ``game`` stepped by its C code (``reference``: its Python env class)."""
    return LIBRARY.block(game, reference, num_envs, **kwargs)
