"""Sizes the machine cannot hold are refused up front (issue 38, defect 3): one line naming the sizes and
the memory they need against what the machine has, exit 2, no run directory, nothing allocated first.

The subprocesses run under an address-space limit, so the code before the fix (which allocated until
the kernel's OOM killer ended it) fails these tests with a MemoryError instead of taking the machine down.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

import pufferbox.train.assembly as assembly
from pufferbox.registry import get_registry
from pufferbox.train.config import ConfigError, resolve_run_config
from pufferbox.train.trainer import Trainer

LIMIT = 6 * 2**30  # bytes of address space a subprocess may take (torch alone maps about 2 GiB)


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.mark.slow  # a CLI subprocess each (about 5 s, more on a loaded machine)
@pytest.mark.parametrize(
    "args, sizes",
    [
        (["--num-envs", "1000000000"], ["vec.num_envs=1,000,000,000", "train.num_steps=32"]),
        (["--set", "train.num_steps=1000000000"], ["train.num_steps=1,000,000,000"]),
        (["--backend", "multiprocessing", "--num-envs", "100000000"], ["vec.num_envs=100,000,000"]),
    ],
    ids=["num-envs", "num-steps", "multiprocessing"],
)
def test_an_absurd_size_is_refused_in_one_line_before_anything_is_allocated(tmp_path, args, sizes):
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "pufferbox", "train", "cartpole", "--run-dir", str(run_dir), "--no-tensorboard", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=120,
        preexec_fn=limited,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for needle in [*sizes, "GiB", "rollout", "this machine has", "fix:"]:
        assert needle in lines[0], lines[0]
    assert not run_dir.exists()  # no run directory, so no .lock either
    assert list(tmp_path.iterdir()) == []


def test_sizes_over_the_memory_available_are_refused_before_the_envs_start(monkeypatch):
    """The estimate is checked against what the machine has now (MemAvailable, a cgroup's limit)."""
    config = resolve_run_config(
        get_registry().get("cartpole").training.config,
        overrides=["vec.num_envs=64", "train.num_steps=128", "vec.backend=multiprocessing", "vec.num_workers=2"],
    )
    needs = assembly.memory_needed(get_registry().get("cartpole"), config.train, config.vec, config.policy, {})
    # 64 envs x 129 steps x (4 floats of obs + an int64 action + 14 bytes), twice; 64 rows of buffers
    assert needs["rollout"] == 2 * 64 * 129 * (16 + 8 + 14)
    assert needs["env buffers"] == 64 * (16 + 4 + 3 + 8 + 16)
    monkeypatch.setattr(assembly, "available_memory", lambda: sum(needs.values()))
    Trainer("cartpole", config).close()  # what fits is built as before
    started = []
    monkeypatch.setattr(assembly, "make_vec_env", lambda *a, **k: started.append(a))
    monkeypatch.setattr(assembly, "available_memory", lambda: sum(needs.values()) - 1)
    with pytest.raises(ConfigError, match=r"vec.num_envs=64 x train.num_steps=128 need at least .* GiB"):
        Trainer("cartpole", config)
    assert started == []
