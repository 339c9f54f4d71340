"""Connect Four's rules: the four-in-a-row lines, the full-column rule, observations from each side."""

from __future__ import annotations

import numpy as np
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.connect4 import CELLS, Connect4


def play(env, columns):
    """Alternate moves (first, second, first, ...); returns the last step's results."""
    for col in columns:
        out = env.step({"first": col, "second": col})
    return out


def test_a_diagonal_wins_for_the_second_player():
    env = Connect4()
    env.reset(seed=0)
    # second builds the rising diagonal (row, col) (0,0) (1,1) (2,2) (3,3); first fills under it
    _, _, terms, _, _ = play(env, [1, 0, 2, 1, 2, 2, 3, 3, 3, 6, 5])
    assert not terms["first"] and not terms["second"]
    _, rewards, terms, _, infos = play(env, [3])  # second completes (3, 3)
    assert rewards == {"first": -1.0, "second": 1.0} and terms["first"] and terms["second"]
    assert infos["second"]["second_win"] == 1.0 and infos["first"]["first_win"] == 0.0


def test_a_full_column_plays_the_lowest_column_with_room():
    env = Connect4()
    env.reset(seed=0)
    play(env, [6] * 6)  # column 6 full, no four (alternating discs)
    obs, *_ = env.step({"first": 6, "second": 0})
    assert env.illegal == 1 and env.cells[0, 0] == 1  # first's disc went to column 0
    assert obs["first"][0] == 1.0 and obs["second"][CELLS + 0] == 1.0  # own vs opponent's planes
    assert obs["second"][-1] == 1.0 and obs["first"][-1] == 0.0  # second to move


def test_a_full_board_without_four_is_a_draw():
    env = Connect4()
    env.reset(seed=0)
    # a random game that filled the board without four in a row
    order = [5, 5, 5, 0, 5, 4, 4, 6, 6, 3, 5, 1, 3, 5, 2, 1, 2, 3, 0, 4, 1, 4, 3, 0, 2, 2, 2, 1, 0, 0, 0, 2, 1, 6]
    order += [1, 3, 4, 4, 3, 6, 6, 6]
    for col in order[:-1]:
        _, _, terms, _, _ = env.step({"first": col, "second": col})
        assert not terms["first"]
    _, rewards, terms, _, infos = env.step({"first": 6, "second": 6})
    assert terms["first"] and rewards == {"first": 0.0, "second": 0.0} and infos["first"]["draw"] == 1.0


def test_the_c_block_plays_the_same_full_column_rule():
    block = GameBlock("connect4", Connect4, 1)
    block.vec_reset(seed=0)
    for _ in range(6):
        block.vec_step(np.array([[6], [6]]))
    block.vec_step(np.array([[6], [6]]))
    assert block.buffers.observations[0][0] == 1.0  # first's disc in column 0, bottom row
