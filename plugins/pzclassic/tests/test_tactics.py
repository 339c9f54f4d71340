"""The training opponents (``league.scripted_opponent``) against PettingZoo's own rules: in random
positions the one-ply player takes a win whenever the game engine says one exists, else blocks the
opponent's immediate win; the perfect tic-tac-toe player never loses."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.classic import connect_four_v3, tictactoe_v3
from pufferbox_pzclassic import tactics


def replay(make, moves: list[int]):
    env = make()
    env.reset(seed=0)
    for move in moves:
        env.step(move)
    return env


def wins_after(make, history: list[int], moves: list[int]) -> bool:
    """Whether the agent making the last of ``moves`` (after ``history``) wins with it (a deep copy of a
    PettingZoo env does not step the copy's board: each line is replayed)."""
    env = replay(make, history)
    for move in moves:
        if any(env.terminations.values()):
            return False
        mover = env.agent_selection
        env.step(move)
    return bool(env.terminations[mover]) and env.rewards[mover] > 0


def oracle(make, history: list[int]) -> tuple[set[int], set[int], set[int]]:
    """The mover's legal, winning and blocking moves, by playing them out in the engine."""
    env = replay(make, history)
    legal = {int(m) for m in np.flatnonzero(env.observe(env.agent_selection)["action_mask"])}
    wins = {m for m in legal if wins_after(make, history, [m])}
    threats = {c for c in legal if any(wins_after(make, history, [d, c]) for d in legal - {c})}  # their win at c next
    return legal, wins, threats


def random_positions(make, count: int, seed: int):
    """``count`` (env, moves) of unfinished games after random legal moves."""
    rng = np.random.default_rng(seed)
    while count:
        env, history = replay(make, []), []
        for _ in range(int(rng.integers(2, 30))):
            if any(env.terminations.values()):
                break
            history.append(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
            env.step(history[-1])
        if not any(env.terminations.values()):
            count -= 1
            yield env, history


@pytest.mark.parametrize(
    "make, move", [(tictactoe_v3.env, tactics.tictactoe), (connect_four_v3.env, tactics.connect_four)], ids=["ttt", "c4"]
)
def test_takes_a_win_else_blocks_else_plays_legal(make, move):
    rng, seen = np.random.default_rng(1), {"win": 0, "block": 0}
    for env, history in random_positions(make, 40 if make is tictactoe_v3.env else 25, seed=2):
        obs = env.observe(env.agent_selection)
        legal, wins, threats = oracle(make, history)
        pick = int(move({"observation": obs["observation"][None]}, obs["action_mask"][None] != 0, rng)[0])
        assert pick in legal
        if wins:
            assert pick in wins
            seen["win"] += 1
        elif threats:
            assert pick in threats
            seen["block"] += 1
    assert seen["win"] >= 5 and seen["block"] >= 5  # both rules were exercised


def test_random_among_quiet_moves_and_any_move_for_a_waiting_seat():
    rng = np.random.default_rng(0)
    empty = {"observation": np.zeros((200, 3, 3, 2), np.int8)}
    picks = tactics.tictactoe(empty, np.ones((200, 9), bool), rng)
    assert set(picks.tolist()) == set(range(9))  # no tactic on an empty board: uniform over the legal moves
    waiting = tactics.connect_four({"observation": np.zeros((3, 6, 7, 2), np.int8)}, np.zeros((3, 7), bool), rng)
    assert ((waiting >= 0) & (waiting < 7)).all()  # an all-zero mask (not this seat's turn): ignored, any column


def test_perfect_tictactoe_never_loses_and_draws_against_itself():
    """The solved player, in PettingZoo's engine: tic-tac-toe is a draw, the replies to an edge opening that
    draw are the adjacent corners, the centre and the opposite edge, and no opponent beats it."""
    assert tactics.solved(0, 0) == (0.0, 0b111111111)  # every opening draws
    value, best = tactics.solved(0, 1 << 1)  # X on the top edge (cell 1), O to move
    assert value == 0.0 and {c for c in range(9) if best >> c & 1} == {0, 2, 4, 7}
    rng = np.random.default_rng(5)
    for game in range(120):
        perfect_seat, env = game % 3, replay(tictactoe_v3.env, [])  # 0/1: perfect vs random; 2: both perfect
        while not any(env.terminations.values()):
            mover = env.agent_selection
            obs = env.observe(mover)
            if perfect_seat == 2 or mover == env.possible_agents[perfect_seat]:
                move = int(
                    tactics.tictactoe_perfect({"observation": obs["observation"][None]}, obs["action_mask"][None] != 0, rng)[
                        0
                    ]
                )
            else:
                move = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            env.step(move)
        rewards = [env.rewards[a] for a in env.possible_agents]
        if perfect_seat == 2:
            assert rewards == [0, 0]
        else:
            assert rewards[perfect_seat] >= 0
