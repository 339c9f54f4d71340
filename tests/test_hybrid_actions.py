"""Hybrid action trees (discrete and Box leaves): the emulator's round trip, the policy's heads, the
random samplers, and `pufferbox train` / `pufferbox check` on a hybrid env."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from gymnasium import spaces
from torch.distributions import Categorical, Normal

from pufferbox.cli import cli, load_commands
from pufferbox.emulation import emulate
from pufferbox.spaces import ActionSpec, HybridRow, ObservationSpec, SpaceError
from pufferbox.train.policies import ActionDistribution, build_agent
from pufferbox.vector.testenvs import HybridTargetEnv, env_spec_for

UNIT_AND_MOVE = spaces.Dict(
    {
        "unit": spaces.Discrete(4),
        "move": spaces.Box(-2, 2, (2,), np.float32),
        "stance": spaces.MultiDiscrete([2, 3]),
        "aim": spaces.Box(-1, 1, (1,), np.float32),
    }
)


def hybrid_agent(obs_space=None, act_space=UNIT_AND_MOVE):
    obs = ObservationSpec(obs_space or spaces.Box(-1, 1, (5,), np.float32))
    act = ActionSpec(act_space)
    return obs, act, build_agent(obs, act, {"hidden_size": 16})


def test_the_emulated_env_takes_one_float_row_and_hands_the_env_its_own_tree():
    env = emulate(HybridTargetEnv(targets=3))
    assert isinstance(env.single_action_space, HybridRow) and env.act_spec.split(np.arange(2.0))[0].tolist() == [0.0]
    env.reset(seed=0)
    sent = []
    env.env.step = lambda action: (sent.append(action), HybridTargetEnv.step(env.env, action))[1]
    env.step(np.array([2, -0.25], np.float32))
    assert int(sent[0]["target"]) == 2 and sent[0]["amount"].dtype == np.float32 and sent[0]["amount"].tolist() == [-0.25]
    fresh = emulate(HybridTargetEnv(targets=3))
    fresh.reset(seed=0)
    with pytest.raises(SpaceError, match="outside the flat action space"):
        fresh.step(np.array([1.5, 0.0], np.float32))  # not a choice: between targets 1 and 2


def test_policy_has_a_categorical_per_discrete_slot_and_a_gaussian_per_box_value():
    """log-prob and entropy are the sums over the parts, computed here by hand from the head's outputs;
    the greedy action is each slot's argmax and the Gaussians' means."""
    obs, act, agent = hybrid_agent()
    x = torch.randn(6, 5)
    action, logprob, entropy, _, _ = agent.act(x)
    assert action.shape == (6, act.size) and action.dtype == torch.float32
    hidden = agent.encoder(x)
    out = agent.actor.linear(hidden)
    sizes = [int(n) for n in act.flat_space.discrete.nvec]  # stance (2, 3), unit 4: gymnasium sorts Dict keys
    logits, means = out.split([sum(sizes), act.continuous_size], dim=-1)
    cats = [Categorical(logits=p) for p in logits.split(sizes, dim=-1)]
    normal = Normal(means, agent.actor.logstd.exp().expand_as(means))
    choices, values = act.split(action)
    by_hand = sum(c.log_prob(a) for c, a in zip(cats, choices.long().unbind(-1))) + normal.log_prob(values).sum(-1)
    assert torch.allclose(logprob, by_hand, atol=1e-5)
    assert torch.allclose(entropy, sum(c.entropy() for c in cats) + normal.entropy().sum(-1), atol=1e-5)
    new_logprob, new_entropy, _ = agent.evaluate(x, action)  # the PPO loss scores the stored row the same way
    assert torch.allclose(new_logprob, logprob, atol=1e-5) and torch.allclose(new_entropy, entropy, atol=1e-5)
    greedy, _ = agent.greedy(x)
    expected = torch.cat([torch.stack([p.argmax(-1) for p in logits.split(sizes, dim=-1)], -1).float(), means], -1)
    assert torch.equal(greedy, expected)
    tree = act.unflatten(action[0].numpy())
    assert UNIT_AND_MOVE["unit"].contains(tree["unit"]) and UNIT_AND_MOVE["stance"].contains(tree["stance"])
    (logprob.sum() + entropy.sum()).backward()  # every head gets a gradient
    assert agent.actor.logstd.grad is not None and agent.actor.linear.weight.grad.abs().sum(1).gt(0).all()


def test_masks_apply_to_a_hybrid_actions_discrete_slots():
    observation = spaces.Dict({"x": spaces.Box(-1, 1, (3,), np.float32), "action_mask": spaces.Box(0, 1, (4,), np.int8)})
    act_space = spaces.Tuple((spaces.Discrete(4), spaces.Box(-1, 1, (2,), np.float32)))
    obs, act, agent = hybrid_agent(observation, act_space)
    assert agent.mask is not None and agent.mask.sizes == (4,)
    legal = np.array([0, 1, 0, 1], np.int8)
    flat = np.repeat(obs.flatten({"x": np.zeros(3, np.float32), "action_mask": legal})[None], 400, axis=0)
    x = torch.from_numpy(flat)
    with torch.no_grad():
        agent.actor.linear.weight[:4] = 0.0
        agent.actor.linear.bias[:4] = torch.tensor([9.0, 0.0, 9.0, 1.0])  # the illegal choices look best
        action, logprob, entropy, _, _ = agent.act(x)
        greedy, _ = agent.greedy(x)
    assert set(action[:, 0].long().tolist()) == {1, 3} and set(greedy[:, 0].long().tolist()) == {3}
    legal_only = Categorical(logits=torch.tensor([0.0, 1.0])).entropy()  # over the legal choices only
    normal_entropy = Normal(torch.zeros(2), agent.actor.logstd.exp()).entropy().sum()
    assert torch.allclose(entropy, legal_only + normal_entropy, atol=1e-5)
    assert torch.isfinite(logprob).all()


def test_a_distribution_of_one_kind_keeps_the_rows_it_had():
    """The same type serves Discrete (B,), MultiDiscrete (B, k) int64 and Box (B, c) rows."""
    lone = ActionDistribution([Categorical(logits=torch.zeros(3, 2))], None, lone=True)
    assert lone.sample().shape == (3,) and lone.sample().dtype == torch.int64
    multi = ActionDistribution([Categorical(logits=torch.zeros(3, 2))] * 2, None, lone=False)
    assert multi.sample().shape == (3, 2) and multi.sample().dtype == torch.int64
    box = ActionDistribution([], Normal(torch.zeros(3, 2), torch.ones(3, 2)), lone=False)
    assert box.sample().shape == (3, 2) and torch.equal(box.mode(), torch.zeros(3, 2))
    assert torch.allclose(box.entropy(), Normal(0.0, 1.0).entropy() * 2)


def test_random_rollout_actions_of_a_hybrid_row_are_whole_choices_and_in_bounds():
    from pufferbox.vector.ray_rollout import random_actions

    row = ActionSpec(UNIT_AND_MOVE).flat_space
    drawn = random_actions(row, np.random.default_rng(0), 50)
    assert drawn.shape == (50, row.shape[0]) and all(row.contains(a) for a in drawn)


@pytest.mark.timeout(60)
def test_multiprocessing_workers_step_hybrid_rows_as_the_serial_backend_does():
    """The float32 rows cross shared memory intact: same seed and actions, same observations and rewards."""
    from pufferbox.vector import make

    runs = []
    for backend, kwargs in (("serial", {}), ("multiprocessing", {"num_workers": 2})):
        venv = make(env_spec_for("hybrid"), backend=backend, num_envs=4, **kwargs)
        try:
            venv.action_space.seed(3)
            venv.async_reset(0)
            steps = [tuple(np.array(x) for x in venv.recv()[:2])]  # copies: the rows are unmapped on close
            for _ in range(12):
                venv.send(venv.action_space.sample())
                steps.append(tuple(np.array(x) for x in venv.recv()[:2]))
            runs.append(steps)
        finally:
            venv.close()
    for (obs_a, rew_a), (obs_b, rew_b) in zip(*runs):
        np.testing.assert_array_equal(obs_a, obs_b)
        np.testing.assert_array_equal(rew_a, rew_b)
    assert any(np.any(rew != 0) for _, rew in runs[0][1:])


@pytest.fixture
def hybrid_registered(monkeypatch):
    from pufferbox.registry import get_registry

    load_commands()
    registry = get_registry()
    real_get = registry.get
    monkeypatch.setattr(
        registry, "get", lambda name, **kw: env_spec_for("hybrid") if name == "hybrid" else real_get(name, **kw)
    )


def test_pufferbox_check_passes_on_a_hybrid_env(hybrid_registered):
    result = CliRunner().invoke(cli, ["check", "hybrid", "--steps", "40"])
    assert result.exit_code == 0, result.output
    for check in ("api", "spaces", "determinism", "flattening", "serial"):  # the ones a hybrid action reaches
        assert f"hybrid: ok   {check}\n" in result.output, result.output
    assert "checks passed" in result.output


@pytest.mark.timeout(180)
def test_pufferbox_train_learns_both_heads_of_a_hybrid_env(hybrid_registered, tmp_path):
    """Uniform play picks the paying target a third of the time and misses the amount by about 0.67
    (return about -2.7 over 8 rounds); the trained policy must beat both by a wide margin, each head on
    its own metric (a policy that learned only the target returns about 2.6, only the amount about 0)."""
    run_dir = tmp_path / "hybrid"
    settings = ["train.num_steps=32", "train.learning_rate=0.01", "train.num_minibatches=4", "train.update_epochs=4"]
    args = ["train", "hybrid", "--run-dir", str(run_dir), "--backend", "serial", "--num-envs", "8", "--seed", "1"]
    args += ["--total-steps", "20000", "--no-tensorboard"] + [x for s in settings for x in ("--set", s)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    last = [r for r in records if r.get("episode_return") is not None][-5:]
    mean = {k: float(np.mean([r[k] for r in last])) for k in ("episode_return", "episode_hit_rate", "episode_amount_error")}
    assert mean["episode_hit_rate"] > 0.9 and mean["episode_amount_error"] < 0.35, mean  # seeds 1-3: 0.99+, 0.18
    assert mean["episode_return"] > 4.5, mean  # seeds 1-3: 6.5; without the Gaussian's log-prob in the loss: 2.3
