"""Connect Four against the searching bot: it wins when it can, blocks what it sees, loses nothing to a
full column; the game's ends; the C block (alpha-beta) step for step with the reference (plain minimax) at
depths 3 and 4, the default (the bit-exact sweep in test_games.py runs a shallower bot)."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.connect4_bot import Connect4Bot


def set_up(columns: list[str], bot_depth: int = 4, seed: int = 0) -> Connect4Bot:
    """A game whose columns hold discs bottom-up (x the agent's, o the bot's)."""
    env = Connect4Bot(bot_depth=bot_depth)
    env.reset(seed=seed)
    for col, discs in enumerate(columns):
        for ch in discs:
            env.drop(col, 1 if ch == "x" else 2)
    return env


def test_the_bot_takes_a_win_at_hand():
    env = set_up(["x", "x", "", "ooo", "x", "", "x"])
    assert env.bot_column() == 3
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == -1.0 and info["loss"] == 1.0


def test_the_bot_blocks_the_agent_s_three_in_a_row_when_it_looks_two_plies_ahead():
    columns = ["o", "x", "x", "x", "", "o", "o"]  # the agent's three along the bottom, open at column 4
    picks = {depth: set() for depth in (1, 2)}
    for depth in (1, 2):
        env = set_up(columns, bot_depth=depth)
        for seed in range(30):
            env.rng = type(env.rng)(seed)
            picks[depth].add(env.bot_column())
    assert picks[2] == {4}  # anything else loses at once
    assert picks[1] == set(range(7))  # one ply sees no threat: every column scores 0


def test_a_full_column_loses_at_once():
    env = set_up(["xoxoxo"])
    obs, reward, terminated, _, info = env.step(0)
    assert terminated and reward == -1.0 and info["illegal"] == 1.0
    assert obs["action_mask"].tolist() == [0.0] + [1.0] * 6


def test_four_in_a_row_wins_for_the_agent():
    env = set_up(["xxx", "oo", "o"])
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 1.0 and info == {"win": 1.0, "loss": 0.0, "draw": 0.0, "illegal": 0.0}


def test_a_full_board_is_a_draw():
    # 40 discs without four in a row; the agent's 41st and the bot's 42nd make none either
    env = Connect4Bot(bot_depth=2)
    env.reset(seed=0)
    for col in range(7):
        for row in range(6 if col > 1 else 5):
            env.drop(col, 1 + ((row // 2) + col) % 2 if (row, col) != (0, 0) else 2)
    assert env.discs == 40
    _, reward, terminated, _, info = env.step(0)
    assert terminated and reward == 0.0 and info["draw"] == 1.0 and env.discs == 42


@pytest.mark.parametrize("depth", [3, 4])
def test_c_with_alpha_beta_equals_the_reference_s_plain_minimax(depth):
    n, rng = 3, np.random.default_rng(5)
    envs = [Connect4Bot(bot_depth=depth) for _ in range(n)]
    block = GameBlock("connect4_bot", Connect4Bot, n, bot_depth=depth)
    block.vec_reset(seed=7)
    for i, env in enumerate(envs):
        env.reset(seed=7 + i)
    for _ in range(40):
        obs = [env.observe() for env in envs]
        actions = np.array([[rng.choice(np.flatnonzero(o["action_mask"]))] for o in obs], dtype=np.int64)
        block.vec_step(actions)
        for i, env in enumerate(envs):
            out, reward, terminated, _, _ = env.step(int(actions[i, 0]))
            if terminated:
                out = env.reset()[0]
            assert block.buffers.rewards[i] == reward
            np.testing.assert_array_equal(block.buffers.observations[i], block.obs_spec.flatten(out))
