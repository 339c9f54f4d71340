"""Robotic warehouse rules on hand-placed floors (the C game equals this reference bit for bit: test_games.py)."""

from __future__ import annotations

import pytest
from pufferbox_ocean.games.rware import AGENTS, GOAL, SLOT, Rware

NOOP, FORWARD, LEFT, RIGHT, TOGGLE = range(5)
UP, RIGHTWARD, DOWN, LEFTWARD = range(4)


def floor(robots, facing, requested=(), **kwargs) -> Rware:
    """Layout 0 (7 x 5, slots at x 1,2,4,5 on y 1,2, goal (3, 3)) with robots placed by hand."""
    env = Rware(**kwargs)
    env.reset(seed=0)
    env.positions, env.facing = list(robots), list(facing)
    env.is_requested = [s in requested for s in range(env.shelves)]
    env.lift_paid = [False] * env.shelves
    return env


def step(env: Rware, *actions: int):
    _, rewards, terms, truncs, infos = env.step(dict(zip(env.possible_agents, actions, strict=True)))
    return [rewards[a] for a in env.possible_agents], terms["robot_0"], truncs["robot_0"], infos["robot_0"]


FAR = [(6, 4), (0, 4), (6, 0)]  # three robots out of the way, facing up


def test_the_layouts_are_the_documented_sizes():
    for layout, (w, h, shelves, goals) in enumerate([(7, 5, 8, 1), (10, 11, 32, 2), (20, 10, 80, 2), (20, 16, 144, 2)]):
        env = Rware(layout=layout, requested=2)
        cells = [c for row in env.floor for c in row]
        assert (env.width, env.height, cells.count(SLOT), cells.count(GOAL)) == (w, h, shelves, goals)


def test_a_requested_shelf_is_lifted_delivered_and_put_back():
    # shelf 2 stands at (1, 2) (slots in row-major order: (1,1) (2,1) (4,1) (5,1) (1,2) ...): index 4
    env = floor([(2, 2), *FAR], [DOWN, UP, UP, UP], requested=(1,))
    rewards, *_ = step(env, TOGGLE, NOOP, NOOP, NOOP)  # lifts shelf 5 at (2, 2)
    assert env.carrying[0] == 5 and rewards[0] == 0.0  # not requested: no lift bonus
    env = floor([(2, 2), *FAR], [DOWN, UP, UP, UP], requested=(5,))
    rewards, *_ = step(env, TOGGLE, NOOP, NOOP, NOOP)
    assert env.carrying[0] == 5 and rewards[0] == 0.5
    step(env, FORWARD, NOOP, NOOP, NOOP)  # down to (2, 3)
    step(env, LEFT, NOOP, NOOP, NOOP)  # facing right
    rewards, terminated, truncated, _ = step(env, FORWARD, NOOP, NOOP, NOOP)  # onto the goal (3, 3)
    assert env.positions[0] == (3, 3) and rewards == [1.0, 0.0, 0.0, 0.0]
    assert env.deliveries == 1 and not env.is_requested[5] and sum(env.is_requested) == 1
    assert not terminated and not truncated
    step(env, TOGGLE, NOOP, NOOP, NOOP)  # the goal is no slot: nothing happens
    assert env.carrying[0] == 5
    step(env, LEFT, NOOP, NOOP, NOOP)  # facing up
    rewards, *_ = step(env, FORWARD, NOOP, NOOP, NOOP)  # (3, 2) is an aisle
    step(env, LEFT, NOOP, NOOP, NOOP)  # facing left: (2, 2) is free, its shelf is carried
    step(env, FORWARD, NOOP, NOOP, NOOP)
    rewards, *_ = step(env, TOGGLE, NOOP, NOOP, NOOP)
    assert env.carrying[0] is None and env.standing[(2, 2)] == 5 and rewards[0] == 0.5 and env.returned == 1


def test_shaping_off_pays_only_deliveries_and_lifts_pay_once_per_request():
    env = floor([(2, 2), *FAR], [DOWN, UP, UP, UP], requested=(5,), shaping=0)
    assert step(env, TOGGLE, NOOP, NOOP, NOOP)[0][0] == 0.0
    env = floor([(2, 2), *FAR], [DOWN, UP, UP, UP], requested=(5,))
    assert step(env, TOGGLE, NOOP, NOOP, NOOP)[0][0] == 0.5
    assert step(env, TOGGLE, NOOP, NOOP, NOOP)[0][0] == 0.0  # put down: not delivered, no bonus
    assert step(env, TOGGLE, NOOP, NOOP, NOOP)[0][0] == 0.0  # lifted again: paid already


def test_a_robot_with_a_shelf_cannot_pass_under_standing_shelves_one_without_can():
    env = floor([(3, 1), *FAR], [LEFTWARD, UP, UP, UP])
    step(env, FORWARD, NOOP, NOOP, NOOP)
    assert env.positions[0] == (2, 1)  # under shelf 1, empty-handed
    env = floor([(3, 1), *FAR], [LEFTWARD, UP, UP, UP])
    env.carrying[0] = env.standing.pop((1, 1))  # carries shelf 0; shelves 1 and 2 stand left and right of it
    for facing in (LEFTWARD, RIGHTWARD):
        env.facing[0] = facing
        step(env, FORWARD, NOOP, NOOP, NOOP)
        assert env.positions[0] == (3, 1)
    env.facing[0] = DOWN
    step(env, FORWARD, NOOP, NOOP, NOOP)
    assert env.positions[0] == (3, 2)


def test_moves_off_the_floor_are_blocked():
    env = floor([(0, 0), *FAR], [UP, DOWN, UP, UP])
    step(env, FORWARD, FORWARD, NOOP, NOOP)
    assert env.positions[0] == (0, 0) and env.positions[1] == (6, 4)


def test_same_target_goes_to_the_lowest_numbered_robot_and_swaps_are_blocked():
    env = floor([(3, 4), (5, 4), (4, 3), (0, 0)], [RIGHTWARD, LEFTWARD, DOWN, UP])
    step(env, NOOP, FORWARD, FORWARD, NOOP)  # robots 1 and 2 both head for (4, 4): robot 1 goes
    assert env.positions[1] == (4, 4) and env.positions[2] == (4, 3)
    env = floor([(3, 4), (4, 4), (6, 0), (0, 0)], [RIGHTWARD, LEFTWARD, UP, UP])
    step(env, FORWARD, FORWARD, NOOP, NOOP)  # head-on
    assert env.positions[:2] == [(3, 4), (4, 4)]


def test_a_robot_follows_one_that_moves_and_is_stopped_by_one_that_stays():
    env = floor([(0, 4), (1, 4), (2, 4), (6, 0)], [RIGHTWARD, RIGHTWARD, RIGHTWARD, UP])
    step(env, FORWARD, FORWARD, FORWARD, NOOP)  # a train: all move
    assert env.positions[:3] == [(1, 4), (2, 4), (3, 4)]
    step(env, FORWARD, FORWARD, NOOP, NOOP)  # the front one stays: the others stay behind it
    assert env.positions[:3] == [(1, 4), (2, 4), (3, 4)]


def test_a_ring_of_robots_turns_together():
    env = floor([(0, 3), (1, 3), (1, 4), (0, 4)], [RIGHTWARD, DOWN, LEFTWARD, UP])
    step(env, FORWARD, FORWARD, FORWARD, FORWARD)
    assert env.positions == [(1, 3), (1, 4), (0, 4), (0, 3)]


def test_target_deliveries_end_the_episode_and_max_steps_truncate_it():
    env = floor([(2, 2), *FAR], [DOWN, UP, UP, UP], requested=(5,), target_deliveries=1)
    for action in (TOGGLE, FORWARD, LEFT):
        step(env, action, NOOP, NOOP, NOOP)
    rewards, terminated, truncated, info = step(env, FORWARD, NOOP, NOOP, NOOP)
    assert rewards[0] == 1.0 and terminated and not truncated and info == {"deliveries": 1.0, "returned": 0.0}
    env = floor([(2, 2), *FAR], [DOWN, UP, UP, UP], max_steps=2)
    assert step(env, NOOP, NOOP, NOOP, NOOP)[2] is False
    _, terminated, truncated, info = step(env, NOOP, NOOP, NOOP, NOOP)
    assert truncated and not terminated and info["deliveries"] == 0.0


def test_observation_shows_the_window_around_the_robot():
    env = floor([(3, 3), (4, 3), (6, 0), (0, 0)], [UP, UP, UP, UP], requested=(2,))
    obs = env.observations()["robot_0"]
    window = obs[9:].reshape(5, 5, 3)
    robots, shelves, ground = window[..., 0], window[..., 1], window[..., 2]
    assert robots[2, 2] == 1.0 and robots[2, 3] == 1.0 and robots.sum() == 2.0
    assert ground[2, 2] == 1.0 and ground[0, 0] == 0.5 and ground[4, 0] == -1.0  # goal, slot (1, 1), off the floor
    assert shelves[0, 3] == 1.0 and shelves[0, 0] == 0.5  # shelf 2 at (4, 1) is requested
    assert list(obs[2:6]) == [1.0, 0.0, 0.0, 0.0] and obs[0] == 0.5 and obs[1] == 0.75


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"layout": 4}, "layout"),
        ({"requested": 4}, "requested"),
        ({"max_steps": 0}, "max_steps"),
        ({"shaping": 2}, "shaping"),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_key(kwargs, key):
    with pytest.raises(ValueError, match=key) as info:
        Rware(**kwargs)
    assert "\n" not in str(info.value)


def test_every_robot_gets_its_own_row():
    assert len(Rware().possible_agents) == AGENTS
