"""`pufferbox train`, `eval`, `plot` end to end: run directory contents, resume, Ctrl-C, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands

QUICK = ["--num-envs", "4", "--set", "train.num_steps=32", "--set", "train.checkpoint_interval=2"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    load_commands()
    run_dir = tmp_path_factory.mktemp("runs") / "cp"
    result = CliRunner().invoke(
        cli, ["train", "cartpole", "--run-dir", str(run_dir), "--total-steps", "1024", "--seed", "7", *QUICK]
    )
    assert result.exit_code == 0, result.output
    assert f"run directory: {run_dir}" in result.output
    assert "training on cpu (auto), " in result.output  # the log shows the resolved device and threads
    return run_dir


def test_run_directory_holds_config_metrics_tensorboard_checkpoints(trained):
    config = tomllib.loads((trained / "config.toml").read_text())
    assert config["run"]["env"] == "cartpole"
    assert config["train"]["device"] == "auto" and config["train"]["torch_threads"] == 0  # as asked, for resumes
    assert config["run"]["device"] == "cpu"  # what they resolved to (no GPU on the test machine)
    assert config["run"]["torch_threads"] == 1  # CartPole's MLP is a small policy: one thread on any machine
    assert config["train"]["seed"] == 7 and config["vec"]["num_envs"] == 4 and config["train"]["num_steps"] == 32
    lines = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    assert [m["global_step"] for m in lines] == [128 * i for i in range(1, 9)]
    for key in (
        "global_step",
        "wall_time",
        "sps",
        "episode_return",
        "episode_length",
        "policy_loss",
        "value_loss",
        "entropy",
        "time_env",
        "time_inference",
        "time_learn",
    ):
        assert key in lines[-1], key
    assert any(p.name.startswith("events.out.tfevents") for p in (trained / "tb").iterdir())
    names = sorted(p.name for p in (trained / "checkpoints").iterdir())
    assert names == ["ckpt-00000004.pt", "ckpt-00000006.pt", "ckpt-00000008.pt"]  # the last 3 kept


def test_resume_continues_the_run(trained, tmp_path):
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(trained, run_dir)
    result = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--total-steps", "1536"])
    assert result.exit_code == 0, result.output
    steps = [json.loads(line)["global_step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps[-5:] == [1024, 1152, 1280, 1408, 1536]


def test_eval_prints_json(trained):
    result = CliRunner().invoke(cli, ["eval", "cartpole", "--checkpoint", str(trained), "--episodes", "3"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["episodes"] == 3 and len(out["returns"]) == 3 and out["mean_return"] > 0 and "std_return" in out


def test_eval_saves_a_gif(trained, tmp_path):
    gif = tmp_path / "cp.gif"
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(trained), "--episodes", "1", "--video", str(gif)])
    assert result.exit_code == 0, result.output
    assert gif.stat().st_size > 1000 and gif.read_bytes()[:3] == b"GIF"


def test_eval_video_holds_the_first_episode_only(trained, tmp_path):
    import json

    import imageio.v2 as imageio

    gif = tmp_path / "cp.gif"
    args = ["eval", "--checkpoint", str(trained), "--episodes", "3", "--video", str(gif)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["episodes"] == 3
    frames = len(imageio.mimread(gif, memtest=False))
    # at most one frame per step of the first game (the GIF writer merges identical frames), none of the others
    assert 0.5 * report["lengths"][0] <= frames <= report["lengths"][0] < sum(report["lengths"]), (frames, report)


def test_plot_overlays_runs(trained, tmp_path):
    png = tmp_path / "curves.png"
    result = CliRunner().invoke(cli, ["plot", str(trained), str(trained), "-o", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "cartpol"], "Error: unknown env 'cartpol'"),
        (["train", "cartpole", "--device", "tpu"], "Error: train.device: unknown device 'tpu'"),
        (["eval", "cartpole", "--checkpoint", "."], "Error: .: no checkpoint"),
    ],
)
def test_user_errors_are_one_line_exit_2(args, message, tmp_path):
    result = CliRunner().invoke(cli, [*args, *(["--run-dir", str(tmp_path / "r")] if args[0] == "train" else [])])
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith(message) and len(result.output.strip().splitlines()) == 1


def test_ctrl_c_saves_a_checkpoint_and_exits_cleanly(tmp_path):
    run_dir = tmp_path / "interrupted"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pufferbox",
            "train",
            "cartpole",
            "--run-dir",
            str(run_dir),
            "--total-steps",
            "10000000",
            "--no-tensorboard",
            *QUICK,
            "--set",
            "train.stop_on_solve=false",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while not (run_dir / "metrics.jsonl").exists() or not (run_dir / "metrics.jsonl").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "timeout"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "stopped: cartpole" in out and "Traceback" not in out
    from pufferbox.train.checkpoint import latest_checkpoint, load_checkpoint

    state = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert state["global_step"] == last["global_step"] > 0


@pytest.mark.parametrize(
    "backend, mode, needle",
    [
        ("multiprocessing", "raise", "raised ValueError: deliberate failure at step 40"),
        ("multiprocessing", "exit", "exited with status 3"),
        ("serial", "raise", "env 0 in the main process (pid"),
    ],
)
@pytest.mark.timeout(90)
def test_a_broken_env_worker_is_one_line_naming_it_and_the_resume(tmp_path, monkeypatch, backend, mode, needle):
    """Found by the chaos suite: a worker that raised or died ended `pufferbox train` with a traceback
    (and on the serial backend an env's own exception did, until it became a WorkerError too)."""
    from pufferbox.registry import get_registry
    from pufferbox.vector.testenvs import env_spec_for

    load_commands()
    registry = get_registry()
    real_get = registry.get
    monkeypatch.setattr(
        registry, "get", lambda name: env_spec_for("faulty", fail_at=40, mode=mode) if name == "faulty" else real_get(name)
    )
    run_dir = tmp_path / "broken"
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "faulty",
            "--run-dir",
            str(run_dir),
            "--backend",
            backend,
            *(["--num-workers", "2"] if backend == "multiprocessing" else []),
            "--num-envs",
            "4",
            "--set",
            "train.num_steps=16",
            "--set",
            "train.checkpoint_interval=5",
            "--total-steps",
            "4096",
            "--no-tensorboard",
        ],
    )
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: faulty: ") and needle in line and "Traceback" not in result.output
    assert "no checkpoint was saved: start a new run" in line  # it broke before the first checkpoint
    if mode == "raise":  # the env's traceback is kept, not printed
        assert "deliberate failure" in (run_dir / "worker-error.txt").read_text()
