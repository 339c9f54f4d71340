"""Worker deadlines count only the time the trainer waits (issue 38, "also try": SIGSTOP/SIGCONT of the
trainer itself). A trainer that was stopped, or busy elsewhere, longer than ``step_timeout`` blamed its
healthy workers (``WorkerTimeoutError``) as soon as it looked again; a stopped worker is still caught."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import pufferbox.vector as vector
from pufferbox.vector.base import WorkerTimeoutError


def test_a_caller_away_longer_than_step_timeout_does_not_blame_its_workers():
    with vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, step_timeout=1.0) as venv:
        venv.reset(seed=0)
        for _ in range(2):
            venv.send(np.zeros(4, dtype=np.int64))
            time.sleep(2.5)  # the trainer stopped (SIGSTOP) or learning while the workers answered at once
            obs = venv.recv()[0]
            assert obs.shape[0] == 4


def test_a_stopped_worker_is_still_caught_after_the_caller_was_away():
    venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, step_timeout=1.0)
    try:
        venv.reset(seed=0)
        os.kill(venv.pids[1], signal.SIGSTOP)
        venv.send(np.zeros(4, dtype=np.int64))
        time.sleep(2.5)
        start = time.monotonic()
        with pytest.raises(WorkerTimeoutError, match="worker 1 .*no answer within step_timeout=1s"):
            venv.recv()
        assert 0.9 < time.monotonic() - start < 6.0  # a full step_timeout of waiting, then the error
    finally:
        venv.close()
