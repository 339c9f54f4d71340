"""The numpy CartPole block is bit-for-bit Gymnasium's CartPole-v1, auto-resets included."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import pufferbox.vector as vector
from pufferbox.spaces import SpaceError
from pufferbox_classic.native import CartPoleNative


@pytest.mark.parametrize("policy", ["random", "always-right", "balance"])
def test_matches_gymnasium_step_for_step(policy: str) -> None:
    n, seed = 16, 123
    envs = [gymnasium.make("CartPole-v1") for _ in range(n)]
    block = CartPoleNative(n)
    block.vec_reset(seed=seed)
    expected = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    b = block.buffers
    assert np.array_equal(b.observations, expected)
    rng = np.random.default_rng(0)
    episodes = truncated = 0
    returns = np.zeros(n)
    for t in range(1200):
        if policy == "random":
            actions = rng.integers(0, 2, n)
        elif policy == "always-right":
            actions = np.ones(n, dtype=np.int64)
        else:  # push towards the pole's lean: long episodes reach the 500-step truncation
            actions = (b.observations[:, 2] + 0.5 * b.observations[:, 3] > 0).astype(np.int64)
        infos = block.vec_step(actions)
        ended = {}
        for i, env in enumerate(envs):
            obs, reward, terminated, trunc, _ = env.step(int(actions[i]))
            returns[i] += reward
            if terminated or trunc:
                ended[i] = returns[i]
                returns[i] = 0
                episodes += 1
                truncated += trunc
                obs, _ = env.reset()
            assert np.array_equal(obs, b.observations[i]), f"step {t} env {i}"
            assert (reward, terminated, trunc) == (b.rewards[i], b.terminals[i], b.truncations[i]), f"step {t} env {i}"
        assert {info["env"]: info["episode_return"] for info in infos} == ended
    assert episodes > 0
    if policy == "balance":
        assert truncated > 0, "the comparison must cover truncation at 500 steps"


def test_backends_use_the_native_block_and_match_emulated() -> None:
    with vector.make("cartpole", num_envs=4, native=True) as native, \
            vector.make("cartpole", num_envs=4, native=False) as emulated:
        assert native.factory.native and not emulated.factory.native
        a, _ = native.reset(seed=7)
        b, _ = emulated.reset(seed=7)
        assert np.array_equal(a, b)
        for t in range(100):
            actions = np.array([(t * 3 + i) % 2 for i in range(4)])
            out_a, out_b = native.step(actions), emulated.step(actions)
            for x, y in zip(out_a[:4], out_b[:4]):
                assert np.array_equal(x, y)


def test_bad_actions_are_refused() -> None:
    block = CartPoleNative(2)
    block.vec_reset(seed=0)
    with pytest.raises(SpaceError, match="outside the flat action space Discrete"):
        block.vec_step(np.array([0, 2]))
