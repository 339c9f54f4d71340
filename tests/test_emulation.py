"""Emulators: first-step space checks naming the field, SAME_STEP autoreset, agent slots and masks."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from pufferbox_ocean.envs import Memory, Multiagent, Spaces

from pufferbox.emulation import APIUsageError, GymnasiumEmulator, PettingZooEmulator, emulate
from pufferbox.spaces import SpaceError


class BadObs(gymnasium.Env):
    observation_space = spaces.Dict({"hp": spaces.Discrete(5), "pos": spaces.Box(-1, 1, (2,), dtype=np.float32)})
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return {"hp": 9, "pos": np.zeros(2, np.float32)}, {}


def test_first_reset_checks_observation_naming_the_field():
    env = GymnasiumEmulator(BadObs(), name="badobs")
    with pytest.raises(SpaceError, match=r"observation\['hp'\] = 9 is outside Discrete\(5\)"):
        env.vec_reset(seed=0)


def test_first_step_checks_action_and_order():
    env = GymnasiumEmulator(Memory(), name="memory")
    with pytest.raises(APIUsageError, match="step\\(\\) before reset\\(\\)"):
        env.vec_step(np.zeros((1,), np.int64))
    env.vec_reset(seed=0)
    with pytest.raises(SpaceError, match=r"memory: action 5 is outside the flat action space Discrete\(2\)"):
        env.vec_step(np.array([5]))


def test_same_step_autoreset_and_episode_info():
    raw, env = Memory(), GymnasiumEmulator(Memory())
    env.vec_reset(seed=4)
    raw.reset(seed=4)
    total = 0.0
    for t in range(raw.horizon):
        action = int(raw.bits[t - raw.length - raw.delay]) if t >= raw.length + raw.delay else 0
        infos = env.vec_step(np.array([action]))
        _, reward, terminated, _, _ = raw.step(action)
        total += reward
        assert env.buffers.rewards[0] == np.float32(reward)
    assert terminated and env.buffers.terminals[0] and total == 1.0
    assert (infos.env_ids.tolist(), infos.returns.tolist(), infos.lengths.tolist()) == ([0], [1.0], [raw.horizon])
    first_obs, _ = raw.reset()  # the emulator already reset: its row holds the next first observation
    np.testing.assert_array_equal(env.buffers.observations[0], first_obs)


def test_nested_observation_written_in_place():
    env = GymnasiumEmulator(Spaces())
    obs, _ = env.reset(seed=1)
    tree = env.obs_spec.unflatten(env.buffers.observations)
    assert np.shares_memory(tree["image"], env.buffers.observations)
    raw = Spaces()
    raw_obs, _ = raw.reset(seed=1)
    np.testing.assert_array_equal(tree["image"][0], raw_obs["image"])
    assert tree["meta"][0][0] == raw_obs["meta"][0]
    np.testing.assert_array_equal(tree["meta"][1]["bits"][0], raw_obs["meta"][1]["bits"])
    assert env.single_action_space == spaces.MultiDiscrete([2, 2, 2, 4])  # Dict keys sorted: bits, choice


def test_multiagent_slots_padding_masks_and_terminals():
    env = PettingZooEmulator(Multiagent(horizon=6), name="multiagent")
    env.vec_reset(seed=0)
    life = env.env.lifetime["agent_1"]
    b = env.buffers
    assert b.masks.tolist() == [True, True]
    for t in range(1, 7):
        infos = env.vec_step(np.array([0, 1]))
        if t < life:
            assert b.masks.tolist() == [True, True] and b.terminals.tolist() == [False, False]
        elif t == life:  # agent_1 acts for the last time: its row is live and terminal
            assert b.masks.tolist() == [True, True] and b.terminals.tolist() == [False, True]
        elif t < 6:  # agent_1 is gone: zero row, reward 0, terminal, masked out
            assert b.masks.tolist() == [True, False] and b.terminals.tolist() == [False, True]
            assert b.rewards[1] == 0.0 and not b.observations[1].any()
    # The episode ended at t=6 (agent_0's lifetime); both rows hold the next episode already.
    assert b.terminals.tolist() == [True, True] and b.masks.tolist() == [True, True]
    assert infos.env_ids.tolist() == [0] and infos.returns[0] == pytest.approx(1.0) and infos.lengths.tolist() == [6]


def test_multiagent_agents_with_their_own_spaces_share_rows_of_one_width():
    """Each agent keeps its own space (the row is as wide as the widest) and is checked against it."""
    env = Multiagent()
    env.observation_spaces["agent_1"] = spaces.Box(0.0, 1.0, (3,), dtype=np.float32)  # it still emits 2 floats
    emulated = emulate(env, name="multiagent")
    assert emulated.obs_spec.flat_size == 3 and [o.flat_size for o, _ in emulated.agent_specs] == [2, 3]
    with pytest.raises(SpaceError, match="multiagent agent 'agent_1'"):
        emulated.reset(seed=0)


def test_emulate_rejects_other_objects():
    with pytest.raises(TypeError, match="expected a gymnasium.Env or a PettingZoo ParallelEnv"):
        emulate(object(), name="thing")
