"""``train.optimizer = "muon"``: torch.optim.Muon on the hidden 2-D weights, Adam on the rest, one rate.

Which weights Muon takes, that a skipped step (the accelerator's NaN guard) changes nothing, that its
state survives a checkpoint (a resumed learner steps exactly as the one that went on), and the one-line
refusals: a policy without hidden 2-D weights, a checkpoint of the other optimizer.
"""

from __future__ import annotations

import copy

import pytest
import torch
from test_update_equivalence import random_batch
from tiny import tiny_agent

from pufferbox.train.config import ConfigError, TrainConfig, resolve_run_config
from pufferbox.train.learner import Learner
from pufferbox.train.optim import Adam, MuonAdam, muon_parameters


def test_muon_takes_the_hidden_weights_and_adam_the_rest():
    agent = tiny_agent()
    muon, adam = muon_parameters(agent)
    names = {id(p): n for n, p in agent.named_parameters()}
    assert sorted(names[id(p)] for p in muon) == ["encoder.net.0.weight", "encoder.net.2.weight"]
    assert {names[id(p)] for p in adam} == {
        "encoder.net.0.bias",
        "encoder.net.2.bias",
        "actor.linear.weight",
        "actor.linear.bias",
        "critic.weight",
        "critic.bias",
    }


def test_a_muon_update_learns_and_resumes_exactly():
    hp = TrainConfig(optimizer="muon", num_minibatches=4, update_epochs=2, learning_rate=1e-2)
    learner = Learner(tiny_agent(), hp, seed=5)
    assert isinstance(learner.optimizer, MuonAdam)
    before = copy.deepcopy(learner.agent.state_dict())
    stats = learner.update(random_batch(6, 16, 1))
    assert stats["nonfinite_updates"] == 0 and learner.optimizer.step_count == 8
    changed = {n for n, v in learner.agent.state_dict().items() if not torch.equal(v, before[n])}
    assert "encoder.net.2.weight" in changed and "critic.bias" in changed
    saved, shuffle = copy.deepcopy(learner.state_dict()), learner.generator.get_state()
    resumed = Learner(tiny_agent(seed=9), hp, seed=5)
    resumed.load_weights(saved)
    resumed.restore_shuffle(shuffle)
    for one in (learner, resumed):
        one.update(random_batch(6, 16, 2))
    for name, value in resumed.agent.state_dict().items():
        torch.testing.assert_close(value, learner.agent.state_dict()[name], rtol=0, atol=0, msg=name)


def test_a_skipped_muon_step_changes_nothing_and_a_taken_one_matches_the_plain_step():
    torch.manual_seed(0)
    nets = [torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8)) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    plain, guarded = MuonAdam(nets[0], lr=1e-2), MuonAdam(nets[1], lr=1e-2)
    x = torch.randn(16, 4)
    for skip in (0.0, 0.0, 1.0):
        for net, opt in zip(nets, (plain, guarded)):
            opt.zero_grad()
            net(x).pow(2).mean().backward()
        snapshot = copy.deepcopy(nets[1].state_dict())
        momentum = [guarded.muon.state[p]["momentum_buffer"].clone() for p in guarded.hidden if p in guarded.muon.state]
        guarded.step(skip=torch.tensor(skip))
        if skip:
            assert all(torch.equal(v, snapshot[k]) for k, v in nets[1].state_dict().items())
            after = [guarded.muon.state[p]["momentum_buffer"] for p in guarded.hidden]
            assert all(torch.equal(a, b) for a, b in zip(after, momentum))
        else:
            plain.step()
            for a, b in zip(nets[0].parameters(), nets[1].parameters()):
                torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert guarded.step_count == 2


def test_muon_is_refused_in_one_line_where_it_cannot_apply():
    class NoMatrices(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(4))

    with pytest.raises(ConfigError, match=r"train.optimizer=muon: the policy NoMatrices has no 2-D hidden weights") as err:
        MuonAdam(NoMatrices(), lr=1e-3)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="train.optimizer: must be one of adam, muon"):
        resolve_run_config(overrides=["train.optimizer='sgd'"])


def test_a_checkpoint_of_the_other_optimizer_is_refused_with_the_fix():
    adam_state = Learner(tiny_agent(), TrainConfig()).state_dict()
    muon_state = Learner(tiny_agent(), TrainConfig(optimizer="muon")).state_dict()
    with pytest.raises(ConfigError, match="optimizer is adam, the run's muon; fix: resume with --set train.optimizer=adam"):
        Learner(tiny_agent(), TrainConfig(optimizer="muon")).load_weights(adam_state)
    with pytest.raises(ConfigError, match="optimizer is muon, the run's adam"):
        Learner(tiny_agent(), TrainConfig()).load_weights(muon_state)
    assert isinstance(Learner(tiny_agent(), TrainConfig()).optimizer, Adam)
