"""English draughts rules on hand-set boards (the C game equals this reference bit for bit: test_games.py)."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.games.checkers import EMPTY, FIRST_KING, FIRST_MAN, SECOND_KING, SECOND_MAN, Checkers, square

UL, UR, DL, DR = range(4)


def index(row: int, col: int) -> int:
    """The dark square's number (row-major over the squares with row + column odd)."""
    k = row * 4 + col // 2
    assert square(k) == (row, col)
    return k


def act(row: int, col: int, direction: int) -> int:
    return 4 * index(row, col) + direction


def board(pieces: dict, mover: int = 0, **kwargs) -> Checkers:
    env = Checkers(**kwargs)
    env.reset(seed=0)
    env.board[:] = EMPTY
    for cell, piece in pieces.items():
        env.board[cell] = piece
    env.mover = mover
    env.generate()
    return env


def play(env: Checkers, action: int):
    seat = env.possible_agents[env.mover]
    obs, rewards, terms, truncs, infos = env.step({seat: action, "first" if seat == "second" else "second": 0})
    return obs, rewards, terms["first"], truncs["first"], infos["first"]


def legal(env: Checkers) -> list[int]:
    return [int(a) for a in np.nonzero(env.legal)[0]]


def test_the_opening_position_and_its_seven_moves():
    env = Checkers()
    obs, _ = env.reset(seed=0)
    assert (env.board == FIRST_MAN).sum() == 12 and (env.board == SECOND_MAN).sum() == 12
    assert legal(env) == [
        act(5, 0, UR),
        act(5, 2, UL),
        act(5, 2, UR),
        act(5, 4, UL),
        act(5, 4, UR),
        act(5, 6, UL),
        act(5, 6, UR),
    ]
    assert obs["first"]["action_mask"].sum() == 7 and obs["second"]["action_mask"].tolist() == [1] + [0] * 127


def test_men_move_forward_only_kings_both_ways():
    env = board({(4, 3): FIRST_MAN, (0, 1): SECOND_MAN})
    assert legal(env) == [act(4, 3, UL), act(4, 3, UR)]
    env = board({(4, 3): FIRST_KING, (0, 1): SECOND_MAN})
    assert legal(env) == [act(4, 3, d) for d in range(4)]
    env = board({(4, 3): FIRST_MAN, (2, 1): SECOND_MAN}, mover=1)
    assert legal(env) == [act(2, 1, DL), act(2, 1, DR)]


def test_a_capture_is_compulsory_and_removes_the_jumped_piece():
    env = board({(5, 2): FIRST_MAN, (6, 5): FIRST_MAN, (4, 3): SECOND_MAN, (0, 7): SECOND_MAN})
    assert legal(env) == [act(5, 2, UR)]  # the step moves of (6, 5) are not allowed
    _, _, terminated, _, _ = play(env, act(6, 5, UL))  # illegal: the jump is played instead
    assert env.illegal == 1 and env.board[3, 4] == FIRST_MAN and env.board[4, 3] == EMPTY
    assert env.mover == 1 and not terminated and env.quiet == 0


def test_a_multi_jump_continues_with_the_same_piece_and_player():
    pieces = {(7, 0): FIRST_MAN, (6, 1): SECOND_MAN, (4, 3): SECOND_MAN, (4, 1): SECOND_MAN, (0, 7): SECOND_MAN}
    env = board(pieces)
    obs, *_ = play(env, act(7, 0, UR))  # to (5, 2); jumps on: over (4, 3) or (4, 1)
    assert env.mover == 0 and env.chain == (5, 2) and legal(env) == [act(5, 2, UL), act(5, 2, UR)]
    assert obs["first"]["board"][129] == 1.0 and obs["first"]["board"][128] == 1.0
    play(env, act(5, 2, UR))  # to (3, 4): nothing more to jump
    assert env.mover == 1 and env.chain is None and env.board[4, 3] == EMPTY and env.board[4, 1] == SECOND_MAN


def test_crowning_ends_the_move_even_when_a_king_could_jump_on():
    env = board({(2, 1): FIRST_MAN, (1, 2): SECOND_MAN, (1, 4): SECOND_MAN, (0, 7): SECOND_MAN})
    play(env, act(2, 1, UR))  # to (0, 3), crowned; as a king it could jump (1, 4) next
    assert env.board[0, 3] == FIRST_KING and env.mover == 1 and env.chain is None


def test_a_player_without_a_legal_move_loses():
    env = board({(4, 3): FIRST_MAN, (3, 2): SECOND_MAN})
    _, rewards, terminated, truncated, info = play(env, act(4, 3, UL))
    assert terminated and not truncated and rewards == {"first": 1.0, "second": -1.0}  # its last piece was taken
    assert info["first_win"] == 1.0 and info["second_win"] == 0.0
    env = board({(7, 0): FIRST_MAN, (6, 1): SECOND_MAN, (5, 2): SECOND_MAN, (0, 1): SECOND_KING}, mover=1)
    _, rewards, terminated, *_ = play(env, act(0, 1, DL))  # first's only man is blocked
    assert terminated and rewards == {"first": -1.0, "second": 1.0}


def test_quiet_plies_draw_and_max_plies_truncate():
    env = board({(7, 0): FIRST_KING, (0, 7): SECOND_KING}, draw_plies=2)
    play(env, act(7, 0, UR))
    _, rewards, terminated, truncated, info = play(env, act(0, 7, DL))
    assert terminated and not truncated and rewards == {"first": 0.0, "second": 0.0} and info["draw"] == 1.0
    env = board({(7, 0): FIRST_KING, (0, 7): SECOND_KING}, max_plies=1)
    _, _, terminated, truncated, info = play(env, act(7, 0, UR))
    assert truncated and not terminated and info["draw"] == 0.0


def test_observations_are_from_each_agents_side():
    env = board({(7, 0): FIRST_KING, (0, 7): SECOND_MAN})
    obs = env.observations()
    first, second = obs["first"]["board"], obs["second"]["board"]
    assert first[32 + index(7, 0)] == 1.0 and first[64 + index(0, 7)] == 1.0 and first[128] == 1.0
    assert second[index(0, 7)] == 1.0 and second[96 + index(7, 0)] == 1.0 and second[128] == 0.0


@pytest.mark.parametrize(("kwargs", "key"), [({"draw_plies": 0}, "draw_plies"), ({"max_plies": 10_001}, "max_plies")])
def test_bad_settings_are_one_line_errors_naming_the_key(kwargs, key):
    with pytest.raises(ValueError, match=key) as info:
        Checkers(**kwargs)
    assert "\n" not in str(info.value)
