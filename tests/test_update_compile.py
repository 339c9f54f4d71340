"""``train.compile`` compiles the minibatch's forward and loss whole (and AOTAutograd their backward).

The function traces as one graph (no graph breaks, for the feed-forward, masked and recurrent paths),
and an update through the compiled graphs computes what the eager one does. Here the graphs run on
AOTAutograd's eager backend (the same traced graphs, without inductor's code generation, seconds instead of
half a minute); tests/test_ppo.py trains with inductor's CPU backend through ``train.compile``.
"""

from __future__ import annotations

import copy

import pytest
import torch
from test_update_equivalence import lstm_agent, random_batch
from tiny import tiny_agent

from pufferbox.train.config import TrainConfig
from pufferbox.train.learner import Learner, gae

CASES = {"plain": (False, False), "waiting agents": (True, False), "recurrent": (False, True)}


def first_minibatch(learner: Learner, batch: dict):
    hp = learner.hp
    acting = None if bool(batch["masks"].all()) else batch["masks"]
    adv, returns = gae(batch["rewards"], batch["values"], batch["starts"], hp.gamma, hp.gae_lambda, acting)
    data = learner.prepare(batch, adv, returns)
    return learner.epoch_minibatches(data, max(1, data["whole"] // hp.num_minibatches))[0]


@pytest.mark.parametrize("case", list(CASES))
def test_the_forward_and_loss_trace_as_one_graph(case):
    waiting, lstm = CASES[case]
    learner = Learner(lstm_agent() if lstm else tiny_agent(), TrainConfig(num_minibatches=2, ent_coef=0.01))
    mb = first_minibatch(learner, random_batch(4, 8, 1, waiting, lstm))
    weights = learner.loss_weights(1 if mb.coef is not None else mb.old.shape[0])
    explained = torch._dynamo.explain(learner.forward_loss)(mb, weights)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1


@pytest.mark.parametrize("case", ["plain", "recurrent"])
def test_a_compiled_update_computes_what_the_eager_one_does(case):
    _, lstm = CASES[case]
    hp = TrainConfig(num_minibatches=4, update_epochs=2, learning_rate=1e-2, ent_coef=0.01)
    agent = lstm_agent() if lstm else tiny_agent()
    eager, compiled = Learner(agent, hp, seed=2), Learner(copy.deepcopy(agent), hp, seed=2)
    compiled.loss_fn = torch.compile(compiled.forward_loss, backend="aot_eager")
    for seed in (1, 2):
        batch = random_batch(6, 16, seed, lstm=lstm)
        want, got = eager.update(batch), compiled.update(batch)
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key
    for name, value in compiled.agent.state_dict().items():
        torch.testing.assert_close(value, eager.agent.state_dict()[name], rtol=1e-5, atol=1e-6, msg=name)
