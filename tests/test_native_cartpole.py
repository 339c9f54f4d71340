"""The CartPole block is bit-for-bit Gymnasium's CartPole-v1, auto-resets included, with both
kernels (compiled C, numpy reference); its Episodes pass through every consumer."""

from __future__ import annotations

import pickle
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from pufferbox_classic.native import RESET_DRAWS, CartPoleNative

import pufferbox.vector as vector
from pufferbox.episodes import Episodes
from pufferbox.registry import get_registry
from pufferbox.spaces import SpaceError
from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer

KERNELS = ["c", "numpy"]


def balance(observations: np.ndarray) -> np.ndarray:
    """Push towards the pole's lean: long episodes that reach the 500-step truncation."""
    return (observations[:, 2] + 0.5 * observations[:, 3] > 0).astype(np.int64)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("policy", ["random", "always-right", "balance"])
def test_matches_gymnasium_step_for_step(kernel: str, policy: str) -> None:
    n, seed, steps = 16, 123, 1500
    envs = [gymnasium.make("CartPole-v1") for _ in range(n)]
    block = CartPoleNative(n, kernel=kernel)
    block.vec_reset(seed=seed)
    expected = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    b = block.buffers
    assert np.array_equal(b.observations, expected)
    rng = np.random.default_rng(0)
    episodes, truncated = np.zeros(n, dtype=np.int64), 0
    returns, lengths = np.zeros(n), np.zeros(n, dtype=np.int64)
    for t in range(steps):
        if policy == "random":
            actions = rng.integers(0, 2, n)
        elif policy == "always-right":
            actions = np.ones(n, dtype=np.int64)
        else:
            actions = balance(b.observations)
        infos = block.vec_step(actions)
        ended = {}
        for i, env in enumerate(envs):
            obs, reward, terminated, trunc, _ = env.step(int(actions[i]))
            returns[i] += reward
            lengths[i] += 1
            if terminated or trunc:
                ended[i] = (returns[i], lengths[i])
                returns[i], lengths[i] = 0, 0
                episodes[i] += 1
                truncated += trunc
                obs, _ = env.reset()
            assert np.array_equal(obs, b.observations[i]), f"step {t} env {i}"
            # float64 state too: a reordered expression rarely shows in float32 observations
            assert np.array_equal(env.unwrapped.state, block.state[:, i]), f"step {t} env {i}: state"
            assert (reward, terminated, trunc) == (b.rewards[i], b.terminals[i], b.truncations[i]), f"step {t} env {i}"
        assert dict(zip(infos.env_ids.tolist(), zip(infos.returns.tolist(), infos.lengths.tolist()))) == ended
    if policy == "balance":
        assert truncated > 0, "the comparison must cover truncation at 500 steps"
    if policy == "always-right":  # ~10-step episodes: more resets per env than one batch of draws
        assert episodes.min() > RESET_DRAWS, "the comparison must cover refills of the reset draws"


@pytest.mark.parametrize("kernel", KERNELS)
def test_reset_without_seed_continues_each_envs_generator(kernel: str) -> None:
    env, block = gymnasium.make("CartPole-v1"), CartPoleNative(1, kernel=kernel)
    block.vec_reset(seed=5)
    env.reset(seed=5)
    for _ in range(3):
        block.vec_reset()
        assert np.array_equal(env.reset()[0], block.buffers.observations[0])


def test_c_kernel_matches_the_numpy_reference_on_a_large_block() -> None:
    n, steps = 4096, 1500
    c, ref = CartPoleNative(n, kernel="c"), CartPoleNative(n, kernel="numpy")
    c.vec_reset(seed=11)
    ref.vec_reset(seed=11)
    rng = np.random.default_rng(1)
    fields = ("observations", "rewards", "terminals", "truncations", "masks")
    truncations = episodes = 0
    for t in range(steps):
        # Half the envs balance (truncations at 500 steps), half play randomly (many resets).
        actions = np.where(np.arange(n) % 2 == 0, balance(ref.buffers.observations), rng.integers(0, 2, n))
        infos_c, infos_ref = c.vec_step(actions), ref.vec_step(actions)
        for f in fields:
            assert np.array_equal(getattr(c.buffers, f), getattr(ref.buffers, f)), f"step {t}: {f}"
        assert np.array_equal(c.state, ref.state), f"step {t}: float64 state"
        assert type(infos_c) is type(infos_ref)
        for name in ("env_ids", "returns", "lengths"):
            assert np.array_equal(getattr(infos_c, name), getattr(infos_ref, name)), f"step {t}: {name}"
        episodes += len(infos_c)
        truncations += int(c.buffers.truncations.sum())
    assert truncations > 0 and episodes > 10 * n


@pytest.mark.parametrize("kernel", KERNELS)
def test_bad_actions_are_refused(kernel: str) -> None:
    block = CartPoleNative(3, kernel=kernel)
    block.vec_reset(seed=0)
    before = block.buffers.observations.copy()
    with pytest.raises(SpaceError, match="action 2 is outside the flat action space Discrete"):
        block.vec_step(np.array([0, 1, 2]))
    if kernel == "c":  # checked before any env moves, on every step
        assert np.array_equal(block.buffers.observations, before)
        block.vec_step(np.array([0, 1, 1]))
        with pytest.raises(SpaceError, match="action -1 is outside"):
            block.vec_step(np.array([-1, 0, 0], dtype=np.int32))
        with pytest.raises(SpaceError, match="must be integers"):
            block.vec_step(np.array([0.0, 1.0, 1.0]))


def test_c_kernel_takes_any_integer_actions_and_refuses_misuse() -> None:
    a, b = CartPoleNative(4), CartPoleNative(4)
    with pytest.raises(RuntimeError, match="before reset"):
        a.vec_step(np.zeros(4, dtype=np.int64))
    a.vec_reset(seed=2)
    b.vec_reset(seed=2)
    a.vec_step(np.array([1, 0, 1, 1], dtype=np.uint8))
    b.vec_step([True, False, True, True])
    assert np.array_equal(a.buffers.observations, b.buffers.observations)
    strided = np.array([[1, 0], [0, 0], [1, 0], [1, 0]])[:, 0]  # not contiguous
    a.vec_step(strided)
    b.vec_step(np.array([1, 0, 1, 1]))
    assert np.array_equal(a.buffers.observations, b.buffers.observations)
    with pytest.raises(ValueError, match="kernel must be one of"):
        CartPoleNative(2, kernel="fortran")


def test_missing_extension_fails_import_with_the_fix() -> None:
    code = "import sys; sys.modules['pufferbox_classic._cartpole'] = None\nimport pufferbox_classic.native"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: pufferbox_classic: the compiled CartPole kernel is not built")
    assert "pip install -e plugins/classic" in last


# -- Episodes -------------------------------------------------------------------------------
def test_episodes_pickle_compactly() -> None:
    n = 200
    episodes = Episodes.from_arrays(np.arange(n), np.arange(n) + 0.5, np.arange(n)).relabel(7)
    data = pickle.dumps(episodes)
    back = pickle.loads(data)
    assert isinstance(back, Episodes) and back.env_ids.tolist() == list(range(7, n + 7))
    # Three raw arrays, 24 bytes an episode: unpickling builds no dicts (the pipes' cost was per dict).
    assert b"episode_return" not in data and len(data) < 1000 + 24 * n


# -- through the backends and the trainer -----------------------------------------------------
def episode_table(episodes: Episodes) -> list[tuple]:
    return sorted(zip(episodes.env_ids.tolist(), episodes.returns.tolist(), episodes.lengths.tolist()))


def test_backends_use_the_native_block_and_match_emulated() -> None:
    with (
        vector.make("cartpole", num_envs=4, native=True) as native,
        vector.make("cartpole", num_envs=4, native=False) as emulated,
    ):
        assert native.factory.native and not emulated.factory.native
        a, _ = native.reset(seed=7)
        b, _ = emulated.reset(seed=7)
        assert np.array_equal(a, b)
        for t in range(100):
            actions = np.array([(t * 3 + i) % 2 for i in range(4)])
            out_a, out_b = native.step(actions), emulated.step(actions)
            for x, y in zip(out_a[:4], out_b[:4]):
                assert np.array_equal(x, y)
            assert out_a[4].keys() == out_b[4].keys()
            for key in out_b[4]:
                assert np.array_equal(out_a[4][key], out_b[4][key]), key


@pytest.mark.parametrize(
    "backend, kwargs",
    [
        ("serial", {}),
        ("multiprocessing", {"num_workers": 2}),
        ("ray", {"num_workers": 2}),
    ],
)
def test_episode_infos_through_backends_match_emulated(backend: str, kwargs: dict, request) -> None:
    if backend == "ray":
        request.getfixturevalue("local_ray")
    n = 8
    with (
        vector.make("cartpole", backend=backend, num_envs=n, native=True, **kwargs) as native,
        vector.make("cartpole", backend="serial", num_envs=n, native=False) as emulated,
    ):
        native.async_reset(seed=3)
        emulated.async_reset(seed=3)
        native.recv()
        emulated.recv()
        rng = np.random.default_rng(4)
        seen = 0
        for _ in range(300):
            actions = rng.integers(0, 2, n)
            native.send(actions)
            emulated.send(actions)
            infos = native.recv()[4]
            expected = emulated.recv()[4]
            assert isinstance(infos, Episodes) and isinstance(expected, Episodes)  # one form on every backend
            assert episode_table(infos) == episode_table(expected)
            seen += len(infos)
        assert seen > 50


@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_trainer_records_native_episodes_from_arrays(backend: str) -> None:
    defaults = get_registry().get("cartpole").training.config
    workers = ["vec.num_workers=2"] if backend == "multiprocessing" else []
    cfg = resolve_config(
        defaults,
        overrides=[
            "train.checkpoint_interval=0",
            "vec.num_envs=64",
            f"vec.backend={backend}",
            "train.num_steps=32",
            *workers,
        ],
    )
    trainer = Trainer("cartpole", cfg)
    try:
        captured = []
        recv = trainer.venv.recv

        def spy():
            out = recv()
            captured.append(out[4])
            return out

        trainer.venv.recv = spy
        collected = trainer.collector.collect().episodes
        assert all(isinstance(episodes, Episodes) for episodes in captured)
        expected = [(r, float(n)) for eps in captured for r, n in zip(eps.returns.tolist(), eps.lengths.tolist())]
        assert len(expected) > 10
        assert list(zip(collected.returns.tolist(), collected.lengths.astype(float).tolist())) == expected
    finally:
        trainer.close()
