"""Pac-Man's rules: pellets and power pellets score, frightened ghosts are eaten for 200, 400, 800, 1600,
a chasing ghost costs a life, the last pellet clears the level, the ghosts' targets (the C game equals
this reference bit for bit: test_games.py)."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.games.pacman import (
    CHASING,
    DOWN,
    EMPTY,
    FRIGHTENED,
    HOUSE,
    LEFT,
    PELLET,
    POWER,
    RIGHT,
    UP,
    Pacman,
)


def quiet(**kwargs) -> Pacman:
    """A game whose ghosts all stay in the house for a long time."""
    env = Pacman(release_steps=1000, **kwargs)
    env.reset(seed=0)
    env.gstate[0], env.gx[0], env.gy[0], env.gwait[0] = HOUSE, *env.homes[0], 1000
    return env


def test_the_mazes_hold_the_arcade_counts_and_every_pellet_is_reachable():
    env = Pacman(maze="classic")
    env.reset(seed=0)
    assert (env.width, env.height, env.total) == (28, 31, 244)
    env = Pacman()
    env.reset(seed=0)
    assert (env.width, env.height, env.total) == (19, 21, 150)
    for maze in ("classic", "small"):
        env = Pacman(maze=maze)
        env.reset(seed=0)
        seen, todo = {env.start}, [env.start]
        while todo:
            x, y = todo.pop()
            for d in range(4):
                if env.open(x, y, d) and env.moved(x, y, d) not in seen:
                    seen.add(env.moved(x, y, d))
                    todo.append(env.moved(x, y, d))
        pellets = {(x, y) for y, row in enumerate(env.cells) for x, c in enumerate(row) if c in (PELLET, POWER)}
        assert pellets <= seen and env.exit in seen


def test_a_pellet_scores_10_and_pac_man_keeps_going_when_the_turn_is_blocked():
    env = quiet()
    x, y = env.px, env.py
    _, reward, *_ = env.step(LEFT)
    assert (env.px, env.py) == (x - 1, y) and reward == np.float32(0.1) and env.score == 10
    assert env.cells[y][x - 1] == EMPTY and env.pellets == env.total - 1
    env.step(DOWN)  # a wall below: keeps moving left
    assert (env.px, env.py) == (x - 2, y) and env.pdir == LEFT


def test_a_power_pellet_frightens_the_ghosts_and_eating_them_doubles():
    env = quiet()
    env.cells[env.py][env.px - 1] = POWER
    for i in range(3):
        env.gstate[i], env.gx[i], env.gy[i] = CHASING, 1, 1
    _, reward, *_ = env.step(LEFT)
    assert reward == np.float32(0.5) and env.gstate[:3] == [FRIGHTENED] * 3 and env.gstate[3] == HOUSE
    assert env.frightened_left == env.frightened_steps
    points = []
    for i in range(3):  # each frightened ghost walks onto Pac-Man's next cell
        env.gx[i], env.gy[i] = env.px - 1, env.py
        env.cells[env.py][env.px - 1] = EMPTY
        _, reward, *_ = env.step(LEFT)
        points.append(round(reward * 100))
        assert env.gstate[i] == HOUSE and (env.gx[i], env.gy[i]) == env.homes[i]
    assert points == [200, 400, 800] and env.eaten == 3


def test_a_chasing_ghost_costs_a_life_and_the_last_life_ends_the_game():
    env = quiet(lives=2)
    env.gstate[0], env.gx[0], env.gy[0] = CHASING, env.px - 1, env.py
    _, _, terminated, _, _ = env.step(LEFT)
    eaten = env.total - env.pellets
    assert not terminated and env.lives_left == 1 and (env.px, env.py) == env.start and eaten == 1
    assert env.gstate == [CHASING, HOUSE, HOUSE, HOUSE]  # a new round: Blinky outside, the others home
    env.gwait = [0, 1000, 1000, 1000]
    env.gx[0], env.gy[0], env.gdir[0] = env.px - 1, env.py, RIGHT  # head-on: they swap cells
    env.cells[env.py][env.px - 1] = EMPTY
    _, _, terminated, _, info = env.step(LEFT)
    assert terminated and info["levels"] == 0.0 and info["pellets"] == 1.0


def test_the_last_pellet_clears_the_level_and_the_next_starts_with_every_pellet_back():
    env = quiet()
    for row in env.cells:
        for x, c in enumerate(row):
            if c in (PELLET, POWER):
                row[x] = EMPTY
    env.cells[env.py][env.px + 1] = PELLET
    env.pellets = 1
    obs, reward, terminated, truncated, info = env.step(RIGHT)
    assert not terminated and not truncated and reward == np.float32(0.1) and env.levels == 1
    assert env.pellets == env.total == 150 and (env.px, env.py) == env.start
    assert obs[-56:].sum() == np.float32(150 / 16)  # the pellet map: every pellet back
    env.max_steps = env.played + 1
    *_, info = env.step(LEFT)
    assert info["levels"] == 1.0


def test_ghost_targets_follow_the_arcade_rules_in_chase():
    env = quiet()
    env.phase = 1  # chase
    env.px, env.py, env.pdir = 9, 15, UP
    env.gx, env.gy = [3, 5, 7, 9], [1, 1, 3, 13]
    assert env.target(0) == (9, 15)  # Blinky: Pac-Man
    assert env.target(1) == (9, 11)  # Pinky: 4 cells ahead
    assert env.target(2) == (2 * 9 - 3, 2 * 13 - 1)  # Inky: Blinky mirrored through 2 cells ahead
    assert env.target(3) == (0, env.height)  # Clyde within 8 cells: its corner
    env.gx[3], env.gy[3] = 1, 1
    assert env.target(3) == (9, 15)
    env.phase = 2  # scatter: the corners
    assert [env.target(i) for i in range(4)] == [(16, -4), (2, -4), (18, 21), (0, 21)]


def test_the_mode_switch_reverses_the_ghosts_outside_the_house():
    env = Pacman(scatter_steps=3, ghost_speed=100, release_steps=1000)
    env.reset(seed=0)
    env.step(LEFT)
    env.step(LEFT)
    before, where = env.gdir[0], (env.gx[0], env.gy[0])
    env.step(LEFT)  # the scatter phase ends: Blinky turns back
    assert env.phase == 1 and env.phase_left == env.chase_steps
    assert env.gdir[0] == (before + 2) % 4 and (env.gx[0], env.gy[0]) == env.moved(*where, env.gdir[0])
    assert env.gstate[1:] == [HOUSE] * 3 and env.greverse == [False] * 4


def test_max_steps_truncates():
    env = quiet(max_steps=5)
    for _ in range(4):
        assert env.step(UP)[3] is False
    _, _, terminated, truncated, info = env.step(UP)
    assert truncated and not terminated and set(info) == {"score", "levels", "pellets", "ghosts"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"maze": "big"}, "pacman: maze must be one of"),
        ({"lives": 0}, "pacman: lives must be between 1 and 9"),
        ({"ghost_speed": 101}, "pacman: ghost_speed must be between 1 and 100"),
        ({"frightened_steps": 0}, "pacman: frightened_steps must be >= 1"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        Pacman(**kwargs)
    assert "\n" not in str(info.value)
