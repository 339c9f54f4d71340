"""What data-parallel learners say when one is lost (issue 54, defect 12): a learner that lost rank 0
promises no checkpoint, and names itself; rank 0 names a silent learner by rank and pid, stopped or not."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import types

import torch

from pufferbox.train.distributed import Team, silent_learners
from pufferbox.vector.pool import process_state


def test_a_learner_that_lost_rank_0_names_itself_and_promises_no_checkpoint():
    lost = Team(1, 2, torch.device("cpu")).lost(RuntimeError("Connection closed by peer"))
    assert str(lost).startswith(f"learner 1 (pid {os.getpid()}): lost the other learners (Connection closed by peer)")
    assert "keeps the checkpoint" not in str(lost)


def test_a_stopped_learner_is_named_by_rank_and_pid():
    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
    try:
        os.kill(sleepers[1].pid, signal.SIGSTOP)
        deadline = time.monotonic() + 10  # the signal is delivered asynchronously: wait for the kernel to say so
        while not process_state(sleepers[1].pid).startswith("stopped") and time.monotonic() < deadline:
            time.sleep(0.01)
        processes = [types.SimpleNamespace(pid=p.pid, exitcode=None) for p in sleepers]
        assert silent_learners(processes) == f"learner 2 (pid {sleepers[1].pid}, stopped (SIGSTOP?))"
        os.kill(sleepers[1].pid, signal.SIGCONT)
        both = silent_learners(processes)  # none stopped: every learner still there, with its state
        assert f"learner 1 (pid {sleepers[0].pid}" in both and f"learner 2 (pid {sleepers[1].pid}" in both
    finally:
        for p in sleepers:
            p.kill()
            p.wait()


def test_more_learner_processes_than_cores_are_refused_in_one_line(tmp_path):
    """Before: `--learners 16` on 2 cores was accepted without a word and ran 16 processes taking turns."""
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands

    load_commands()
    n = 8 * len(os.sched_getaffinity(0))
    args = ["train", "cartpole", "--learners", str(n), "--num-envs", str(n), "--run-dir", str(tmp_path / "run")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: train.learners={n}: each learner is a process"), lines
    assert f"--learners {len(os.sched_getaffinity(0))} or fewer" in lines[0]
    assert not (tmp_path / "run").exists()


def test_only_rank_0_says_what_a_stop_signal_does(capsys):
    """Every learner gets SIGTERM; before, each printed "saving a checkpoint after this update"."""
    from pufferbox.train.runner import stop_on_signals

    for rank in (0, 1, 2):
        trainer = types.SimpleNamespace(stop_requested=False, team=types.SimpleNamespace(rank=rank))
        stop_on_signals(trainer).handler(signal.SIGTERM, None)
        assert trainer.stop_requested
    assert capsys.readouterr().out.count("SIGTERM: saving a checkpoint after this update") == 1
