"""Go's rules in the reference and the C block alike: captures, suicide, simple ko, area scoring, passes."""

from __future__ import annotations

import itertools

import numpy as np
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.go import MAX_CELLS, Go

LEGAL = 2 * MAX_CELLS  # where the legal-points plane starts in an observation


def step_both(env, block, point):
    """One ply in the reference and the C block; checks that observations, rewards and end flags agree."""
    out = env.step({"first": point, "second": point})
    block.vec_step(np.array([[point], [point]], dtype=np.int64))
    obs, rewards, terms, truncs, _ = out
    b = block.buffers
    if not terms["first"]:  # after a terminal step the block has restarted the game
        seen = b.final_observations if truncs["first"] else b.observations
        np.testing.assert_array_equal(seen, np.stack([obs["first"], obs["second"]]))
    assert b.rewards.tolist() == [rewards["first"], rewards["second"]]
    assert b.terminals.tolist() == [terms["first"], terms["second"]]
    assert b.truncations.tolist() == [truncs["first"], truncs["second"]]
    return out


def play_both(points, **kwargs):
    """Plays ``points`` (one per ply, first moves first) in both until the game ends; returns the
    reference (its board as the game ended) and its last step."""
    env, block = Go(**kwargs), GameBlock("go", Go, 1, **kwargs)
    env.reset(seed=0)
    block.vec_reset(seed=0)
    for point in points:
        out = step_both(env, block, point)
        if out[2]["first"] or out[3]["first"]:
            break
    return env, out


def test_a_stone_takes_the_last_liberty_of_a_two_stone_group():
    # 5x5: white (0,0) and (0,1) lose their last liberty when black plays (0,2)
    env, _ = play_both([5, 0, 6, 1, 2], size=5)
    assert env.board[0, 0] == 0 and env.board[0, 1] == 0 and env.illegal == 0
    assert (env.board == 1).sum() == 3


def test_suicide_is_illegal_and_played_as_a_pass():
    # black (0,1) and (1,0) close the corner; white's stone there would have no liberty
    env, (obs, *_) = play_both([1, 24, 5, 0], size=5)
    assert env.board[0, 0] == 0 and env.illegal == 1 and env.passes == 1
    assert obs["first"][-1] == 1.0  # the last ply was a pass
    assert obs["first"][LEGAL + 0] == 1.0  # black may fill its own eye: its stones keep liberties
    assert not obs["second"][LEGAL : LEGAL + MAX_CELLS].any()  # not white's turn
    # a group's suicide too: white's (0,1) would leave (0,0)-(0,1) without a liberty, capturing nothing
    env, (obs, *_) = play_both([5, 0, 6, 24, 2, 1], size=5)
    assert env.board[0, 1] == 0 and env.board[0, 0] == 2 and env.illegal == 1


def test_simple_ko_forbids_the_immediate_retake_only():
    # black captures white's (1,1) from (1,2); white's retake at (1,1) would restore the board
    ko = [1, 2, 5, 8, 11, 12, 20, 6, 7]
    env, (obs, *_) = play_both(ko, size=5)
    assert env.board[1, 1] == 0 and env.board[1, 2] == 1
    assert obs["second"][LEGAL + 6] == 0.0 and obs["second"][LEGAL + 3] == 1.0
    env, _ = play_both([*ko, 6], size=5)
    assert env.illegal == 1 and env.board[1, 1] == 0  # refused: played as a pass
    env, (obs, *_) = play_both([*ko, 6, 24, 6], size=5)  # after a move elsewhere the retake is legal
    assert env.illegal == 1 and env.board[1, 1] == 2 and env.board[1, 2] == 0
    assert obs["first"][LEGAL + 7] == 0.0  # and now black's immediate retake is the ko


def test_area_scoring_counts_stones_and_surrounded_points_but_not_shared_ones():
    # black's wall on column 1, white's on column 3: columns 0 and 4 are territory, column 2 is shared
    walls = [p for row in range(5) for p in (row * 5 + 1, row * 5 + 3)]
    _, (_, rewards, terms, _, infos) = play_both([*walls, 25, 25], size=5, komi_half_points=7)
    assert terms["first"] and infos["first"]["margin"] == -3.5  # 10 - 10 - 3.5 komi
    assert rewards == {"first": -1.0, "second": 1.0} and infos["second"]["second_win"] == 1.0


def test_two_passes_on_an_empty_board_without_komi_are_a_draw():
    _, (_, rewards, terms, _, infos) = play_both([25, 25], size=5, komi_half_points=0)
    assert terms["second"] and rewards == {"first": 0.0, "second": 0.0}
    assert infos["first"]["draw"] == 1.0 and infos["first"]["illegal"] == 0.0


def test_an_off_board_index_is_an_illegal_pass_and_the_pass_index_is_not():
    env, _ = play_both([30, 3], size=5)
    assert env.illegal == 1 and env.board[0, 3] == 2  # first's 30 is off a 5x5 board; second played 3
    env, (*_, infos) = play_both([25, 3, 25, 25], size=5)
    assert env.illegal == 0 and infos["first"]["illegal"] == 0.0


def test_the_c_block_equals_the_reference_through_long_games_with_captures():
    rng = np.random.default_rng(3)
    for size in (5, 7):
        env, block = Go(size=size, max_moves=300), GameBlock("go", Go, 1, size=size, max_moves=300)
        env.reset(seed=0)
        block.vec_reset(seed=0)
        stones = []
        while env.agents:  # a random legal point each ply; now and then any action (maybe illegal, a pass)
            legal = np.flatnonzero(env.legal)
            anything = rng.random() < 0.03 or len(legal) == 0
            point = int(rng.integers(0, size * size + 1)) if anything else int(rng.choice(legal))
            step_both(env, block, point)
            stones.append(int((env.board != 0).sum()))
        assert env.moves >= 100, env.moves
        assert any(b < a for a, b in itertools.pairwise(stones)), "no capture happened"
