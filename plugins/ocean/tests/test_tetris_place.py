"""Tetris by placements: an action lands the piece where it says (rotation, leftmost column), illegal
placements are masked and drop the piece as it spawned, rows clear and score as in Tetris, and the C
block follows the reference through line clears and levels."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.tetris import H, W
from pufferbox_ocean.games.tetris_place import ACTIONS, FEATURES, TetrisPlace, target
from test_tetris import placement_value


def test_an_action_lands_the_piece_at_its_rotation_and_leftmost_column():
    env = TetrisPlace()
    env.reset(seed=0)
    env.piece = 0  # I: rotation 1 is vertical
    _, reward, *_ = env.step(1 * W + 9)  # vertical, in the last column
    assert [row[9] for row in env.board[H - 4 :]] == [1, 1, 1, 1] and sum(map(sum, env.board)) == 4
    assert reward == 2 * (H - 4)  # hard drop: 2 points a row from the top


def test_a_full_row_clears_and_scores_the_guideline_points_times_the_level():
    env = TetrisPlace()
    env.reset(seed=0)
    env.lines = 12  # level 2
    for r in range(H - 4, H):
        env.board[r] = [1] * (W - 1) + [0]
    env.piece = 0
    _, reward, terminated, *_ = env.step(1 * W + 9)
    assert reward == 2 * (H - 4) + 800 * 2 and env.lines == 16 and not terminated
    assert sum(map(sum, env.board)) == 0


def test_illegal_placements_are_masked_and_drop_the_piece_as_it_spawned():
    env = TetrisPlace()
    env.reset(seed=0)
    env.piece = 1  # O: two columns wide, so column 9 is off the well
    mask = env.observe()["action_mask"]
    assert mask[0 * W + 9] == 0 and mask[0 * W + 8] == 1 and mask.shape == (ACTIONS,)
    spawn_x = env.x
    _, _, _, _, _ = env.step(0 * W + 9)
    assert env.invalid == 1
    assert env.board[H - 1][spawn_x] == 1 and env.board[H - 1][spawn_x + 1] == 1  # where it spawned


def test_the_observation_holds_the_heights_the_holes_and_both_pieces():
    env = TetrisPlace()
    env.reset(seed=2)
    env.board[H - 3][4] = 1
    obs = env.observe()
    assert obs["heights"][4] == np.float32(3 / H) and obs["heights"].sum() == np.float32(3 / H)
    assert obs["holes"][4] == np.float32(2 / H) and obs["holes"].sum() == np.float32(2 / H)  # the two under it
    assert obs["piece"][env.piece] == 1 and obs["next"][env.next] == 1 and obs["board"].sum() == 1


def placements(obs: dict) -> np.ndarray:
    """The placements key as (feature, action): rows filled / 4, cells covered / 4, height / 20, bumpiness change / 16."""
    return obs["placements"].reshape(FEATURES, ACTIONS)


def test_the_placements_state_what_each_drop_fills_covers_and_leaves():
    env = TetrisPlace()
    env.reset(seed=0)
    env.board[H - 1] = [1] * (W - 1) + [0]  # the bottom row but its last column
    env.piece = 0  # I
    p = placements(env.observe())
    vertical, flat = 1 * W + 9, 0 * W + 6  # down the last column; lying on columns 6-9
    assert p[:, vertical].tolist() == [1 / 4, 0.0, np.float32(4 / H), 2 / 16]  # fills the row, heights 1..1, 4
    assert p[:, flat].tolist() == [0.0, 1 / 4, np.float32(2 / H), 0.0]  # covers the gap, the step moves left
    assert not p[:, 0 * W + 7].any() and env.observe()["action_mask"][0 * W + 7] == 0  # off the well: all 0
    env.board = [[0] * W for _ in range(H)]
    env.board[0][0] = 1  # a cell at the top: a T that fits beneath it drops past it to the floor
    env.piece = 2
    p = placements(env.observe())
    assert p[:, 0].tolist() == [0.0, 0.0, np.float32(2 / H), 0.0]  # heights 20, 0, 0... -> 20, 2, 1: bumpiness 20


def test_a_blocked_spawn_ends_the_game_and_max_steps_truncates():
    env = TetrisPlace()
    env.reset(seed=0)
    for r in range(1, H):
        env.board[r] = [1] * (W - 1) + [0] if r % 2 else [0] + [1] * (W - 1)
    _, _, terminated, truncated, info = env.step(0)
    assert terminated and not truncated and info["pieces"] == 1.0
    env = TetrisPlace(max_steps=2)
    env.reset(seed=0)
    env.step(0)
    _, _, terminated, truncated, info = env.step(9)
    assert truncated and not terminated and set(info) == {"lines", "pieces", "score", "invalid"}


def test_bad_max_steps_is_one_line():
    with pytest.raises(ValueError, match="max_steps"):
        TetrisPlace(max_steps=0)


def best_placement(env: TetrisPlace) -> int:
    """The legal placement whose drop leaves the best board (test_tetris's hand-tuned evaluation)."""
    best, choice = None, 0
    for a in range(ACTIONS):
        if not env.legal(a):
            continue
        rot = a // W
        x, y = target(env.piece, rot, a % W)
        while env.fits(rot, x, y + 1):
            y += 1
        board = [row[:] for row in env.board]
        for r, c in env.cells(rot, x, y):
            board[r][c] = 1
        value = placement_value(board)
        if best is None or value > best:
            best, choice = value, a
    return choice


def test_c_block_equals_the_reference_through_line_clears_and_levels():
    n, seed, steps = 2, 5, 60
    block = GameBlock("tetris_place", TetrisPlace, n, max_steps=steps)
    block.vec_reset(seed=seed)
    envs = [TetrisPlace(max_steps=steps) for _ in range(n)]
    obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    flat = lambda rows: np.stack([block.obs_spec.flatten(o) for o in rows])
    np.testing.assert_array_equal(block.buffers.observations, flat(obs))
    most, seen = 0, np.zeros(FEATURES, dtype=bool)
    for t in range(steps):
        actions = [best_placement(env) for env in envs]
        block.vec_step(np.array(actions, dtype=np.int64))
        for i, env in enumerate(envs):
            obs[i], reward, terminated, truncated, _ = env.step(actions[i])
            assert block.buffers.rewards[i] == np.float32(reward), (t, i)
            most = max(most, env.lines)
            if terminated or truncated:
                obs[i] = env.reset()[0]
            seen |= placements(obs[i]).max(axis=1) > 0
        np.testing.assert_array_equal(block.buffers.observations, flat(obs), err_msg=f"step {t}")
    assert most >= 10  # level 2 reached: its points doubled
    assert seen.all()  # placements that fill rows and cover cells came up, and are the C block's too
