"""Run-directory faults of issue 38's second round: the run dir deleted or replaced under a live run
(defect 5) is one line and a non-zero exit, never a success that names a checkpoint of no run."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pufferbox.train.rundir import RunDirLost
from pufferbox.train.runner import run

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
SMALL = ["train.num_steps=32", "vec.num_envs=4", "train.checkpoint_interval=2", "train.stop_on_solve=false"]


def wait_for_lines(proc: subprocess.Popen, path: Path, lines: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() or len(path.read_text().splitlines()) < lines:
        assert proc.poll() is None, f"trainer exited {proc.returncode} early"
        assert time.monotonic() < deadline, "trainer wrote no metrics in time"
        time.sleep(0.1)


@pytest.mark.parametrize("tensorboard", [False, True], ids=["no-tensorboard", "tensorboard"])
def test_deleting_the_run_dir_mid_run_is_one_line_and_a_failure(tmp_path, tensorboard):
    run_dir = tmp_path / "run"
    args = ["train", "cartpole", "--run-dir", str(run_dir), "--total-steps", "10000000", "--num-envs", "4"]
    args += ["--set", "train.num_steps=32", "--set", "train.checkpoint_interval=2"]
    args += ["--set", "train.stop_on_solve=false"] + ([] if tensorboard else ["--no-tensorboard"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "pufferbox", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    wait_for_lines(proc, run_dir / "metrics.jsonl", 3)
    # Moved out in one atomic step, then removed: a plain rmtree races the trainer's next checkpoint
    # write into checkpoints/ (ENOTEMPTY), which is the test's own fault, not the trainer's.
    gone = tmp_path / "gone"
    run_dir.rename(gone)
    shutil.rmtree(gone)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (out, err)
    assert err.strip().splitlines() == [err.strip()] and err.startswith("Error: "), err
    assert "deleted or replaced during training" in err and str(run_dir) in err
    assert "Traceback" not in out + err and "checkpoint:" not in out
    assert not run_dir.exists()  # nothing re-created it (a checkpoints/ of no run)


@pytest.mark.parametrize("fault", ["deleted", "replaced"])
def test_a_run_dir_lost_before_the_final_checkpoint_is_never_reported_as_saved(tmp_path, fault):
    run_dir = tmp_path / "run"

    def lose_it(metrics: dict) -> None:
        if metrics["update"] == 3:  # the last update: next comes the final checkpoint
            shutil.rmtree(run_dir)
            if fault == "replaced":
                run_dir.mkdir()

    lose_it.close = lambda: None
    with pytest.raises(RunDirLost, match="deleted or replaced during training"):
        run(
            "cartpole",
            overrides=[*SMALL, "train.total_steps=384"],
            run_dir=run_dir,
            dashboard=False,
            tensorboard=False,
            callbacks=[lose_it],
        )
    assert not (run_dir / "config.toml").exists()
    assert fault == "replaced" or not run_dir.exists()


@pytest.mark.parametrize("overlap", ["false", "true"])
def test_sigterm_reaps_the_workers_before_the_trainer_exits(tmp_path, overlap):
    """Issue 38, defect 9: a worker was still alive 1-3 s after the trainer exited on SIGTERM."""
    psutil = pytest.importorskip("psutil")
    run_dir = tmp_path / "run"
    args = ["train", "cartpole", "--run-dir", str(run_dir), "--total-steps", "10000000", "--num-envs", "4"]
    args += ["--backend", "multiprocessing", "--num-workers", "2", "--no-tensorboard"]
    args += ["--set", "train.num_steps=32", "--set", "train.stop_on_solve=false", "--set", f"train.overlap={overlap}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pufferbox", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    try:
        wait_for_lines(proc, run_dir / "metrics.jsonl", 2)
        children = psutil.Process(proc.pid).children(recursive=True)
        workers = [c for c in children if "resource_tracker" not in " ".join(c.cmdline())]
        assert len(workers) == 2
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    left = []
    for worker in workers:  # at the moment the trainer is gone: no grace
        with contextlib.suppress(psutil.NoSuchProcess):
            if worker.status() != psutil.STATUS_ZOMBIE:
                left.append(worker)
    assert not left, f"workers alive after the trainer exited: {left}"


@pytest.mark.parametrize("resume", [False, True])
def test_run_dir_refuses_a_non_empty_foreign_directory(tmp_path, resume):
    """Issue 38, defect 9: --run-dir's help says "new or empty", yet a directory of someone's files was taken."""
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands

    load_commands()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me\n")
    args = ["train", "cartpole", "--total-steps", "256", "--num-envs", "4", "--set", "train.num_steps=32"]
    args += ["--resume", str(foreign)] if resume else ["--run-dir", str(foreign)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    needle = "is no pufferbox run; --run-dir takes a new or empty directory" if not resume else "not a run directory"
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and needle in result.stderr, result.stderr
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]  # untouched: not even a lock file
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(empty), *args[2:8], "--no-tensorboard"])
    assert resume or result.exit_code == 0, result.output  # an empty directory is taken


@pytest.mark.parametrize("interval", [1, 5])
def test_a_broken_env_advises_resume_only_where_a_checkpoint_was_saved(tmp_path, monkeypatch, interval):
    """Issue 38, defect 9: a start that broke on its first step advised `--resume` of a run dir that was
    never kept; the line names --resume only when the run saved a checkpoint to resume."""
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands
    from pufferbox.registry import get_registry
    from pufferbox.vector.testenvs import env_spec_for

    load_commands()
    registry = get_registry()
    real_get = registry.get
    faulty = env_spec_for("faulty", fail_at=40, mode="raise")
    monkeypatch.setattr(registry, "get", lambda name, plugin=None: faulty if name == "faulty" else real_get(name, plugin))
    run_dir = tmp_path / "broken"
    args = ["train", "faulty", "--run-dir", str(run_dir), "--backend", "serial", "--num-envs", "4", "--no-tensorboard"]
    args += ["--set", "train.num_steps=16", "--set", f"train.checkpoint_interval={interval}", "--total-steps", "4096"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    if interval == 1:  # updates 1 and 2 were saved before step 40
        assert line.endswith(f"; continue with `pufferbox train --resume {run_dir}`"), line
    else:
        assert line.endswith("; no checkpoint was saved: start a new run once the env is fixed"), line
