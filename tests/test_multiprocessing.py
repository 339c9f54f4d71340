"""The multiprocessing backend gives exactly the serial backend's rows, with and without a pool."""

from __future__ import annotations

import numpy as np
import psutil
import pytest

import pufferbox.vector as vector
from pufferbox.registry import get_registry
from pufferbox.vector.base import VectorConfigError
from pufferbox.vector.testenvs import env_spec_for

NUM_ENVS = 8


def env_spec(name: str):
    return env_spec_for(name) if name == "countdown" else get_registry().get(name)


def policy(env_id: int, step: int, rows: int, n_actions: int) -> np.ndarray:
    """Deterministic actions per (env, step of that env), so pools can be compared with serial."""
    return np.array([(env_id * 7 + step * 3 + (step * step) % 5 + r) % n_actions for r in range(rows)])


def trajectories(venv, steps_per_env: int, n_actions: int) -> dict[int, list]:
    """Per env: the rows it produced at each of its steps (obs, reward, terminal, truncation, mask, infos)."""
    out: dict[int, list] = {i: [] for i in range(venv.num_envs)}
    rows = venv.agents_per_env
    venv.async_reset(seed=5)
    while min(len(t) for t in out.values()) < steps_per_env:
        obs, rew, term, trunc, infos, env_ids, masks = venv.recv()
        by_env = {i: [] for i in env_ids}
        for info in infos:
            by_env[info["env_id"]].append({k: v for k, v in info.items() if k != "env_id"})
        actions = []
        for j, env in enumerate(env_ids):
            sl = slice(j * rows, (j + 1) * rows)
            out[env].append((obs[sl].copy(), rew[sl].copy(), term[sl].copy(), trunc[sl].copy(),
                             masks[sl].copy(), by_env[env]))
            actions.append(policy(int(env), len(out[env]) - 1, rows, n_actions))
        venv.send(np.concatenate(actions).reshape(venv.action_space.shape))
    return {i: t[:steps_per_env] for i, t in out.items()}


def assert_same(a: dict, b: dict) -> None:
    for env in a:
        for step, (x, y) in enumerate(zip(a[env], b[env])):
            for name, u, v in zip(("obs", "reward", "terminal", "truncation", "mask", "infos"), x, y):
                if isinstance(u, np.ndarray):
                    assert np.array_equal(u, v), f"env {env} step {step}: {name} differs: {u} vs {v}"
                else:
                    assert u == v, f"env {env} step {step}: {name} differs: {u} vs {v}"


CONFIGS = {
    "full": dict(num_workers=2),
    "pool": dict(num_workers=4, batch_size=4),
    "pool-zero-copy": dict(num_workers=4, batch_size=2, zero_copy=True),
}


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("env,native", [("cartpole", False), ("cartpole", True), ("countdown", False)])
def test_matches_serial(env: str, native: bool, config: str) -> None:
    spec = env_spec(env)
    n_actions = 3 if env == "countdown" else 2
    with vector.make(spec, backend="serial", num_envs=NUM_ENVS, native=native) as serial:
        expected = trajectories(serial, 40, n_actions)
    with vector.make(spec, backend="multiprocessing", num_envs=NUM_ENVS, native=native, **CONFIGS[config]) as venv:
        got = trajectories(venv, 40, n_actions)
        assert (venv.steps_per_worker > 0).all(), "every worker of the pool must get work"
    assert_same(expected, got)
    dones = sum(bool(step[2].any() or step[3].any()) for t in expected.values() for step in t)
    assert dones > 0, "the comparison must cover auto-resets"
    if env == "countdown":
        assert any(not step[4].all() for t in expected.values() for step in t), "padding (mask False) must occur"


def test_zero_copy_returns_views_of_one_contiguous_group() -> None:
    with vector.make("cartpole", backend="multiprocessing", num_envs=8, num_workers=4, batch_size=4,
                     zero_copy=True) as venv:
        venv.async_reset(seed=0)
        seen: set[int] = set()
        for _ in range(2000):  # under load one group can win several rounds in a row
            if seen == {0, 4}:
                break
            obs, *_, env_ids, _ = venv.recv()
            assert obs.base is not None and np.shares_memory(obs, venv.buffers.observations)
            assert list(env_ids) in ([0, 1, 2, 3], [4, 5, 6, 7])
            seen.add(int(env_ids[0]))
            venv.send(np.zeros(4, dtype=np.int64))
        assert seen == {0, 4}


def test_step_and_reset_match_gymnasium_layout() -> None:
    with vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, native=False) as venv:
        obs, info = venv.reset(seed=1)
        assert obs.shape == (4, 4) and obs.dtype == np.float32
        obs, rew, term, trunc, info = venv.step(np.ones(4, dtype=np.int64))
        assert rew.tolist() == [1.0] * 4


@pytest.mark.parametrize("kwargs,message", [
    (dict(num_envs=6, num_workers=4), r"num_envs \(6\) must be a multiple of num_workers \(4\)"),
    (dict(num_envs=8, num_workers=4, batch_size=3), r"num_envs \(8\) must be a multiple of batch_size \(3\)"),
    (dict(num_envs=12, num_workers=3, batch_size=6), r"batch_size \(6\) must be a multiple of envs per worker \(4"),
    (dict(num_envs=4, num_workers=2, envs_per_worker=2), "unsupported options: envs_per_worker"),
    (dict(num_envs=4, num_workers=2, start_method="teleport"), "start_method 'teleport'"),
])
def test_bad_configs_fail_clearly(kwargs: dict, message: str) -> None:
    before = len(psutil.Process().children(recursive=True))
    with pytest.raises(VectorConfigError, match=message):
        vector.make("cartpole", backend="multiprocessing", **kwargs)
    assert len(psutil.Process().children(recursive=True)) == before


def test_too_small_dev_shm_says_how_to_raise_it(monkeypatch) -> None:
    import shutil

    import pufferbox.vector.shm as shm

    monkeypatch.setattr(shm.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(64 << 20, 64 << 20, 1024))
    with pytest.raises(VectorConfigError, match=r"--shm-size=8g.*shm_size") as err:
        vector.make("cartpole", backend="multiprocessing", num_envs=64, num_workers=2)
    assert "/dev/shm" in str(err.value)


@pytest.mark.slow
def test_spawn_start_method_matches_serial() -> None:
    with vector.make("cartpole", backend="serial", num_envs=4, native=False) as serial:
        expected = trajectories(serial, 15, 2)
    with vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, native=False,
                     start_method="spawn") as venv:
        got = trajectories(venv, 15, 2)
    assert_same(expected, got)
