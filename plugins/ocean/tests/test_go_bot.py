"""Go against the built-in bot: the bot's levels on set-up boards, refused moves, the end by passes and by
the move limit, and the C block step for step with the reference (the bit-exact sweep is test_games.py)."""

from __future__ import annotations

import numpy as np
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.go import BLACK, EMPTY, MAX_CELLS, WHITE
from pufferbox_ocean.games.go_bot import GoBot


def board_env(rows: list[str], seed: int = 0) -> GoBot:
    """A 5x5 game with the board set from text (x black, o white, . empty), black to move."""
    env = GoBot(size=5)
    env.reset(seed=seed)
    env.go.board[:] = [[{".": EMPTY, "x": BLACK, "o": WHITE}[ch] for ch in row] for row in rows]
    env.go.before_last_ply = env.go.board.copy()
    return env


def test_the_bot_takes_a_group_in_atari_before_saving_its_own():
    # black (1,1) has one liberty left at (2,1); white (0,4) is in atari too (its liberty (1,4))
    env = board_env([".o.xo", "oxo..", ".....", ".....", "....."])
    assert env.bot_point() == 2 * 5 + 1
    env = board_env([".o.xo", "o.o..", ".....", ".....", "....."])  # no black group in atari: save
    assert env.bot_point() == 1 * 5 + 4


def bot_picks(rows: list[str], seeds: int) -> set:
    """The points the bot chooses on a set-up board over generator seeds 0..seeds-1."""
    env, picks = board_env(rows), set()
    for seed in range(seeds):
        env.rng = type(env.rng)(seed)
        picks.add(env.bot_point())
    return picks


def test_the_bot_presses_the_group_with_fewest_liberties():
    # black (2,2) alone has 4 liberties; black (0,0) in the corner 2: the bot plays one of the corner's two
    assert bot_picks(["x....", ".....", "..x..", ".....", "....."], 20) == {1, 5}


def test_without_a_group_to_press_the_bot_plays_any_legal_point():
    assert bot_picks([".....", ".....", ".....", ".....", "....."], 200) == set(range(25))


def test_an_illegal_move_is_refused_and_the_bot_waits_in_c_as_in_the_reference():
    env, block = GoBot(size=5), GameBlock("go_bot", GoBot, 1, size=5)
    first, _ = env.reset(seed=3)
    block.vec_reset(seed=3)
    np.testing.assert_array_equal(block.buffers.observations[0], block.obs_spec.flatten(first))
    for action in (12, 12, 60, 0, 25):  # a move, occupied, off the board, a move, a pass
        obs, reward, terminated, _, _ = env.step(action)
        block.vec_step(np.array([[action]], dtype=np.int64))
        np.testing.assert_array_equal(block.buffers.observations[0], block.obs_spec.flatten(obs))
        assert block.buffers.rewards[0] == reward and block.buffers.terminals[0] == terminated
    assert env.illegal == 2
    assert int((env.go.board == WHITE).sum()) == 3  # one reply to each of the two moves and to the pass


def test_the_move_limit_ends_the_game_scored():
    env = GoBot(size=5, komi_half_points=0, max_moves=2)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(12)
    assert not terminated and info == {}
    _, reward, terminated, truncated, info = env.step(25)  # a pass; the limit scores the board
    assert terminated and not truncated
    margin = env.go.margin_half_points() / 2
    assert info["margin"] == margin and reward == float(np.sign(margin))


def test_two_passes_in_a_row_end_the_game():
    # the bot has no legal point (white can only commit suicide), so it passes; black's pass ends the game
    env = board_env([".x.x.", "x.x.x", ".x.x.", "x.x.x", ".x.x."])
    env.go.moves, env.go.passes = 0, 1  # as if the bot had just passed
    _, reward, terminated, _, info = env.step(25)
    assert terminated and reward == 1.0 and info["win"] == 1.0
    assert info["margin"] == 25 - 7.5
    env = board_env([".x.x.", "x.x.x", ".x.x.", "x.x.x", ".x.x."])
    assert env.bot_point() is None
    _, _, terminated, _, _ = env.step(25)  # black passes, the bot passes: over
    assert terminated and env.go.passes == 2


def test_the_observation_masks_black_s_illegal_points():
    env = board_env(["o.o..", ".o...", ".....", ".....", "....."])
    obs = env.observe()
    legal = obs["action_mask"][:25].reshape(5, 5)
    assert legal[0, 1] == 0.0  # suicide for black
    assert legal[1, 0] == 1.0 and legal[2, 2] == 1.0 and legal[0, 0] == 0.0  # (0, 0) is taken
    assert obs["action_mask"][25] == 1.0 and not obs["action_mask"][26:].any()  # the pass; off the board
    assert obs["board"][:MAX_CELLS].sum() == 0 and obs["board"][MAX_CELLS : 2 * MAX_CELLS].sum() == 3
