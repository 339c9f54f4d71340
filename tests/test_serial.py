"""Serial backend: Gymnasium VectorEnv interface, send/recv, backend-owned buffers, native == emulated."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import pufferbox.vector
from pufferbox.buffers import Buffers
from pufferbox.registry import Registry
from pufferbox.vector.base import VectorConfigError

OCEAN = ["squared", "password", "stochastic", "memory", "multiagent", "spaces", "bandit"]


@pytest.fixture(scope="module")
def registry():
    return Registry(only=["classic", "ocean"])


def test_vector_interface_and_autoreset_mode(registry):
    venv = pufferbox.vector.make(registry.get("memory"), num_envs=4, native=False)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, infos = venv.reset(seed=0)
    assert obs.shape == (4, 2) and venv.observation_space.shape == (4, 2) and infos == {}
    actions = venv.action_space.sample()
    for _ in range(6):
        obs, rewards, terminals, truncations, infos = venv.step(actions)
    assert not terminals.any()
    obs, rewards, terminals, truncations, infos = venv.step(actions)  # 7th step ends every episode
    assert terminals.all() and infos["_episode_return"].all() and (infos["episode_length"] == 7).all()
    venv.close()


def test_envs_write_into_buffers_the_backend_owns(registry):
    spec = registry.get("spaces")
    probe = pufferbox.vector.make(spec, num_envs=2, native=False)
    buffers = Buffers.allocate(probe.obs_spec, probe.act_spec, 2)
    probe.close()
    for native in (False, True):
        venv = pufferbox.vector.make(spec, num_envs=2, native=native, buffers=buffers)
        venv.async_reset(0)
        obs, *_ = venv.recv()
        assert obs is buffers.observations and obs.any()
        venv.send(np.zeros((2, 4), np.int64))
        obs, rewards, *_ = venv.recv()
        assert obs is buffers.observations and rewards is buffers.rewards
        venv.close()


def test_bad_arguments(registry):
    spec = registry.get("bandit")
    with pytest.raises(VectorConfigError, match="batch_size must equal num_envs"):
        pufferbox.vector.make(spec, num_envs=4, batch_size=2)
    with pytest.raises(VectorConfigError, match="unsupported options: num_workers"):
        pufferbox.vector.make(spec, num_envs=4, num_workers=2)
    venv = pufferbox.vector.make(spec, num_envs=2)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions have shape \(3,\), expected \(2,\)"):
        venv.step(np.zeros(3, np.int64))


@pytest.mark.parametrize("name", OCEAN)
def test_native_is_bit_for_bit_equal_to_emulated(registry, name):
    """Many steps with random actions, autoresets included, on a few envs of odd count."""
    spec = registry.get(name)
    num_envs, rng = 5, np.random.default_rng(7)
    native = pufferbox.vector.make(spec, num_envs=num_envs, native=True)
    emulated = pufferbox.vector.make(spec, num_envs=num_envs, native=False)
    assert native.blocks[0].num_envs == num_envs and len(emulated.blocks) == num_envs
    native.async_reset(11)
    emulated.async_reset(11)
    episodes = 0
    nvec = np.atleast_1d(getattr(emulated.single_action_space, "nvec", getattr(emulated.single_action_space, "n", 0)))
    for step in range(400):
        a, b = native.recv(), emulated.recv()
        for field, x, y in zip(("obs", "rewards", "terminals", "truncations"), a[:4], b[:4]):
            assert np.array_equal(x, y), (step, field)
        assert np.array_equal(a[6], b[6]), (step, "masks")
        table = lambda eps: sorted(zip(eps.env_ids.tolist(), eps.returns.tolist(), eps.lengths.tolist()))
        assert table(a[4]) == table(b[4]), step
        episodes += len(b[4])
        actions = rng.integers(0, nvec, size=(emulated.num_agents, *emulated.act_spec.shape))
        native.send(actions)
        emulated.send(actions)
    assert episodes >= num_envs * 10  # autoresets happened many times
    native.close()
    emulated.close()


def test_native_block_seeds_env_i_with_seed_plus_i(registry):
    from pufferbox_ocean.envs import Squared
    from pufferbox_ocean.native import SquaredNative

    block = SquaredNative(num_envs=3)
    block.vec_reset(seed=100)
    for i in range(3):
        obs, _ = Squared().reset(seed=100 + i)
        np.testing.assert_array_equal(block.buffers.observations[i], obs.ravel())
