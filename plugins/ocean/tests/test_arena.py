"""Arena's rules: a ration feeds and regrows, an enemy dies in three hits (a teammate takes none), an
empty stomach starves, the dead respawn, and a team reaching score_limit ends the episode for all."""

from __future__ import annotations

import numpy as np
from pufferbox_ocean.games.arena import AGENTS, HP, MEAL, STOMACH, Arena

STAY, DOWN, RIGHT, ATTACK_RIGHT = 0, 2, 4, 8


def arena(**kwargs) -> Arena:
    env = Arena(**kwargs)
    env.reset(seed=0)
    return env


def actions(env: Arena, **by_index) -> dict:
    return {a: by_index.get(f"a{i}", STAY) for i, a in enumerate(env.possible_agents)}


def move_to(env: Arena, i: int, cell: int) -> None:
    env.occupant[env.pos[i]] = -1
    env.occupant[cell] = i
    env.pos[i] = cell


def free_cell_pair(env: Arena) -> int:
    """A free cell with a free right neighbour and no rations on either."""
    for c in np.flatnonzero((env.wall == 0) & (env.occupant < 0) & (env.ration == 0)):
        if env.occupant[c + 1] < 0 and not env.wall[c + 1] and not env.ration[c + 1]:
            return int(c)
    raise AssertionError("no free pair")


def test_a_ration_feeds_pays_one_and_regrows_after_regrow_steps():
    env = arena(regrow=3)
    c = free_cell_pair(env)
    move_to(env, 0, c)
    env.ration[c + 1] = 1
    env.stomach[0] = 5
    _, rewards, *_ = env.step(actions(env, a0=RIGHT))
    assert rewards["agent_0"] == 1.0 and env.pos[0] == c + 1 and env.ration[c + 1] == 0
    assert env.stomach[0] == 5 + MEAL - 1  # ate, then digested one unit
    for _ in range(2):
        env.step(actions(env))
        assert env.ration[c + 1] == 0
    env.step(actions(env))  # the third step after the meal's
    assert env.ration[c + 1] == 1


def test_an_enemy_dies_in_three_hits_and_respawns_a_teammate_takes_none():
    env = arena()
    c = free_cell_pair(env)
    move_to(env, 0, c)
    move_to(env, 4, c + 1)  # agent 4 is agent 0's teammate (team 0)
    env.step(actions(env, a0=ATTACK_RIGHT))
    assert env.hp[4] == HP
    move_to(env, 4, free_cell_pair(env))
    move_to(env, 1, c + 1)
    for _ in range(3):
        _, rewards, *_ = env.step(actions(env, a0=ATTACK_RIGHT))
    assert rewards["agent_0"] >= 1.0 and rewards["agent_1"] <= -1.0
    assert env.score[0] == 1 and env.kills == 1 and env.alive[1] and env.hp[1] == HP and env.pos[1] != c + 1


def test_an_empty_stomach_starves_the_agent_and_it_respawns_fed():
    env = arena()
    env.ration[:] = 0
    env.stomach[2], env.hp[2] = 0, 1
    _, rewards, *_ = env.step(actions(env))
    assert rewards["agent_2"] == -1.0 and env.starved == 1
    assert env.hp[2] == HP and env.stomach[2] == STOMACH


def test_reaching_the_score_limit_ends_the_episode_for_every_agent():
    env = arena(score_limit=1)
    env.score[3] = 1
    _, _, terminations, truncations, infos = env.step(actions(env))
    assert all(terminations.values()) and not any(truncations.values()) and len(terminations) == AGENTS
    assert infos["agent_255"]["decided"] == 1.0 and env.agents == []
