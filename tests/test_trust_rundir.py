"""Run-directory faults of issue 38's second round: the run dir deleted or replaced under a live run
(defect 5) is one line and a non-zero exit, never a success that names a checkpoint of no run."""

from __future__ import annotations

import os
import shutil
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
    shutil.rmtree(run_dir)
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
