"""The PPO update reads nothing back on the host between its first and last minibatch step.

On an accelerator (``Learner.sync_free``) the epochs run under ``SyncGuard`` (the torch function mode that
tests/test_train_cuda.py uses for the cuda backend's rollout loop): ``float(loss)``, ``.item()``,
``.tolist()``, ``bool(t)`` or a copy to the CPU anywhere in them fail. The NaN guard and the target_kl stop
are device flags, read once after the epochs; a non-finite step leaves the model as it was before it.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from test_train_cuda import SyncGuard  # tests/ is on sys.path (rootdir-relative imports)
from test_update_equivalence import lstm_agent, random_batch
from tiny import tiny_agent, tiny_batch

from pufferbox.train.config import TrainConfig
from pufferbox.train.learner import Learner
from pufferbox.train.optim import Adam


def learner_and_batch(minibatches: int = 4, **settings) -> tuple[Learner, dict[str, torch.Tensor]]:
    agent, batch = tiny_agent(), tiny_batch(segments=4, horizon=8)
    learner = Learner(agent, TrainConfig(num_minibatches=minibatches, update_epochs=2, **settings))
    assert not learner.sync_free  # on the CPU a host read is free; the accelerator path is tested here
    learner.sync_free = True
    return learner, batch


def guard_epochs(learner: Learner) -> list[int]:
    """Run the whole span of minibatch steps (every epoch) under SyncGuard; returns [steps run]."""
    epochs, count = learner.epochs, [0]
    step = learner.minibatch_step

    def counted(*args):
        count[0] += 1
        return step(*args)

    def guarded(data):
        with SyncGuard():
            return epochs(data)

    learner.minibatch_step, learner.epochs = counted, guarded
    return count


SETTINGS = {
    "plain": ({}, "tiny"),
    "target_kl": ({"target_kl": 1e-6, "learning_rate": 3e-2}, "tiny"),
    "waiting agents": ({}, "waiting"),
    "recurrent": ({"ent_coef": 0.01}, "lstm"),
}


@pytest.mark.parametrize("case", list(SETTINGS))
def test_the_epochs_make_no_host_reads(case):
    settings, kind = SETTINGS[case]
    hp = TrainConfig(num_minibatches=4, update_epochs=3, **settings)
    agent = lstm_agent() if kind == "lstm" else tiny_agent()
    learner = Learner(agent, hp)
    learner.sync_free = True
    count = guard_epochs(learner)
    metrics = learner.update(random_batch(6, 16, 1, waiting=kind == "waiting", lstm=kind == "lstm"))
    per_epoch = 6 if kind == "lstm" else 4  # 6 segments in minibatches of 6 // 4 = 1; 96 transitions in 4
    assert count[0] == 3 * per_epoch and metrics["nonfinite_updates"] == 0 and np.isfinite(metrics["value_loss"])


def test_the_guard_catches_a_host_read_in_a_step():
    learner, batch = learner_and_batch()
    guard_epochs(learner)
    step = learner.minibatch_step

    def reads(mb, rows):
        stepped = step(mb, rows)
        float(rows[-1][0])  # what a logging line inside the loop would do
        return stepped

    learner.minibatch_step = reads
    with pytest.raises(AssertionError, match="host read"):
        learner.update(batch)


@pytest.mark.parametrize("seed", [1, 2])
def test_target_kl_on_the_device_stops_where_the_host_read_stops(seed):
    """The same update either way (after it the generators differ: the disabled epochs drew their shuffles)."""
    hp = TrainConfig(num_minibatches=4, update_epochs=6, target_kl=2e-3, learning_rate=3e-2)
    stats, weights, steps = [], [], []
    for sync_free in (False, True):
        learner = Learner(tiny_agent(), hp, seed=3)
        learner.sync_free = sync_free
        stats.append(learner.update(random_batch(6, 16, seed)))
        weights.append(learner.agent.state_dict())
        steps.append(learner.optimizer.step_count)
    assert steps[0] == steps[1] < 24  # the stop did cut the epochs short, after the same step
    for key in ("policy_loss", "approx_kl", "clipfrac", "value_loss"):
        assert stats[1][key] == pytest.approx(stats[0][key], rel=1e-6), key
    for name, value in weights[1].items():
        torch.testing.assert_close(value, weights[0][name], rtol=1e-6, atol=1e-7, msg=name)


def poison(learner: Learner, at: int) -> list[dict[str, torch.Tensor]]:
    """Step number ``at``'s returns are NaN (its value loss too); returns the weights after each step."""
    step, after = learner.minibatch_step, []

    def poisoned(mb, rows):
        if len(after) == at:
            old = mb.old.clone()
            old[:, 2] = float("nan")
            mb = mb._replace(old=old)
        stepped = step(mb, rows)
        after.append(copy.deepcopy(learner.agent.state_dict()))
        return stepped

    learner.minibatch_step = poisoned
    return after


def test_a_nan_minibatch_leaves_the_model_as_before_it_without_a_host_read():
    learner, batch = learner_and_batch()
    guard_epochs(learner)
    after = poison(learner, 2)
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
    after = poison(learner, 1)
    assert learner.update(batch)["nonfinite_updates"] == 1 and len(after) == 2
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
        guarded.step(skip=torch.tensor(0.0 if enabled else 1.0))
    if enabled:
        torch.testing.assert_close(w2, w, rtol=1e-6, atol=1e-7)
    else:
        assert torch.equal(w2, w) and all(torch.equal(m, torch.zeros(5)) for m in guarded.exp_avg)
        assert guarded.step_count == 0
