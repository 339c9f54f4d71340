"""What data-parallel learners say when one is lost (issue 54, defect 12): a learner that lost rank 0
promises no checkpoint, and names itself; rank 0 names a silent learner by rank and pid, stopped or not."""

from __future__ import annotations

import os
import signal
import subprocess
import types

import torch

from pufferbox.train.distributed import Team, silent_learners


def test_a_learner_that_lost_rank_0_names_itself_and_promises_no_checkpoint():
    lost = Team(1, 2, torch.device("cpu")).lost(RuntimeError("Connection closed by peer"))
    assert str(lost).startswith(f"learner 1 (pid {os.getpid()}): lost the other learners (Connection closed by peer)")
    assert "keeps the checkpoint" not in str(lost)


def test_a_stopped_learner_is_named_by_rank_and_pid():
    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
    try:
        os.kill(sleepers[1].pid, signal.SIGSTOP)
        processes = [types.SimpleNamespace(pid=p.pid, exitcode=None) for p in sleepers]
        assert silent_learners(processes) == f"learner 2 (pid {sleepers[1].pid}, stopped (SIGSTOP?))"
        os.kill(sleepers[1].pid, signal.SIGCONT)
        both = silent_learners(processes)  # none stopped: every learner still there, with its state
        assert f"learner 1 (pid {sleepers[0].pid}" in both and f"learner 2 (pid {sleepers[1].pid}" in both
    finally:
        for p in sleepers:
            p.kill()
            p.wait()

