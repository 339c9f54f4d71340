"""2048's rules on hand-placed boards: slides and merges, the new tile, the mask, game over (the C game
equals this reference bit for bit: test_games.py)."""

from __future__ import annotations

import numpy as np
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.g2048 import DOWN, G2048, LEFT, RIGHT, UP, slide_line


def board(rows: list[list[int]]) -> G2048:
    """A game whose cells are ``rows`` (exponents: 1 is a 2, 0 empty)."""
    env = G2048()
    env.reset(seed=0)
    env.cells = [e for row in rows for e in row]
    env.observe()
    return env


def test_each_tile_merges_at_most_once_and_the_side_moved_to_merges_first():
    assert slide_line([1, 1, 1, 1]) == ([2, 2, 0, 0], 8)  # 2 2 2 2 -> 4 4
    assert slide_line([1, 1, 1, 0]) == ([2, 1, 0, 0], 4)  # 2 2 2 . -> 4 2
    assert slide_line([2, 0, 2, 2]) == ([3, 2, 0, 0], 8)  # 4 . 4 4 -> 8 4 (gaps are skipped)
    assert slide_line([1, 1, 2, 2]) == ([2, 3, 0, 0], 12)  # 2 2 4 4 -> 4 8: score 12
    assert slide_line([2, 1, 1, 0]) == ([2, 2, 0, 0], 4)  # 4 2 2 -> 4 4, not 8


def test_a_move_slides_every_line_its_way_scores_the_merges_and_adds_one_tile():
    env = board([[1, 1, 0, 2], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]])
    _, reward, terminated, _, _ = env.step(RIGHT)
    assert reward == 4.0 and not terminated
    assert env.cells[2:4] == [2, 2] and env.cells[15] == 2  # 2 2 . 4 -> . . 4 4; the bottom 4 stays
    assert sum(1 for e in env.cells if e) == 4  # three tiles left after the merge, plus the new one
    env = board([[1, 0, 0, 0], [1, 0, 0, 0], [2, 0, 0, 0], [2, 0, 0, 0]])
    _, reward, *_ = env.step(UP)
    assert reward == 12.0 and [env.cells[r * 4] for r in range(4)][:2] == [2, 3]
    env = board([[3, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    env.step(DOWN)
    assert env.cells[12] == 3 and env.cells[0] != 3


def test_new_tiles_are_twos_nine_times_in_ten_and_land_on_empty_cells():
    env = G2048()
    values = []
    for seed in range(1500):
        env.reset(seed=seed)
        values += [e for e in env.cells if e]
    assert set(values) <= {1, 2} and len(values) == 3000
    assert 0.08 < values.count(2) / len(values) < 0.12


def test_a_move_that_changes_nothing_is_masked_and_played_anyway_is_a_no_op():
    env = board([[1, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    obs = env.observe()
    assert obs["action_mask"].tolist() == [0.0, 1.0, 0.0, 1.0]  # up and left change nothing
    before = list(env.cells)
    _, reward, terminated, truncated, _ = env.step(LEFT)
    assert env.cells == before and reward == 0.0 and not terminated and not truncated and env.invalid == 1


def test_the_game_ends_when_no_move_changes_the_board():
    # left merges the two 32s; the new tile fills the last empty cell, next to an 256 and a 1024: stuck
    env = board([[5, 5, 7, 8], [9, 10, 9, 10], [10, 9, 10, 9], [9, 10, 9, 10]])
    obs, reward, terminated, truncated, info = env.step(LEFT)
    assert reward == 64.0 and terminated and not truncated
    assert obs["action_mask"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert info == {"max_tile": 1024.0, "invalid": 0.0, "moves": 1.0}


def test_the_c_block_writes_the_mask_before_the_board():
    block = GameBlock("g2048", G2048, 2)
    block.vec_reset(seed=3)
    env = G2048()
    obs, _ = env.reset(seed=3)
    row = block.buffers.observations[0]
    np.testing.assert_array_equal(row[:4], obs["action_mask"])
    np.testing.assert_array_equal(row[4:], obs["board"])
