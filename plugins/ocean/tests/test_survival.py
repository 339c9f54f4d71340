"""Survival's rules: forest feeds and regrows, water is drunk from the next tile, water and stone block,
empty food or water costs health and both half full heal, strikes and shots kill, the dead respawn
after the delay (or stay dead and end the episode when nobody is left), and bad settings are one line."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.games.survival import AGENTS, FOREST, GRASS, HP, MELEE, STONE, WATER, Survival

STAY, UP, DOWN, LEFT, RIGHT, STRIKE_RIGHT, SHOOT = 0, 1, 2, 3, 4, 8, 9


def survival(**kwargs) -> Survival:
    env = Survival(**kwargs)
    env.reset(seed=0)
    return env


def actions(env: Survival, **by_index) -> dict:
    return {a: by_index.get(f"a{i}", STAY) for i, a in enumerate(env.possible_agents)}


def clear(env: Survival) -> int:
    """Turn the map into bare grass with every agent parked in the top row; return a free middle tile."""
    inside = env.tile != STONE
    env.tile[inside] = GRASS
    env.forest[:] = 0.0
    env.occupant[:] = -1
    for i in range(AGENTS):
        place(env, i, env.cell(i % env.size, i // env.size))
    return env.cell(env.size // 2, env.size // 2)


def place(env: Survival, i: int, cell: int) -> None:
    if env.occupant[env.pos[i]] == i:
        env.occupant[env.pos[i]] = -1
    env.occupant[cell] = i
    env.pos[i] = cell


def test_a_forest_ration_fills_food_and_regrows_after_regrow_steps():
    env = survival(regrow=3)
    c = clear(env)
    place(env, 0, c)
    env.tile[c + 1], env.forest[c + 1] = FOREST, 1.0
    env.food[0] = 5
    env.step(actions(env, a0=RIGHT))
    assert env.pos[0] == c + 1 and env.forest[c + 1] == 0.5 and env.meals == 1
    assert env.food[0] == env.capacity - 1  # filled, then used one
    env.step(actions(env))
    assert env.forest[c + 1] == 0.5 and env.food[0] == env.capacity - 2  # nothing to eat while it regrows
    env.step(actions(env))
    assert env.forest[c + 1] == 0.5
    env.step(actions(env))  # the third step after the meal's
    assert env.forest[c + 1] == 1.0


def test_water_is_drunk_from_the_next_tile_and_blocks_movement_as_stone_does():
    env = survival()
    c = clear(env)
    place(env, 0, c)
    env.tile[c + 1], env.tile[c - 1] = WATER, STONE
    env.water[0] = 3
    env.step(actions(env, a0=RIGHT))
    assert env.pos[0] == c and env.water[0] == env.capacity - 1
    env.step(actions(env, a0=LEFT))
    assert env.pos[0] == c


def test_empty_food_or_water_costs_health_and_both_half_full_heal():
    env = survival()
    clear(env)
    env.food[0], env.water[0], env.hp[0] = 1, 1, 5  # both run out this step
    env.food[1], env.water[1], env.hp[1] = 1, env.capacity, 5  # food only
    env.hp[2] = 5  # full: heals
    env.step(actions(env))
    assert (env.hp[0], env.hp[1], env.hp[2]) == (3, 4, 6)


def test_starving_to_zero_health_is_a_death_paid_minus_one_and_respawns_after_the_delay():
    env = survival(respawn=2)
    clear(env)
    env.food[3], env.water[3], env.hp[3] = 0, 0, 2
    _, rewards, *_ = env.step(actions(env))
    assert rewards["agent_3"] == np.float32(-1.0) and rewards["agent_4"] == np.float32(0.01)
    assert not env.alive[3] and env.deaths == 1 and env.occupant[env.pos[3]] != 3
    obs, rewards, *_ = env.step(actions(env))
    assert not env.alive[3] and rewards["agent_3"] == 0.0 and not obs["agent_3"].any()  # dead: all zeros
    env.step(actions(env))
    assert env.alive[3] and env.hp[3] == HP and env.food[3] == env.water[3] == env.capacity


def test_strikes_and_shots_deal_their_damage_and_kill_at_zero():
    env = survival()
    c = clear(env)
    place(env, 0, c)
    place(env, 1, c + 1)
    env.step(actions(env, a0=STRIKE_RIGHT))
    assert env.hp[1] == HP - MELEE + 1  # struck, then healed one (fed and watered)
    place(env, 2, c + 3 * env.stride + 3)  # 3 tiles away diagonally: in range, but agent 1 is nearer
    env.step(actions(env, a0=SHOOT))
    assert env.hp[1] == HP - MELEE + 1 and env.hp[2] == HP
    env.hp[1] = 1
    _, rewards, *_ = env.step(actions(env, a0=STRIKE_RIGHT))
    assert not env.alive[1] and env.kills == 1 and rewards["agent_1"] == np.float32(-1.0)
    env.hp[2] = 1
    env.step(actions(env, a0=SHOOT))  # agent 1 is gone: the shot finds agent 2
    assert not env.alive[2] and env.kills == 2


def test_with_respawn_zero_the_dead_stay_dead_and_the_last_death_ends_the_episode():
    env = survival(respawn=0)
    clear(env)
    for i in range(AGENTS):
        env.food[i], env.water[i], env.hp[i] = 0, 0, 2 if i else 4
    _, _, terminations, truncations, _ = env.step(actions(env))
    assert env.alive[0] and sum(env.alive) == 1 and not any(terminations.values())
    _, _, terminations, truncations, infos = env.step(actions(env))
    assert all(terminations.values()) and not any(truncations.values()) and env.agents == []
    assert infos["agent_0"]["alive_end"] == 0.0 and infos["agent_0"]["deaths"] == 1.0
    assert infos["agent_0"]["alive"] == (1 / AGENTS) / 2  # one agent alive after the first of two steps


def test_the_episode_is_truncated_at_max_steps_with_the_survival_metrics():
    env = survival(max_steps=3)
    for _ in range(2):
        _, _, _, truncations, _ = env.step(actions(env))
        assert not any(truncations.values())
    _, _, terminations, truncations, infos = env.step(actions(env))
    assert all(truncations.values()) and not any(terminations.values())
    assert infos["agent_0"]["alive"] == 1.0 and infos["agent_0"]["alive_end"] == 1.0


def test_maps_differ_per_seed_and_agents_spawn_on_free_passable_tiles():
    a, b = Survival(), Survival()
    a.reset(seed=1)
    b.reset(seed=2)
    assert (a.tile != b.tile).any()
    for env in (a, b):
        tiles = env.tile[np.array(env.pos)]
        assert (tiles < WATER).all() and len(set(env.pos)) == AGENTS
        assert {FOREST, WATER, STONE} <= set(np.unique(env.tile).tolist())


@pytest.mark.parametrize(
    "kwargs, key",
    [({"size": 8}, "size"), ({"capacity": 1}, "capacity"), ({"regrow": 0}, "regrow"), ({"respawn": -1}, "respawn"),
     ({"max_steps": 0}, "max_steps"), ({"size": 32.5}, "size")],
)  # fmt: skip
def test_bad_settings_are_one_line_errors_naming_the_key(kwargs, key):
    with pytest.raises(ValueError, match=f"survival: {key} must be") as info:
        Survival(**kwargs)
    assert "\n" not in str(info.value)
