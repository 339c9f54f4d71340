"""What every Ocean game's reference shares: its registration record and reference bases (the C game
SDK's, :mod:`pufferbox.native`), argument checks, and a tiny canvas for its frames.

A :class:`Canvas` draws rectangles in unit coordinates (or cells) once, then shows them as ANSI
text (``render_mode="ansi"``: ``pufferbox eval --render``) or as an RGB image
(``"rgb_array"``: ``eval --video``).

Example:
    >>> canvas = Canvas(4, 2)
    >>> canvas.cell(1, 0, "#")
    >>> print(canvas.show("ansi", "title").replace(" ", "."))
    title
    +----+
    |.#..|
    |....|
    +----+
"""

from __future__ import annotations

import numpy as np

from pufferbox.api import CGame, GameReference, MultiAgentReference, SingleAgentReference

__all__ = ["Canvas", "Game", "MultiAgentReference", "Reference", "SingleAgentReference", "check_positive"]

PIXELS = 6  # rgb_array: pixels per character cell
COLORS = {  # the glyphs the games draw, as RGB
    "#": (230, 230, 230),
    "o": (255, 200, 40),
    "@": (80, 200, 120),
    "x": (220, 60, 60),
    "*": (90, 140, 255),
    "+": (200, 120, 255),
    ".": (70, 70, 70),
}


# The registration record and the reference bases are the C game SDK's (pufferbox.native), under the
# names the games have always used.
Game = CGame
Reference = GameReference


def check_positive(game: str, name: str, value: int, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int in [low, high], or a one-line ValueError naming the parameter and the range."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{game}: {name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ValueError(f"{game}: {name} must be {bound}, got {value}")
    return int(value)


class Canvas:
    """``width`` x ``height`` character cells; unit-square drawing maps onto them."""

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.cells = [[" "] * width for _ in range(height)]

    def cell(self, x: int, y: int, glyph: str) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            self.cells[y][x] = glyph

    def rect(self, x: float, y: float, w: float, h: float, glyph: str) -> None:
        """Fill the cells a rectangle of the unit square covers (at least one)."""
        x0, y0 = int(x * self.width), int(y * self.height)
        x1, y1 = max(int((x + w) * self.width), x0 + 1), max(int((y + h) * self.height), y0 + 1)
        for cy in range(max(y0, 0), min(y1, self.height)):
            for cx in range(max(x0, 0), min(x1, self.width)):
                self.cells[cy][cx] = glyph

    def ansi(self, title: str = "") -> str:
        border = "+" + "-" * self.width + "+"
        rows = ["|" + "".join(row) + "|" for row in self.cells]
        return "\n".join([*([title] if title else []), border, *rows, border])

    def rgb(self) -> np.ndarray:
        glyphs = sorted({g for row in self.cells for g in row} - {" "})
        index = {" ": 0, **{g: i + 1 for i, g in enumerate(glyphs)}}
        palette = np.array([(0, 0, 0), *(COLORS.get(g, (200, 200, 200)) for g in glyphs)], dtype=np.uint8)
        codes = np.array([[index[g] for g in row] for row in self.cells], dtype=np.intp)
        return palette[codes].repeat(PIXELS, axis=0).repeat(PIXELS, axis=1)

    def show(self, render_mode: str | None, title: str = "") -> str | np.ndarray | None:
        if render_mode == "ansi":
            return self.ansi(title)
        if render_mode == "rgb_array":
            return self.rgb()
        return None
