"""Tetris's rules: a full row clears and scores, a hard drop locks at once, the bag deals every
type once per seven pieces, a blocked spawn ends the game."""

from __future__ import annotations

import numpy as np
from pufferbox_ocean.games.tetris import PIECE_REWARD, H, Tetris, W


def test_a_full_row_clears_and_scores():
    env = Tetris()
    env.reset(seed=0)
    env.piece, env.rot, env.x, env.y = 0, 1, W - 3, 0  # a vertical I in the last column (box col 2)
    for r in range(H - 4, H):
        env.board[r] = [1] * (W - 1) + [0]
    env.board[H - 5] = [1, 0] + [0] * (W - 2)
    _, reward, terminated, *_ = env.step(5)
    assert reward == np.float32(8.0 + PIECE_REWARD) and env.lines == 4 and not terminated
    assert env.board[H - 1] == [1, 0] + [0] * (W - 2) and sum(map(sum, env.board)) == 1


def test_hard_drop_locks_at_once_and_the_bag_deals_each_type_once():
    env = Tetris()
    env.reset(seed=3)
    seen = [env.piece]
    for _ in range(6):
        env.step(5)
        seen.append(env.piece)
    assert sorted(seen) == list(range(7)) and env.pieces == 6


def test_a_blocked_spawn_ends_the_game():
    env = Tetris(gravity=1)
    env.reset(seed=0)
    for r in range(1, H):
        env.board[r] = [1] * (W - 1) + [0] if r % 2 else [0] + [1] * (W - 1)
    _, _, terminated, truncated, info = env.step(5)
    assert terminated and not truncated and info["pieces"] == 1.0
