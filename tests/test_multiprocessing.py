"""The multiprocessing backend gives exactly the serial backend's rows, with and without a pool or main envs."""

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
        for k, env in enumerate(infos.env_ids.tolist()):
            by_env[env].append((infos.returns[k], infos.lengths[k], {m: v[k] for m, v in infos.metrics.items()}))
        actions = []
        for j, env in enumerate(env_ids):
            sl = slice(j * rows, (j + 1) * rows)
            out[env].append(
                (obs[sl].copy(), rew[sl].copy(), term[sl].copy(), trunc[sl].copy(), masks[sl].copy(), by_env[env])
            )
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
    "main-envs": dict(num_workers=2, main_envs=2),  # main 0-1, workers 2-4 and 5-7
    "main-envs-one-worker": dict(num_workers=1, main_envs=5),
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
        assert min(venv.step_counts()) > 0, f"every worker of the pool must get work: {venv.step_counts()}"
    assert_same(expected, got)
    dones = sum(bool(step[2].any() or step[3].any()) for t in expected.values() for step in t)
    assert dones > 0, "the comparison must cover auto-resets"
    if env == "countdown":
        assert any(not step[4].all() for t in expected.values() for step in t), "padding (mask False) must occur"


def test_zero_copy_returns_views_of_one_contiguous_group() -> None:
    with vector.make("cartpole", backend="multiprocessing", num_envs=8, num_workers=4, batch_size=4, zero_copy=True) as venv:
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


def test_main_envs_step_in_the_main_process_into_one_contiguous_batch() -> None:
    with vector.make("cartpole", backend="multiprocessing", num_envs=6, num_workers=1, main_envs=2, native=False) as venv:
        assert len(venv.main_stepper.blocks) == 2 and [list(e) for e in venv.worker_envs] == [[2, 3, 4, 5]]
        venv.async_reset(seed=0)
        obs, *_, env_ids, _ = venv.recv()
        assert obs.shape == (6, 4) and np.shares_memory(obs, venv.buffers.observations)
        assert env_ids.tolist() == list(range(6))
        before = obs.copy()
        venv.send(np.zeros(6, dtype=np.int64))
        # The main process's rows are written inside send(), before any recv().
        assert not np.array_equal(venv.buffers.observations[:2], before[:2])
        venv.recv()


def test_step_and_reset_match_gymnasium_layout() -> None:
    with vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, native=False) as venv:
        obs, info = venv.reset(seed=1)
        assert obs.shape == (4, 4) and obs.dtype == np.float32
        obs, rew, term, trunc, info = venv.step(np.ones(4, dtype=np.int64))
        assert rew.tolist() == [1.0] * 4


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(num_envs=6, num_workers=4), r"num_envs \(6\) must be a multiple of num_workers \(4\)"),
        (dict(num_envs=8, num_workers=4, batch_size=3), r"num_envs \(8\) must be a multiple of batch_size \(3\)"),
        (dict(num_envs=12, num_workers=3, batch_size=6), r"batch_size \(6\) must be a multiple of envs per worker \(4"),
        (dict(num_envs=4, num_workers=2, envs_per_worker=2), "unsupported options: envs_per_worker"),
        (dict(num_envs=4, num_workers=2, start_method="teleport"), "start_method 'teleport'"),
        (dict(num_envs=4, num_workers=1, main_envs=4), r"main_envs \(4\) must be in 0..num_envs-1 .*--backend serial"),
        (dict(num_envs=4, num_workers=1, main_envs=-1), r"main_envs \(-1\) must be in 0..num_envs-1"),
        (
            dict(num_envs=8, num_workers=2, main_envs=2, batch_size=4),
            r"main_envs needs batch_size == num_envs .*drop --batch-size or --main-envs",
        ),
        (
            dict(num_envs=8, num_workers=2, main_envs=3),
            r"num_envs - main_envs \(8 - 3\) must be a multiple of num_workers \(2\)",
        ),
    ],
)
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
    with vector.make(
        "cartpole", backend="multiprocessing", num_envs=4, num_workers=2, native=False, start_method="spawn"
    ) as venv:
        got = trajectories(venv, 15, 2)
    assert_same(expected, got)


def test_bench_cli_and_autotune_take_main_envs() -> None:
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands
    from pufferbox.throughput import autotune, candidate_configs, command_line

    load_commands()
    args = [
        "bench",
        "cartpole",
        "--backend",
        "multiprocessing",
        "--num-envs",
        "4",
        "--num-workers",
        "1",
        "--main-envs",
        "2",
        "--no-native",
        "--seconds",
        "0.1",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0 and "main_envs=2" in result.output, result.output
    result = CliRunner().invoke(cli, [*args, "--batch-size", "2"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "main_envs needs batch_size == num_envs" in result.output
    result = CliRunner().invoke(cli, ["bench", "cartpole", "--main-envs", "2", "--num-envs", "4"])
    assert result.exit_code == 2 and "--main-envs needs --backend multiprocessing" in result.output

    mains = [c for c in candidate_configs(cpus=4, max_envs=64) if c.get("main_envs")]
    assert mains and all(c["num_workers"] == 3 and (c["num_envs"] - c["main_envs"]) % 3 == 0 for c in mains)
    assert not [c for c in candidate_configs(cpus=1) if c.get("main_envs")], "one core: nothing to overlap"
    results = autotune(
        "cartpole",
        seconds=0.1,
        native=False,
        configs=[dict(backend="multiprocessing", num_envs=4, num_workers=1, main_envs=2)],
    )
    assert (
        results[0]["command"]
        == command_line("cartpole", results[0])
        == ("pufferbox bench cartpole --backend multiprocessing --num-envs 4 --num-workers 1 --main-envs 2")
    )
