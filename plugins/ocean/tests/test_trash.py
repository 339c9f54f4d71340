"""Trash pickup's rules on hand-placed boards (the C game equals this reference bit for bit: test_games.py)."""

from __future__ import annotations

from pufferbox_ocean.games.trash import Trash

STAY, UP, DOWN, LEFT, RIGHT = range(5)


def board(positions, items, bins, num_trash=None) -> Trash:
    env = Trash(num_trash=num_trash or len(items), num_bins=len(bins))
    env.reset(seed=0)
    env.positions, env.bins = list(positions), list(bins)
    env.ground = {cell: i for i, cell in enumerate(items)}
    return env


def step(env: Trash, *actions: int):
    _, rewards, terms, truncs, infos = env.step(dict(zip(env.possible_agents, actions)))
    return [rewards[a] for a in env.possible_agents], terms["agent_0"], truncs["agent_0"], infos["agent_0"]


def test_an_item_is_picked_up_by_stepping_on_it_and_delivered_on_a_bin():
    env = board([(1, 1), (8, 8), (8, 6)], items=[(2, 1), (5, 5)], bins=[(3, 1)])
    assert step(env, RIGHT, STAY, STAY)[0] == [0.0, 0.0, 0.0] and env.carrying[0] and (2, 1) not in env.ground
    rewards, terminated, truncated, info = step(env, RIGHT, STAY, STAY)
    assert rewards == [1.0, 0.0, 0.0] and not env.carrying[0] and env.delivered == 1
    assert not terminated and not truncated and info == {}


def test_an_agent_carries_one_item_at_most():
    env = board([(1, 1), (8, 8), (8, 6)], items=[(2, 1), (3, 1)], bins=[(0, 9)])
    step(env, RIGHT, STAY, STAY)
    step(env, RIGHT, STAY, STAY)  # onto the second item with the first in hand: it stays on the ground
    assert env.carrying[0] and env.ground == {(3, 1): 1}


def test_moves_off_the_grid_or_onto_another_agent_are_blocked():
    env = board([(0, 0), (1, 0), (9, 9)], items=[(5, 5)], bins=[(4, 4)])
    step(env, UP, LEFT, DOWN)
    assert env.positions == [(0, 0), (1, 0), (9, 9)]
    step(env, DOWN, LEFT, STAY)  # agent 0 moves first, so agent 1 may take its old cell
    assert env.positions == [(0, 1), (0, 0), (9, 9)]


def test_delivering_the_last_item_ends_the_episode_for_every_agent():
    env = board([(1, 1), (8, 8), (8, 6)], items=[(2, 1)], bins=[(3, 1)])
    step(env, RIGHT, STAY, STAY)
    rewards, terminated, truncated, info = step(env, RIGHT, STAY, STAY)
    assert rewards == [1.0, 0.0, 0.0] and terminated and not truncated and env.agents == []
    assert info == {"delivered": 1.0, "cleared": 1.0}
