"""The Ocean games: each C block equals its Python reference bit for bit, passes the conformance
suite, renders, and refuses bad settings and actions in one line (continuous games: random actions in
[-1, 1] and a little past it, quantized to the same fixed point on both sides)."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.plugin import games

from pufferbox.api import SpaceError, get_registry
from pufferbox.conformance import assert_conforms

GAMES = {game.name: game for game in games()}


def reference_envs(game, n, seed):
    envs = [game.reference(**game.check_kwargs) for _ in range(n)]
    multi = hasattr(envs[0], "possible_agents")
    first = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    return envs, multi, first


def flat(obs, multi, agents, spec):
    """One env's observation rows as the block writes them (a Dict observation flattened as its record)."""
    row = lambda o: spec.flatten(o) if isinstance(o, dict) else np.asarray(o)
    return np.stack([row(obs[a]) for a in agents]) if multi else row(obs)[None]


@pytest.mark.parametrize("name", sorted(GAMES))
def test_c_block_equals_the_reference_bit_for_bit_through_resets_and_truncations(name):
    game, n, seed, steps = GAMES[name], 6, 11, 400
    block = GameBlock(name, game.reference, n, **game.check_kwargs)
    block.vec_reset(seed=seed)
    envs, multi, first = reference_envs(game, n, seed)
    agents = envs[0].possible_agents if multi else [None]
    A = len(agents)
    np.testing.assert_array_equal(
        block.buffers.observations, np.concatenate([flat(o, multi, agents, block.obs_spec) for o in first])
    )
    rng = np.random.default_rng(0)
    act_n = block.act_n
    ends = {"terminated": 0, "truncated": 0}
    returns = np.zeros((n, A))
    for t in range(steps):
        if block.continuous:  # a little past [-1, 1], so clipping is compared too
            actions = rng.uniform(-1.1, 1.1, (n * A, len(act_n))).astype(np.float32)
        else:
            actions = np.stack([rng.integers(0, k, n * A) for k in act_n], axis=1).astype(np.int64)
            actions = actions.reshape(n * A, *block.act_spec.shape)
        episodes = block.vec_step(actions)
        b = block.buffers
        expected_episodes = []
        for i, env in enumerate(envs):
            rows = slice(i * A, (i + 1) * A)
            as_action = lambda row: int(np.asarray(row).item()) if np.size(row) == 1 and not block.continuous else row
            act = {a: as_action(actions[i * A + j]) for j, a in enumerate(agents)} if multi else as_action(actions[i])
            obs, rew, term, trunc, info = env.step(act)
            if multi:
                rew, term, trunc = [np.array([d[a] for a in agents]) for d in (rew, term, trunc)]
                info = info[agents[0]]
            else:
                rew, term, trunc = np.array([rew]), np.array([term]), np.array([trunc])
            expected = flat(obs, multi, agents, block.obs_spec)
            assert (b.rewards[rows] == rew.astype(np.float32)).all(), (name, t, i)
            assert (b.terminals[rows] == term).all() and (b.truncations[rows] == trunc).all(), (name, t, i)
            returns[i] += rew.astype(np.float32)
            if term.any() or trunc.any():
                assert term.all() or trunc.all(), "all agents of a game end together"
                ends["terminated" if term.any() else "truncated"] += 1
                if trunc.any():
                    np.testing.assert_array_equal(b.final_observations[rows], expected, err_msg=f"{name} step {t} env {i}")
                expected_episodes.append((i, returns[i].mean(), info))
                returns[i] = 0
                obs = env.reset()[0]
                expected = flat(obs, multi, agents, block.obs_spec)
            np.testing.assert_array_equal(b.observations[rows], expected, err_msg=f"{name} step {t} env {i}")
        assert episodes.env_ids.tolist() == [e[0] for e in expected_episodes], (name, t)
        for k, (i, ret, info) in enumerate(expected_episodes):
            assert episodes.returns[k] == ret, (name, t, i)
            for metric in game.reference.METRICS:
                assert episodes.metrics[metric][k] == info[metric], (name, t, metric)
    ref = game.reference
    ways = ("terminated",) * ref.TERMINATES + ("truncated",) * ref.TRUNCATES
    assert all(ends[way] > 0 for way in ways), f"{name}: check_kwargs must end episodes both ways: {ends}"


@pytest.mark.parametrize("name", sorted(GAMES))
def test_conformance_suite_passes_native_included(name):
    many_agents = GameBlock(name, GAMES[name].reference, 1).num_agents > 16  # the emulated reference is slow there
    results = assert_conforms(get_registry().get(f"ocean/{name}"), steps=50 if many_agents else 200)
    assert any(r.name == "native" and r.ok and "skipped" not in r.detail for r in results)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_renders_ansi_and_rgb(name):
    reference = GAMES[name].reference
    for mode, kind in (("ansi", str), ("rgb_array", np.ndarray)):
        env = reference(render_mode=mode)
        env.reset(seed=0)
        frame = env.render()
        assert isinstance(frame, kind) and len(frame) > 0
        if kind is np.ndarray:
            assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8 and frame.any()


@pytest.mark.parametrize("name", sorted(GAMES))
def test_bad_settings_and_actions_are_one_line_errors(name):
    game = GAMES[name]
    param = game.reference.PARAMS[0]
    with pytest.raises(ValueError, match=f"{name}: {param} must be") as info:
        GameBlock(name, game.reference, 2, **{param: -1})
    assert "\n" not in str(info.value)
    block = GameBlock(name, game.reference, 2)
    block.vec_reset(seed=0)
    before = block.buffers.observations.copy()
    if block.continuous:  # out of range is clipped; NaN is refused
        actions = np.zeros((block.num_agents, len(block.act_n)), dtype=np.float32)
        actions.reshape(-1)[-1] = np.nan
        with pytest.raises(SpaceError, match="a continuous action is NaN"):
            block.vec_step(actions)
    else:
        actions = np.zeros((block.num_agents, *block.act_spec.shape), dtype=np.int64)
        actions.reshape(-1)[-1] = block.act_n[-1]
        with pytest.raises(SpaceError, match="outside the flat action space"):
            block.vec_step(actions)
    np.testing.assert_array_equal(block.buffers.observations, before)  # nothing stepped
