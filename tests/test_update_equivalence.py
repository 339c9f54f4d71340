"""The Learner's lean update computes what the plain update (tests/ppo_reference.py) computes.

Same agent, same batch, same shuffle seed: after two updates the weights and each update's statistics
agree to float tolerance, for the feed-forward and recurrent paths, with agents that wait (turn-based
masks), with and without advantage normalization and value clipping, with an entropy bonus and with
``target_kl`` stopping the epochs early.
"""

from __future__ import annotations

import copy

import gymnasium
import numpy as np
import pytest
import torch
from ppo_reference import loop_gae, reference_update
from tiny import tiny_agent

from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.config import TrainConfig
from pufferbox.train.learner import Learner, gae
from pufferbox.train.policies import Agent, MLPEncoder

STAT_KEYS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")


def lstm_agent(seed: int = 0) -> Agent:
    obs_spec = ObservationSpec(gymnasium.spaces.Box(-1, 1, (4,), np.float32))
    act_spec = ActionSpec(gymnasium.spaces.Discrete(2))
    torch.manual_seed(seed)
    return Agent(MLPEncoder(obs_spec, act_spec, hidden_size=8), act_spec, lstm_size=8)


def random_batch(segments: int, horizon: int, seed: int, waiting: bool = False, lstm: bool = False) -> dict:
    g = torch.Generator().manual_seed(seed)
    width = (segments, horizon + 1)
    batch = {
        "obs": torch.randn(*width, 4, generator=g),
        "actions": torch.randint(0, 2, width, generator=g),
        "logprobs": -0.69 + 0.2 * torch.randn(width, generator=g),
        "values": torch.randn(width, generator=g),
        "rewards": torch.randn(width, generator=g),
        "starts": torch.rand(width, generator=g) < 0.1,
        "masks": torch.ones(width, dtype=torch.bool),
    }
    if waiting:  # two seats taking turns: each row acts every other step
        batch["masks"] = (torch.arange(horizon + 1) + torch.arange(segments)[:, None]) % 2 == 0
    if lstm:
        batch["h"], batch["c"] = torch.randn(*width, 8, generator=g), torch.randn(*width, 8, generator=g)
    return batch


CASES = {
    "plain": ({}, False, False),
    "entropy bonus": ({"ent_coef": 0.05}, False, False),
    "no normalization, no value clip": ({"norm_adv": False, "clip_vloss": False}, False, False),
    "waiting agents": ({}, True, False),
    "recurrent": ({}, False, True),
    "recurrent, waiting": ({"ent_coef": 0.01}, True, True),
    "target_kl stops early": ({"target_kl": 1e-4, "learning_rate": 3e-2}, False, False),
    "one sample per minibatch": ({"num_minibatches": 500, "update_epochs": 1}, False, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_lean_update_matches_the_plain_one(case):
    settings, waiting, lstm = CASES[case]
    hp = TrainConfig(**{"num_minibatches": 4, "update_epochs": 3, "learning_rate": 1e-2, **settings})
    agent = lstm_agent() if lstm else tiny_agent()
    twin = copy.deepcopy(agent)
    learner = Learner(agent, hp, seed=7)
    optimizer = torch.optim.Adam(twin.parameters(), lr=hp.learning_rate, eps=1e-5)
    shuffle = torch.Generator().manual_seed(7)
    for seed in (1, 2):
        batch = random_batch(6, 16, seed, waiting, lstm)
        stats = learner.update(batch)
        rows = torch.stack(reference_update(twin, hp, batch, optimizer, shuffle)).double().mean(0)
        for key, want in zip(STAT_KEYS, rows.tolist()):
            assert stats[key] == pytest.approx(want, rel=1e-4, abs=1e-6), (case, seed, key)
    for (name, got), want in zip(agent.state_dict().items(), twin.state_dict().values()):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=lambda m, name=name: f"{case}: {name}: {m}")


def test_gae_matches_the_step_by_step_recursion_on_long_rollouts():
    g = torch.Generator().manual_seed(3)
    rewards, values = torch.randn(5, 301, generator=g), torch.randn(5, 301, generator=g)
    starts = torch.rand(5, 301, generator=g) < 0.05
    adv, ret = gae(rewards, values, starts, 0.99, 0.95)
    want_adv, want_ret = loop_gae(rewards, values, starts, 0.99, 0.95)
    torch.testing.assert_close(adv, want_adv, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ret, want_ret, rtol=1e-5, atol=1e-5)
