"""Snake's rules on hand-placed boards (the C game equals this reference bit for bit: test_games.py)."""

from __future__ import annotations

from collections import deque

from pufferbox_ocean.games.snake import BODY, EMPTY, FOOD, Snake

RIGHT, LEFT, UP = 3, 2, 0


def board(snake0: list[tuple[int, int]], heading: int, food: list[tuple[int, int]] = ()) -> Snake:
    """Snake 0 as given (head last), no food but ``food``, the other snakes on row 20 heading right."""
    env = Snake()
    env.reset(seed=0)
    for y in range(1, env.height - 1):
        for x in range(1, env.width - 1):
            env.grid[y][x] = EMPTY
    layout = {0: snake0, **{i: [(2 * i, 20)] for i in range(1, 8)}}
    for i, cells in layout.items():
        env.bodies[i], env.heading[i], env.pending[i] = deque(cells), RIGHT, 0
        for x, y in cells:
            env.grid[y][x] = BODY + i
    env.heading[0] = heading
    for x, y in food:
        env.grid[y][x] = FOOD
    return env


def step(env: Snake, action0: int) -> tuple[float, float]:
    actions = {a: RIGHT for a in env.possible_agents} | {"snake_0": action0}
    _, rewards, _, _, _ = env.step(actions)
    return rewards["snake_0"], rewards["snake_1"]


def test_eating_food_grows_the_snake_and_the_food_is_replaced():
    env = board([(4, 5), (5, 5)], RIGHT, food=[(6, 5)])
    assert step(env, RIGHT) == (1.0, 0.0)
    assert list(env.bodies[0]) == [(4, 5), (5, 5), (6, 5)] and env.eaten[0] == 1
    assert sum(row.count(FOOD) for row in env.grid) == 1  # one new food item somewhere else
    assert step(env, RIGHT) == (0.0, 0.0) and list(env.bodies[0]) == [(5, 5), (6, 5), (7, 5)]


def test_a_wall_kills_and_the_snake_respawns_with_length_one():
    env = board([(2, 5), (1, 5)], LEFT)
    assert step(env, LEFT) == (-1.0, 0.0)
    assert env.deaths[0] == 1 and len(env.bodies[0]) == 1 and env.pending[0] == 2
    assert env.grid[5][1] == EMPTY and env.grid[5][2] == EMPTY  # the old body is gone


def test_a_snake_that_has_not_moved_yet_blocks_and_moving_along_ones_tail_is_safe():
    env = board([(6, 22), (6, 21)], UP)  # (6, 20) holds snake 3, which moves after snake 0
    assert step(env, UP) == (-1.0, 0.0)
    env = board([(5, 5), (6, 5), (6, 6), (5, 6)], UP)  # a 2 x 2 loop, head (5, 6) below the tail (5, 5)
    assert step(env, UP) == (0.0, 0.0) and list(env.bodies[0]) == [(6, 5), (6, 6), (5, 6), (5, 5)]


def test_the_reverse_of_the_heading_is_ignored():
    env = board([(4, 5), (5, 5)], RIGHT)
    assert step(env, LEFT) == (0.0, 0.0)
    assert list(env.bodies[0]) == [(5, 5), (6, 5)] and env.heading[0] == RIGHT
