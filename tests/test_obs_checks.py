"""Observations are checked every step: a wrong shape or None is refused (cheaply), and with
``check_obs`` bounds and NaN/inf too; the error names the env, the step and the field."""

from __future__ import annotations

import numpy as np
import pytest

import pufferbox.vector as vector
from pufferbox.emulation import emulate
from pufferbox.spaces import SpaceError
from pufferbox.vector.base import WorkerError
from pufferbox.vector.testenvs import FaultyEnv, env_spec_for


def step_until_error(env, steps: int = 5) -> None:
    env.vec_reset(seed=0)
    for _ in range(steps):
        env.vec_step(np.array([0]))


@pytest.mark.parametrize("mode, problem", [("short_obs", r"has shape \(1,\)"), ("none_obs", "is None")])
def test_every_step_refuses_a_wrong_shape_or_none(mode: str, problem: str) -> None:
    env = emulate(FaultyEnv(fail_at=3, mode=mode), name="faulty")
    with pytest.raises(
        SpaceError,
        match=rf"^faulty: observation at episode step 3: .*{problem}, the space says "
        r"shape \(2,\), dtype float32",
    ):
        step_until_error(env)


@pytest.mark.parametrize("mode", ["nan_obs", "big_obs"])
def test_values_are_not_scanned_unless_check_obs(mode: str) -> None:
    step_until_error(emulate(FaultyEnv(fail_at=3, mode=mode), name="faulty"))  # the cheap check passes these
    env = emulate(FaultyEnv(fail_at=3, mode=mode), name="faulty", check_obs=True)
    with pytest.raises(SpaceError, match=r"^faulty: observation at episode step 3: .*(outside Box|not finite)"):
        step_until_error(env)


def test_an_infinite_value_inside_infinite_bounds_is_caught_by_check_obs() -> None:
    import gymnasium

    class Unbounded(FaultyEnv):
        def __init__(self):
            super().__init__(fail_at=2, mode="raise")
            self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)

        def step(self, action):
            self.t += 1
            obs = np.array([0.0, np.inf if self.t >= 2 else 0.0], np.float32)
            return obs, 0.0, False, False, {}

    step_until_error(emulate(Unbounded(), name="unbounded"))
    with pytest.raises(SpaceError, match="unbounded: observation at episode step 2: .* is not finite"):
        step_until_error(emulate(Unbounded(), name="unbounded", check_obs=True))


def test_castable_dtypes_and_scalars_still_pass() -> None:
    env = vector.make("cartpole", backend="serial", num_envs=2, native=False, check_obs=True)
    env.reset(seed=0)
    for _ in range(30):
        env.step(np.zeros(2, dtype=np.int64))
    env.close()


def test_backends_pass_the_error_on_and_multiprocessing_names_env_and_worker() -> None:
    spec = env_spec_for("faulty", fail_at=3, mode="short_obs", fail_env_seed=3)
    with vector.make(spec, backend="serial", num_envs=4) as venv:
        venv.reset(seed=0)
        with pytest.raises(SpaceError, match="faulty: observation at episode step 3"):
            for _ in range(5):
                venv.step(np.zeros(4, dtype=np.int64))
        assert venv.stepper.failed_env == 3
    venv = vector.make(spec, backend="multiprocessing", num_envs=4, num_workers=2)
    venv.reset(seed=0)
    with pytest.raises(
        WorkerError,
        match=r"env 3 in worker 1 \(pid \d+\) raised pufferbox.spaces.SpaceError: "
        r"faulty: observation at episode step 3: .*has shape \(1,\)",
    ):
        for _ in range(5):
            venv.step(np.zeros(4, dtype=np.int64))
    assert venv.closed


def test_vec_check_obs_reaches_the_envs() -> None:
    from pufferbox.registry import get_registry
    from pufferbox.train.config import resolve_config
    from pufferbox.train.trainer import Trainer

    cfg = resolve_config(
        get_registry().get("cartpole").training.config,
        overrides=["vec.check_obs=true", "vec.native=false", "vec.num_envs=2", "train.checkpoint_interval=0"],
    )
    trainer = Trainer("cartpole", cfg)
    try:
        assert trainer.venv.factory.check_obs and all(block.check_obs for block in trainer.venv.blocks)
    finally:
        trainer.close()
