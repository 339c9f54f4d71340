"""A CPU backend training on a GPU: pinned staging, one copy up per input, one wait per step.

No GPU here: the staged path (what CUDA uses, less the page pinning and the event) runs on the
CPU, and the act step runs under tests/test_train_cuda.py's ``SyncGuard`` with only the
Transfer's two directions let through, counted: nothing else in the step reads device data.
"""

from __future__ import annotations

import numpy as np
import torch
from test_train_cuda import SyncGuard  # tests/ is on sys.path (rootdir-relative imports)

from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer
from pufferbox.train.transfer import Transfer


def test_staging_buffers_are_reused_and_results_do_not_alias_them():
    t = Transfer(torch.device("cpu"), staged=True)
    a = t.to_device("obs", np.arange(6, dtype=np.float32).reshape(2, 3))
    b = t.to_device("obs", np.ones((2, 3), np.float32))
    assert len(t.buffers) == 1 and torch.equal(b, torch.ones(2, 3))  # one staging buffer for both steps
    (out,) = t.to_host([a.sum(1)])
    t.buffers[("out0", (2,), torch.float32)].fill_(-1)
    assert out.tolist() == [3.0, 12.0]  # the caller's array is its own


def config() -> dict:
    return resolve_config(
        overrides=[
            "vec.num_envs=4",
            "train.num_steps=8",
            "policy.hidden_size=8",
            "train.checkpoint_interval=0",
            "train.seed=3",
        ]
    )


def staged_update(staged: bool) -> tuple[dict, dict]:
    """One update of a fresh trainer (its own seeding: runs one after the other compare exactly)."""
    trainer = Trainer("cartpole", config())
    counts = {"up": 0, "down": 0}
    try:
        if not staged:
            return trainer.train_update(), counts
        acting = trainer.collector.acting  # the host collector's act step (train/act.py)
        transfer = acting.transfer = Transfer(torch.device("cpu"), staged=True)
        up, down, act = transfer.to_device, transfer.to_host, acting.act

        def to_device(name, array):  # the Transfer's own copies are the step's allowed transfers
            counts["up"] += 1
            with torch._C.DisableTorchFunction():
                return up(name, array)

        def to_host(tensors):
            counts["down"] += 1
            with torch._C.DisableTorchFunction():
                return down(tensors)

        def guarded(*args, **kwargs):
            with SyncGuard():
                return act(*args, **kwargs)

        transfer.to_device, transfer.to_host, acting.act = to_device, to_host, guarded
        return trainer.train_update(), counts
    finally:
        trainer.close()


def test_staged_act_step_reads_the_device_once_and_trains_the_same():
    a, _ = staged_update(False)
    b, counts = staged_update(True)
    steps = 8 + 1  # the rollout's steps and the next rollout's first obs
    assert counts == {"up": 2 * steps, "down": steps}  # obs and starts up, everything down in one wait
    assert a["policy_loss"] == b["policy_loss"] and a["value_loss"] == b["value_loss"]


def test_the_guard_sees_a_host_read_in_the_act_step():
    """Not vacuous: a ``.cpu()`` of the policy's output inside the guarded step fails."""
    import pytest

    with pytest.raises(AssertionError, match="inside the rollout loop"), SyncGuard():
        Transfer(torch.device("cpu"), staged=False).to_host([torch.ones(2)])
