"""Extreme finite settings (issue 38, defect 7): refused up front in one line (learning_rate above 1, any
float setting beyond float32), or, where a representable value still makes every update non-finite, one
line and no run directory left behind (a start that learned nothing is a failed start)."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from pufferbox import EnvBuild, EnvSpec
from pufferbox.registry import get_registry
from pufferbox.train.nonfinite import NonFiniteError
from pufferbox.train.runner import run

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
SMALL = ["--total-steps", "2048", "--num-envs", "4", "--set", "train.num_steps=32"]

pytestmark = pytest.mark.usefixtures("fresh_registry")  # tests/conftest.py


def train(run_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pufferbox", "train", "cartpole", "--run-dir", str(run_dir), *SMALL, *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=180,
    )


@pytest.mark.parametrize(
    ("setting", "needle"),
    [
        ("train.learning_rate=1e300", "train.learning_rate: must be at most 1 (Adam's step per weight), got 1e+300"),
        ("train.learning_rate=2", "train.learning_rate: must be at most 1"),
        ("train.ent_coef=1e39", "train.ent_coef: must be at most 3.403e+38 (float32), got 1e+39"),
        ("train.clip_coef=1e300", "train.clip_coef: must be at most 3.403e+38 (float32)"),
        ("train.seed=-5", "Error: train.seed: must be >= 0, got -5 (--set train.seed=-5)"),  # not blamed on envs
        ("train.seed=4294967296", "train.seed: must be at most 4294967295 (the envs' seeds derive from it)"),
        # an update that never ends: a stop signal is looked at between updates only
        ("train.update_epochs=9223372036854775807", "train.update_epochs: must be at most 1000 (passes over one rollout"),
    ],
)
def test_extreme_settings_are_refused_in_one_line_before_a_run_dir_exists(tmp_path, setting, needle):
    proc = train(tmp_path / "run", "--set", setting)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and needle in proc.stderr, proc.stderr
    assert not (tmp_path / "run").exists() and "--resume" not in proc.stderr


@pytest.mark.parametrize("setting", ["train.ent_coef=1e38", "train.vf_coef=1e38"])
def test_settings_that_make_every_update_non_finite_leave_no_run_dir(tmp_path, setting):
    proc = train(tmp_path / "run", "--set", setting)  # TensorBoard on: its files go too
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
    assert "updates in a row had a reward, value or loss that is not finite" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and not (tmp_path / "run").exists()


class LateNaNReward(gymnasium.Env):
    """CartPole-like spaces; rewards turn NaN after 200 steps (the run learned something before)."""

    observation_space = spaces.Box(-1, 1, (4,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = getattr(self, "t", 0)
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(4, np.float32), float("nan") if self.t > 200 else 1.0, False, self.t % 10 == 0, {}


def make_late_nan_reward() -> LateNaNReward:
    return LateNaNReward()


def test_a_run_that_learned_before_going_non_finite_keeps_its_run_dir(tmp_path, monkeypatch):
    registry = get_registry()
    real_get = registry.get
    spec = EnvSpec("latenan", EnvBuild(make_late_nan_reward))
    monkeypatch.setattr(registry, "get", lambda name, plugin=None: spec if name == "latenan" else real_get(name, plugin))
    overrides = ["vec.num_envs=2", "vec.backend=serial", "train.num_steps=16", "train.checkpoint_interval=0"]
    with pytest.raises(NonFiniteError, match="updates in a row") as caught:
        run("latenan", overrides=overrides, run_dir=tmp_path / "run", dashboard=False, tensorboard=False)
    assert not caught.value.learned_nothing
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) > 3  # its metrics are kept
