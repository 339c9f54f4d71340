"""The PPO update's minibatch steps read nothing back on the host (the NaN guard included).

Every minibatch step runs under ``SyncGuard`` (the torch function mode that tests/test_train_cuda.py
uses for the cuda backend's rollout loop): ``float(loss)``, ``.item()``, ``bool(t)`` or a copy to the
CPU inside a step fail. The guard is checked once per update; a non-finite step leaves the model as
it was before that step.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from test_train_cuda import SyncGuard  # tests/ is on sys.path (rootdir-relative imports)
from tiny import tiny_agent, tiny_batch

from pufferbox.train.config import TrainConfig
from pufferbox.train.learner import Learner
from pufferbox.train.optim import Adam


def learner_and_batch(minibatches: int = 4) -> tuple[Learner, dict[str, torch.Tensor]]:
    agent, batch = tiny_agent(), tiny_batch(segments=4, horizon=8)
    learner = Learner(agent, TrainConfig(num_minibatches=minibatches, update_epochs=2))
    assert not learner.sync_free  # on the CPU a host read is free; the accelerator path is tested here
    learner.sync_free = True
    return learner, batch


def guard_minibatches(learner: Learner, poison_at: int | None = None) -> list[dict[str, torch.Tensor]]:
    """Run every minibatch step under SyncGuard; ``poison_at``: that step's returns are NaN. Returns the
    weights after each step."""
    step, after = learner.minibatch_step, []

    def guarded(*args):
        args = list(args)
        if len(after) == poison_at:
            args[6] = torch.full_like(args[6], float("nan"))  # the returns: value loss NaN
        with SyncGuard():
            stepped = step(*args)
        after.append(copy.deepcopy(learner.agent.state_dict()))
        return stepped

    learner.minibatch_step = guarded
    return after


def test_minibatch_steps_make_no_host_reads():
    learner, batch = learner_and_batch()
    after = guard_minibatches(learner)
    metrics = learner.update(batch)
    assert len(after) == 8 and metrics["nonfinite_updates"] == 0 and np.isfinite(metrics["value_loss"])
    assert learner.optimizer.step_count == 8


def test_a_nan_minibatch_leaves_the_model_as_before_it_without_a_host_read():
    learner, batch = learner_and_batch()
    after = guard_minibatches(learner, poison_at=2)
    metrics = learner.update(batch)
    assert metrics["nonfinite_updates"] == 1 and "policy_loss" not in metrics
    assert len(after) == 8  # the later steps ran, disabled on the device
    for state in after[2:]:  # steps 0 and 1 changed the model, nothing after them did
        for name, value in state.items():
            torch.testing.assert_close(value, after[1][name], rtol=0, atol=0, msg=name)
    assert learner.optimizer.step_count == 2  # the disabled steps do not count for Adam's bias correction
    assert all(
        torch.isfinite(m).all() and torch.isfinite(v).all()
        for m, v in zip(learner.optimizer.exp_avg, learner.optimizer.exp_avg_sq)
    )


def test_on_the_cpu_a_nan_minibatch_ends_the_update_at_once():
    learner, batch = learner_and_batch()
    learner.sync_free = False
    step, calls = learner.minibatch_step, []

    def poisoned(*args):
        calls.append(1)
        args = list(args)
        if len(calls) == 2:
            args[6] = torch.full_like(args[6], float("nan"))
        return step(*args)

    learner.minibatch_step = poisoned
    assert learner.update(batch)["nonfinite_updates"] == 1 and len(calls) == 2
    assert learner.optimizer.step_count == 1


@pytest.mark.parametrize("enabled", [True, False])
def test_guarded_adam_step_matches_a_plain_step_or_none(enabled):
    torch.manual_seed(1)
    w = torch.nn.Parameter(torch.randn(5))
    plain, guarded = Adam([w], lr=0.1), Adam([w2 := torch.nn.Parameter(w.detach().clone())], lr=0.1)
    for _ in range(3):
        for _opt, p in ((plain, w), (guarded, w2)):
            p.grad = torch.full_like(p, float("nan")) if not enabled else (p**3).detach()
        if enabled:
            plain.step()
        guarded.step(enabled=torch.tensor(enabled))
    if enabled:
        torch.testing.assert_close(w2, w, rtol=1e-6, atol=1e-7)
    else:
        assert torch.equal(w2, w) and all(torch.equal(m, torch.zeros(5)) for m in guarded.exp_avg)
