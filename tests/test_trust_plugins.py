"""Plugins that misbehave (issue 54): an env whose constructor raises is one line naming the env, its plugin
and the exception's message in every command that builds it, exit 2, no run dir left."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.registry import EnvMeta, EnvSpec, get_registry
from pufferbox.vector.testenvs import env_spec_for


def broken_spec(**kwargs) -> EnvSpec:
    """``faulty`` as if a plugin (distribution ``pufferbox-broken``) registered it."""
    build = env_spec_for("faulty", **kwargs).build
    return EnvSpec(name="faulty", build=build, meta=EnvMeta(plugin="broken", distribution="pufferbox-broken"))


@pytest.fixture
def faulty(monkeypatch):
    """``pufferbox ... faulty`` resolves to :func:`broken_spec` with the kwargs the test sets."""
    load_commands()
    registry, settings = get_registry(), {}
    real_get = registry.get
    monkeypatch.setattr(
        registry, "get", lambda name, plugin=None: broken_spec(**settings) if name == "faulty" else real_get(name, plugin)
    )
    return settings


@pytest.mark.parametrize(
    "args",
    [["train", "faulty", "--no-tensorboard", "--run-dir"], ["info", "faulty"], ["bench", "faulty"], ["check", "faulty"]],
    ids=["train", "info", "bench", "check"],
)
def test_an_env_whose_constructor_raises_is_one_line_naming_env_plugin_and_message(tmp_path, faulty, args):
    faulty["mode"] = "init"
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli, [*args, str(run_dir)] if args[-1] == "--run-dir" else args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    line = lines[0]
    for needle in ["Error: env 'faulty'", "pufferbox-broken", "FileNotFoundError: deliberate failure: no ROM"]:
        assert needle in line, line
    assert not run_dir.exists()


def test_a_run_that_fails_before_its_first_checkpoint_can_be_started_again_in_its_run_dir(tmp_path, faulty):
    """Before: the dir held config.toml and metrics.jsonl, so `--run-dir` refused it (it holds a run) and
    `--resume` refused it too (no checkpoint): a dead end the user had to delete by hand."""
    run_dir = tmp_path / "run"
    args = ["train", "faulty", "--run-dir", str(run_dir), "--num-envs", "4", "--set", "train.num_steps=16"]
    args += ["--set", "train.checkpoint_interval=1000", "--total-steps", "4096", "--no-tensorboard"]
    faulty.update(mode="raise", fail_at=40)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "no checkpoint was saved" in result.output, result.output
    assert (run_dir / "config.toml").is_file() and (run_dir / "worker-error.txt").is_file()

    resumed = CliRunner().invoke(cli, ["train", "--resume", str(run_dir)])
    assert resumed.exit_code == 2, resumed.output
    line = resumed.output.strip()
    assert "failed before its first checkpoint" in line and f"pufferbox train faulty --run-dir {run_dir}" in line, line

    faulty.update(fail_at=10**9)  # the env is fixed: the same command starts the run again
    again = CliRunner().invoke(cli, [*args[:-5], "--set", "train.checkpoint_interval=10", "--total-steps", "512"])
    assert again.exit_code == 0, again.output
    assert not (run_dir / "worker-error.txt").exists() and list((run_dir / "checkpoints").glob("ckpt-*.pt"))


@pytest.mark.parametrize("mode", ["hang_reset", "hang"])
@pytest.mark.timeout(40)
def test_an_env_that_hangs_on_the_serial_backend_is_named_after_step_timeout(tmp_path, faulty, mode):
    """Before: `train` (and `check`) on the default serial backend waited forever, printing nothing."""
    faulty.update(mode=mode, fail_at=20)
    run_dir = tmp_path / "run"
    args = ["train", "faulty", "--run-dir", str(run_dir), "--num-envs", "4", "--set", "train.num_steps=16"]
    args += ["--set", "vec.step_timeout=1", "--total-steps", "4096", "--no-tensorboard"]
    start = time.monotonic()
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: faulty: env 0 in the main process (pid") and "step_timeout=1s" in line, line
    assert "Traceback" not in result.output and time.monotonic() - start < 30


def test_the_serial_deadline_leaves_a_slow_but_finishing_env_alone():
    import pufferbox.vector as vector

    spec = env_spec_for("uneven", mean_step_s=0.3)
    with vector.make(spec, num_envs=1, step_timeout=2) as venv:
        venv.reset(seed=0)
        for _ in range(4):
            venv.step(venv.action_space.sample())


def test_an_all_zero_action_mask_fails_the_masks_check_and_is_named_in_training(tmp_path, monkeypatch):
    """Before: `check` passed such an env and training sampled from every choice as if all were legal."""
    from pufferbox.conformance import check_env_spec

    spec = env_spec_for("empty_mask", empty_at=5)
    (result,) = check_env_spec(spec, steps=30, num_envs=2, checks=["masks"])
    assert not result.ok and "step 5: the action mask of acting row" in str(result) and "all zeros" in str(result)

    load_commands()
    registry = get_registry()
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda name, plugin=None: spec if name == "empty_mask" else real_get(name, plugin))
    args = ["train", "empty_mask", "--run-dir", str(tmp_path / "run"), "--num-envs", "2", "--set", "train.num_steps=16"]
    result = CliRunner().invoke(cli, [*args, "--total-steps", "256", "--no-tensorboard"])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: empty_mask: env 0 (agent row 0) gave its acting agent an action mask of all zeros"), line
