"""Every command that builds envs refuses a size that cannot fit, up front, as ``train`` does (issue 54,
defect 1): one ``Error:`` line naming the env, the envs' count, the GiB they need and the memory available,
exit 2. The subprocesses run under an address-space limit (``ulimit -v``, which the check honours), so
code that allocates first fails these tests with a MemoryError or a kill instead of refusing."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

import pufferbox.vector as vector
import pufferbox.vector.memory as memory
from pufferbox.vector.base import VectorConfigError

LIMIT = 6 * 2**30  # bytes of address space a subprocess may take (torch alone maps about 2 GiB)


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "cartpole", "--num-envs", "100000000"],
        ["bench", "cartpole", "--no-native", "--num-envs", "10000000"],
        ["bench", "cartpole", "--backend", "multiprocessing", "--num-envs", "100000000"],
        ["check", "cartpole", "--num-envs", "100000000"],
        ["bench", "cartpole", "--backend", "multiprocessing", "--num-envs", "100000", "--num-workers", "100000"],
        ["train", "cartpole", "--backend", "multiprocessing", "--num-envs", "100000", "--num-workers", "100000"],
    ],
    ids=["bench", "bench-emulated", "bench-multiprocessing", "check", "bench-workers", "train-workers"],
)
def test_every_command_that_builds_envs_refuses_a_size_that_cannot_fit(args, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pufferbox", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=120,
        preexec_fn=limited,
        cwd=tmp_path,  # train's default run dir (runs/...) would go here: none may be left
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cartpole: "), proc.stderr
    for needle in ["envs need at least", "GiB", "env buffers", "memory available", "fix: lower --num-envs"]:
        assert needle in lines[0], lines[0]
    assert not list(tmp_path.rglob("config.toml"))


def test_a_vector_env_is_refused_before_its_batch_spaces_or_envs_exist(monkeypatch):
    """The check runs on every backend's construction, against the memory available now."""
    built: list = []
    with monkeypatch.context() as patch:
        patch.setattr(memory, "available_memory", lambda: 10_000)
        patch.setattr(vector.EnvFactory, "blocks", lambda self, *a: built.append(a))
        with pytest.raises(VectorConfigError, match=r"cartpole: 1,000 envs need at least .* emulated envs"):
            vector.make("cartpole", num_envs=1000, native=False)
    assert built == []
    monkeypatch.setattr(memory, "available_memory", lambda: None)  # unknown: nothing refused
    with vector.make("cartpole", num_envs=2) as venv:
        assert venv.num_envs == 2


@pytest.mark.parametrize("env", ["cartpole", "acrobot"])  # a native block listing every key; gymnasium.make
def test_a_config_with_thousands_of_env_keys_is_refused_quickly_in_one_short_line(tmp_path, env):
    """Before: 200,000 `[env]` keys took minutes (a regex per key over a message naming them all) and 5,000
    made a 34 KB error line."""
    import time

    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands

    load_commands()
    config = tmp_path / "big.toml"
    config.write_text("[env]\n" + "".join(f"k{i} = {i}\n" for i in range(50_000)))
    start = time.monotonic()
    result = CliRunner().invoke(cli, ["train", env, "--config", str(config), "--run-dir", str(tmp_path / "run")])
    assert time.monotonic() - start < 30
    assert result.exit_code == 2, result.output[:2000]
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: env.k0: {env} does not accept this key"), lines[0][:500]
    assert len(lines[0]) < 1000, len(lines[0])
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("hidden", ["9223372036854775807", "1000000"])
def test_a_policy_too_wide_for_the_memory_is_refused_in_one_line(tmp_path, hidden):
    """Also found: `--set policy.hidden_size=<int64 max>` was a torch traceback ("Storage size calculation
    overflowed"), and 1,000,000 would allocate terabytes of weights."""
    proc = subprocess.run(
        [sys.executable, "-m", "pufferbox", "train", "cartpole", "--run-dir", str(tmp_path / "run")]
        + ["--no-tensorboard", "--set", f"policy.hidden_size={hidden}"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: policy.hidden_size={int(hidden):,} need at least"), lines
    assert "fix: lower policy.hidden_size" in lines[0] and not (tmp_path / "run").exists()
