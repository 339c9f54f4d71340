"""Tetris's rules: a full row clears and scores its guideline points times the level, drops score per
row, a hard drop locks at once, the bag deals every type once per seven pieces, a blocked spawn ends
the game."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.tetris import CELLS, FEATURES, OBS, PLACEMENTS, H, Tetris, W
from pufferbox_ocean.games.tetris_place import TetrisPlace


def test_a_full_row_clears_and_scores():
    env = Tetris()
    env.reset(seed=0)
    env.piece, env.rot, env.x, env.y = 0, 1, W - 3, 0  # a vertical I in the last column (box col 2)
    for r in range(H - 4, H):
        env.board[r] = [1] * (W - 1) + [0]
    env.board[H - 5] = [1, 0] + [0] * (W - 2)
    _, reward, terminated, *_ = env.step(5)  # a hard drop of H - 4 rows, then a Tetris at level 1
    assert reward == 2 * (H - 4) + 800 and env.lines == 4 and not terminated
    assert env.board[H - 1] == [1, 0] + [0] * (W - 2) and sum(map(sum, env.board)) == 1


def test_the_level_multiplies_the_line_points_and_a_soft_drop_scores_a_point():
    env = Tetris(gravity=100)
    env.reset(seed=0)
    env.lines = 23  # level 3
    _, reward, *_ = env.step(4)
    assert reward == 1.0 and env.score == 1
    env.piece, env.rot, env.x, env.y = 0, 0, 0, H - 2  # a flat I on the bottom row's first four cells
    env.board[H - 1] = [0] * 4 + [1] * (W - 4)
    _, reward, *_ = env.step(5)
    assert reward == 300 and env.lines == 24 and env.score == 301
    env.over = True
    _, _, terminated, _, info = env.step(0)
    assert terminated and info == {"lines": 24.0, "pieces": 1.0, "score": 301.0}


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


def placement_value(board: list[list[int]]) -> float:
    """A classic hand-tuned evaluation: fewer rows high, fewer holes, a flatter surface, more rows cleared."""
    full = sum(all(row) for row in board)
    kept = [row for row in board if not all(row)]
    board = [[0] * W for _ in range(H - len(kept))] + kept
    tops = [next((r for r in range(H) if board[r][c]), H) for c in range(W)]
    holes = sum(1 for c in range(W) for r in range(tops[c], H) if not board[r][c])
    heights = [H - t for t in tops]
    bump = sum(abs(a - b) for a, b in itertools.pairwise(heights))
    return 0.76 * full - 0.51 * sum(heights) - 0.36 * holes - 0.18 * bump


def plan(env: Tetris) -> tuple[int, int]:
    """The (rotation, x) whose hard drop leaves the best board."""
    best, target = None, (env.rot, env.x)
    for rot in range(4):
        for x in range(-3, W):
            y = env.y if env.fits(rot, x, env.y) else env.y + 1  # a vertical I turns a row lower
            if not env.fits(rot, x, y):
                continue
            while env.fits(rot, x, y + 1):
                y += 1
            board = [row[:] for row in env.board]
            for r, c in env.cells(rot, x, y):
                board[r][c] = 1
            value = placement_value(board)
            if best is None or value > best:
                best, target = value, (rot, x)
    return target


def test_c_block_equals_the_reference_through_line_clears_and_levels():
    n, seed, steps = 2, 7, 400
    block = GameBlock("tetris", Tetris, n, max_steps=steps)
    block.vec_reset(seed=seed)
    envs = [Tetris(max_steps=steps) for _ in range(n)]
    obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    np.testing.assert_array_equal(block.buffers.observations, obs)
    targets, pieces, most = [plan(env) for env in envs], [env.pieces for env in envs], 0
    for t in range(steps):
        actions = []
        for i, env in enumerate(envs):
            if env.pieces != pieces[i]:
                targets[i], pieces[i] = plan(env), env.pieces
            rot, x = targets[i]
            actions.append(3 if env.rot != rot else 1 if env.x > x else 2 if env.x < x else 5)
        episodes = block.vec_step(np.array(actions, dtype=np.int64))
        for i, env in enumerate(envs):
            obs[i], reward, terminated, truncated, info = env.step(actions[i])
            assert block.buffers.rewards[i] == np.float32(reward), (t, i)
            if terminated or truncated:
                k = episodes.env_ids.tolist().index(i)
                assert episodes.metrics["score"][k] == info["score"] and episodes.returns[k] == info["score"]
                most = max(most, info["lines"])
                obs[i], pieces[i] = env.reset()[0], -1
        np.testing.assert_array_equal(block.buffers.observations, obs, err_msg=f"step {t}")
    assert max([most, *(env.lines for env in envs)]) >= 10  # level 2 reached: its points doubled


PLACES = 2 * CELLS + 20  # where the placements start: mask (40), features (4 x 40), leftmost column (10)


def test_the_placements_are_tetris_places_key_and_the_column_is_the_pieces_leftmost():
    env, place = Tetris(), TetrisPlace()
    env.reset(seed=4)
    place.reset(seed=4)
    for board in (place.board, env.board):
        board[H - 1] = [1] * (W - 1) + [0]
        board[H - 3][2] = 1
    for _ in range(3):
        obs, *_ = env.step(2)  # right: the piece moves, its placements stay those of its type
    keys = place.observe()
    assert env.piece == place.piece
    np.testing.assert_array_equal(obs[PLACES : PLACES + PLACEMENTS], keys["action_mask"])
    np.testing.assert_array_equal(obs[PLACES + PLACEMENTS : PLACES + (1 + FEATURES) * PLACEMENTS], keys["placements"])
    column = obs[PLACES + (1 + FEATURES) * PLACEMENTS :]
    assert column.shape == (W,) and column.sum() == 1
    assert column.argmax() == min(c for _, c in env.cells(env.rot, env.x, env.y))


def navigate(obs: np.ndarray) -> np.ndarray:
    """Keys from the observation alone: the placement whose drop scores best (3 x rows filled - 4 x cells
    covered - height - bumpiness change, on the observed scaled features), reached by rotating first,
    then moving; then a hard drop."""
    mask = obs[:, PLACES : PLACES + PLACEMENTS]
    f = obs[:, PLACES + PLACEMENTS : PLACES + (1 + FEATURES) * PLACEMENTS].reshape(-1, FEATURES, PLACEMENTS)
    score = 3 * 4 * f[:, 0] - 4 * 4 * f[:, 1] - H * f[:, 2] - 16 * f[:, 3]
    best = np.where(mask > 0, score, -np.inf).argmax(1)
    rot = obs[:, 2 * CELLS + 7 : 2 * CELLS + 11].argmax(1)
    column = obs[:, PLACES + (1 + FEATURES) * PLACEMENTS :].argmax(1)
    return np.where(rot != best // W, 3, np.where(column > best % W, 1, np.where(column < best % W, 2, 5))).astype(np.int64)


def test_a_player_reading_only_the_placements_scores_past_the_mastery_bar():
    """The observation is enough for mastery with the moves one at a time: choosing the best-scoring
    placement and steering the piece there (the C game, the first 4 games from seed 0) averages more than
    the solved level of 10,000 points; with ``placements=False`` the same player has nothing to read."""
    block = GameBlock("tetris", Tetris, 4, max_steps=20_000)
    block.vec_reset(seed=0)
    ended = []
    while len(ended) < 4:
        obs = block.buffers.observations
        episodes = block.vec_step(navigate(obs))
        ended += [float(s) for s in episodes.metrics.get("score", [])]
        if len(ended) < 4 and block.buffers.observations[:, PLACES:].sum() == 0:
            pytest.fail("the placements went blank")
    assert np.mean(ended[:4]) > 10_000.0, ended
    off = GameBlock("tetris", Tetris, 2, placements=False)
    off.vec_reset(seed=0)
    assert off.buffers.observations.shape[1] == OBS and not off.buffers.observations[:, PLACES:].any()
    off.vec_step(np.full(2, 2, dtype=np.int64))
    assert not off.buffers.observations[:, PLACES:].any()
    with pytest.raises(ValueError, match="placements must be true or false"):
        Tetris(placements=2)


def test_c_block_equals_the_reference_without_the_placements():
    block = GameBlock("tetris", Tetris, 2, max_steps=60, placements=False)
    block.vec_reset(seed=3)
    envs = [Tetris(max_steps=60, placements=False) for _ in range(2)]
    obs = np.stack([env.reset(seed=3 + i)[0] for i, env in enumerate(envs)])
    rng = np.random.default_rng(0)
    for t in range(200):
        actions = rng.integers(0, 6, 2)
        block.vec_step(actions)
        for i, env in enumerate(envs):
            obs[i], _, terminated, truncated, _ = env.step(int(actions[i]))
            if terminated or truncated:
                obs[i] = env.reset()[0]
        np.testing.assert_array_equal(block.buffers.observations, obs, err_msg=f"step {t}")
