"""A sweep on storage that fills up (issue 38, "also try"): one line, never a trial counted as failed for
the disk's sake (its settings run again once there is room), never an Optuna/SQLite traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.train.rundir import StorageError

optuna = pytest.importorskip("optuna")

TINY = ["--set", "train.total_steps=1024", "--set", "vec.num_envs=4", "--set", "train.num_steps=32"]
TINY += ["--set", "train.checkpoint_interval=0", "--set", "policy.hidden_size=16", "--pruner", "none"]


def study_of(run_dir: Path):
    meta = tomllib.loads((run_dir / "sweep.toml").read_text())
    return optuna.load_study(study_name=meta["study_name"], storage=meta["storage"])


def test_a_trial_stopped_by_a_full_disk_stops_the_sweep_and_runs_again_later(tmp_path, monkeypatch):
    import pufferbox.train.runner as runner

    real_run, calls = runner.run, []

    def full_at_the_second_trial(*args, **kwargs):
        calls.append(kwargs["run_dir"])
        if len(calls) == 2:
            raise StorageError(f"{kwargs['run_dir']}: no space left on device (ENOSPC); free some space")
        return real_run(*args, **kwargs)

    monkeypatch.setattr(runner, "run", full_at_the_second_trial)
    load_commands()
    run_dir = tmp_path / "sw"
    result = CliRunner().invoke(cli, ["sweep", "cartpole", "--trials", "3", "--run-dir", str(run_dir), *TINY])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"Error: trial 1: {run_dir / 'trials' / '1'}: no space left on device (ENOSPC); the sweep stopped: free some "
        "space (or fix the storage), then run the same command again to continue the sweep"
    )
    cut = study_of(run_dir).trials[1]
    assert [t.state.name for t in study_of(run_dir).trials] == ["COMPLETE", "FAIL", "WAITING"]  # queued again
    assert "error" not in cut.user_attrs  # not counted as a finished trial
    result = CliRunner().invoke(cli, ["sweep", "cartpole", "--trials", "3", "--run-dir", str(run_dir), *TINY])
    assert result.exit_code == 0, result.output
    trials = study_of(run_dir).trials
    done = [t for t in trials if t.state.name == "COMPLETE"]
    assert len(done) == 3 and sum(t.params == cut.params for t in done) == 1  # its settings ran again, once


def can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"]
    return subprocess.run(probe, capture_output=True).returncode == 0


@pytest.mark.skipif(not can_mount(), reason="needs `unshare -m` and mount (root or CAP_SYS_ADMIN) for a small tmpfs")
@pytest.mark.parametrize(("size_kb", "needle"), [(120, "study.db: the study could not be written"), (400, "ENOSPC")])
def test_a_sweep_on_a_disk_that_fills_up_is_one_line(tmp_path, size_kb, needle):
    mnt = tmp_path / "small"
    mnt.mkdir()
    sweep = [sys.executable, "-m", "pufferbox", "sweep", "cartpole", "--trials", "3", "--run-dir", f"{mnt}/run", *TINY]
    sweep += ["--set", "train.checkpoint_interval=1", "--set", "train.total_steps=4096"]
    script = f"mount -t tmpfs -o size={size_kb}k tmpfs {mnt} && " + " ".join(sweep)
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], proc.stderr[-3000:]
