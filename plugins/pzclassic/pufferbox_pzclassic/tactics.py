"""Tactics for tic-tac-toe and connect four: training opponents that punish.

``tictactoe`` and ``connect_four`` are ``league.scripted_opponent`` moves (``move(observations, legal, rng)
-> actions``, batched): take a win when one is on the board, else block the opponent's immediate win,
else a uniformly random legal move. Self-play alone never punishes a blind spot the two seats share
(neither takes nor blocks the same win); this player does, and its random moves still reach the
positions careless play makes. ``tictactoe_perfect`` plays tic-tac-toe perfectly (the game is solved
here, 4,520 positions): it also punishes the replies that lose only to a player who forks two moves later,
which the one-ply player reaches by chance. All read only what the seat observes: its own and the
opponent's pieces (PettingZoo's planes 0 and 1) and the legal moves.
"""

from __future__ import annotations

import functools
from itertools import product

import numpy as np


def windows(rows: int, cols: int, length: int) -> np.ndarray:
    """Every horizontal, vertical and diagonal run of ``length`` cells, as flat (row-major) indices."""
    runs = []
    for r, c, (dr, dc) in product(range(rows), range(cols), ((0, 1), (1, 0), (1, 1), (1, -1))):
        end_r, end_c = r + dr * (length - 1), c + dc * (length - 1)
        if 0 <= end_r < rows and 0 <= end_c < cols:
            runs.append([(r + dr * k) * cols + c + dc * k for k in range(length)])
    return np.array(runs)


TICTACTOE_LINES = windows(3, 3, 3)
CONNECT_FOUR_LINES = windows(6, 7, 4)


def completing(pieces: np.ndarray, cells: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """``(n, moves)``: whether adding ``cells[:, m]`` (a flat cell per row and move; -1: none) to
    ``pieces`` (``(n, board)`` bool) completes one of ``lines``."""
    moves = cells.shape[1]
    placed = np.repeat(pieces[:, None, :], moves, axis=1)
    rows, cols = np.nonzero(cells >= 0)
    placed[rows, cols, cells[rows, cols]] = True
    full = placed[:, :, lines].all(-1).any(-1)
    return full & (cells >= 0)


def tactical(
    mine: np.ndarray, theirs: np.ndarray, cells: np.ndarray, legal: np.ndarray, lines: np.ndarray, rng
) -> np.ndarray:
    """Per row: a winning move, else a blocking one, else any legal move (uniformly among the candidates)."""
    win = completing(mine, cells, lines) & legal
    block = completing(theirs, cells, lines) & legal
    candidates = np.where(win.any(1, keepdims=True), win, np.where(block.any(1, keepdims=True), block, legal))
    candidates |= ~candidates.any(1, keepdims=True)  # no legal move (a waiting seat): anything, it is ignored
    keys = np.where(candidates, rng.random(candidates.shape), -1.0)
    return keys.argmax(1)


def planes(observations: dict, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """The seat's own pieces and the opponent's, ``(n, cells)`` bool each."""
    board = np.asarray(observations["observation"]).reshape(-1, cells, 2) != 0
    return board[:, :, 0], board[:, :, 1]


def tictactoe(observations: dict, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tic-tac-toe's one-ply player: move ``m`` marks cell ``m``."""
    mine, theirs = planes(observations, 9)
    cells = np.broadcast_to(np.arange(9), (len(mine), 9))
    return tactical(mine, theirs, cells, legal, TICTACTOE_LINES, rng)


def connect_four(observations: dict, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Connect four's one-ply player: move ``m`` drops into column ``m``, landing on its lowest empty cell."""
    mine, theirs = planes(observations, 42)
    empty = ~(mine | theirs).reshape(-1, 6, 7)
    lowest = 5 - np.argmax(empty[:, ::-1, :], axis=1)  # per column: the bottom-most empty row (row 5 is the floor)
    cells = np.where(empty.any(1), lowest * 7 + np.arange(7), -1)
    return tactical(mine, theirs, cells, legal, CONNECT_FOUR_LINES, rng)


LINE_MASKS = tuple(int(sum(1 << int(c) for c in line)) for line in TICTACTOE_LINES)


@functools.cache
def solved(mine: int, theirs: int) -> tuple[float, int]:
    """Tic-tac-toe solved for the player to move (boards as 9-bit masks): ``(value, best moves as a bit mask)``.
    A win is 1, a loss -1, a draw 0, each ply later discounted by 0.9: the quickest win and the slowest loss
    score best."""
    best, moves = -2.0, 0
    for cell in range(9):
        bit = 1 << cell
        if (mine | theirs) & bit:
            continue
        placed = mine | bit
        if any(placed & line == line for line in LINE_MASKS):
            value = 1.0
        elif placed | theirs == 0x1FF:
            value = 0.0
        else:
            value = -0.9 * solved(theirs, placed)[0]
        if value > best + 1e-9:
            best, moves = value, bit
        elif abs(value - best) <= 1e-9:
            moves |= bit
    return (best, moves) if moves else (0.0, 0)


def tictactoe_perfect(observations: dict, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tic-tac-toe played perfectly: a uniformly random one of the moves with the best minimax value (the
    quickest win, else a draw, else the slowest loss). Every reply that loses to perfect play loses to it."""
    mine, theirs = planes(observations, 9)
    weights = 1 << np.arange(9)
    picks = np.zeros(len(mine), dtype=np.int64)
    for row, (m, t) in enumerate(zip(mine @ weights, theirs @ weights)):
        best = solved(int(m), int(t))[1]
        choices = [cell for cell in range(9) if best >> cell & 1 and legal[row, cell]]
        picks[row] = rng.choice(choices) if choices else 0  # none: not this seat's turn, ignored
    return picks
