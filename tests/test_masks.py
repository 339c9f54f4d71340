"""Action masks: the spec finds them, policies never choose an illegal action, the conformance suite checks it."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferbox.conformance.checks as checks
from pufferbox.conformance import check_env_spec
from pufferbox.emulation import emulate
from pufferbox.registry import EnvBuild, EnvSpec
from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError, mask_logits, sample_legal
from pufferbox.train.config import resolve_config
from pufferbox.train.policies import MLPEncoder, build_agent
from pufferbox.train.trainer import Trainer

ARMS = 8


class PickLegal(gymnasium.Env):
    """Each step a random subset of the arms is legal; the highest legal arm pays 1, any other legal arm 0,
    an illegal arm -1. ``illegal`` counts the illegal actions every instance received (Gymnasium's own
    checker sends random ones; pufferbox's samplers and policies must never)."""

    illegal = 0

    def __init__(self, slots: int = 1):
        self.slots = slots
        self.action_space = spaces.Discrete(ARMS) if slots == 1 else spaces.MultiDiscrete([ARMS] * slots)
        self.observation_space = spaces.Dict(
            {
                "legal": spaces.Box(0, 1, (slots * ARMS,), np.float32),
                "action_mask": spaces.Box(0, 1, (slots * ARMS,), np.int8),
            }
        )

    def observe(self) -> dict:
        mask = (self.np_random.random((self.slots, ARMS)) < 0.3).astype(np.int8)
        mask[np.arange(self.slots), self.np_random.integers(0, ARMS, self.slots)] = 1
        self.mask = mask
        return {"legal": mask.ravel().astype(np.float32), "action_mask": mask.ravel()}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observe(), {}

    def step(self, action):
        action = np.atleast_1d(action)
        legal = self.mask[np.arange(self.slots), action].astype(bool)
        PickLegal.illegal += int((~legal).sum())
        best = ARMS - 1 - np.argmax(self.mask[:, ::-1], axis=1)
        reward = float(np.mean(np.where(legal, action == best, -1.0)))
        self.t += 1
        return self.observe(), reward, False, self.t >= 16, {}


def make_pick_legal(slots: int = 1) -> PickLegal:
    return PickLegal(slots)


def pick_legal_spec() -> EnvSpec:
    return EnvSpec("picklegal", EnvBuild(make_pick_legal))


def masked_rows(slots: int, rows: int, seed: int = 0) -> tuple[ObservationSpec, ActionSpec, np.ndarray]:
    env = emulate(PickLegal(slots))
    env.reset(seed=seed)
    flat = env.obs_spec.zeros(rows)
    for r in range(rows):
        env.obs_spec.write(flat, r, env.env.observe())
    return env.obs_spec, env.act_spec, flat


# -- the spec -----------------------------------------------------------------------------
def test_spec_finds_the_mask_and_checks_it_against_the_action():
    obs, act, flat = masked_rows(2, 5)
    assert obs.mask is not None and obs.mask.sizes == (ARMS, ARMS)
    legal = obs.mask.legal(flat)
    assert legal.shape == (5, 2 * ARMS) and legal.dtype == bool
    assert np.array_equal(legal, obs.unflatten(flat)["action_mask"] != 0)
    with pytest.raises(SpaceError, match=r"has 3 entries, the action Discrete\(4\) has 4 choices"):
        ObservationSpec(spaces.Dict({"action_mask": spaces.Box(0, 1, (3,), np.int8)})).mask.fit(
            ActionSpec(spaces.Discrete(4))
        )
    with pytest.raises(SpaceError, match="discrete actions"):
        ObservationSpec(spaces.Dict({"action_mask": spaces.Box(0, 1, (3,), np.int8)})).mask.fit(
            ActionSpec(spaces.Box(-1, 1, (3,)))
        )
    assert ObservationSpec(spaces.Dict({"action_mask": spaces.Box(0, 1, (3,))}), action_mask=None).mask is None


def test_a_wrongly_sized_mask_is_refused_when_the_env_is_wrapped():
    env = PickLegal()
    env.action_space = spaces.Discrete(ARMS + 1)
    with pytest.raises(SpaceError, match="has 8 entries"):
        emulate(env)


def test_encoder_does_not_see_the_mask():
    obs, act, flat = masked_rows(1, 4)
    encoder = MLPEncoder(obs, act, hidden_size=16)
    other = flat.copy()
    obs.leaf_views(other)[obs.mask.index][:] = 1 - obs.leaf_views(other)[obs.mask.index]
    a, b = (encoder(torch.from_numpy(x)) for x in (flat, other))
    assert torch.equal(a, b)


# -- masking logits and sampling ----------------------------------------------------------------
def test_masked_logits_are_minus_infinity_and_an_all_illegal_slot_keeps_its_logits():
    logits = torch.zeros(2, 6)
    legal = torch.tensor([[1, 0, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], dtype=torch.bool)
    out = mask_logits(logits, legal, (3, 3))
    assert out[0].tolist() == [0, -math.inf, 0, 0, 0, 0]  # second slot: none legal -> all kept
    assert out[1].tolist() == [0, 0, 0, 0, 0, 0]


def test_uniform_random_sampler_picks_only_legal_actions_uniformly():
    legal = np.array([[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]], bool)
    rng = np.random.default_rng(0)
    draws = np.stack([sample_legal(legal, (4,), rng) for _ in range(4000)])
    counts = [np.bincount(draws[:, i], minlength=4) for i in range(3)]
    assert counts[0][[0, 2]].sum() == 0 and abs(counts[0][1] - 2000) < 150
    assert counts[2].tolist() == [4000, 0, 0, 0]
    assert counts[1].min() > 850  # no legal arm: uniform over all


@pytest.mark.parametrize("slots", [1, 3])
def test_policy_samples_scores_and_argmaxes_only_legal_actions(slots):
    obs, act, flat = masked_rows(slots, 64)
    torch.manual_seed(0)
    agent = build_agent(obs, act, {"hidden_size": 16})
    with torch.no_grad():  # wide logits: an overconfident policy still never leaves the mask
        agent.actor.linear.weight.normal_(0, 10.0)
    legal = obs.mask.legal(flat).reshape(64, slots, ARMS)
    x = torch.from_numpy(flat)
    for _ in range(20):
        action = agent.act(x)[0].reshape(64, slots).numpy()
        assert np.take_along_axis(legal, action[..., None], 2).all()
    greedy = agent.greedy(x)[0].reshape(64, slots).numpy()
    assert np.take_along_axis(legal, greedy[..., None], 2).all()
    with torch.no_grad():
        agent.actor.linear.weight.zero_()
        agent.actor.linear.bias.zero_()
    logprob, entropy, _ = agent.evaluate(x, torch.from_numpy(action.squeeze(-1) if slots == 1 else action))
    per_slot = np.log(legal.sum(-1)).sum(-1)  # uniform over the legal choices of each slot
    assert np.allclose(entropy.detach().numpy(), per_slot, atol=1e-5)
    assert np.allclose(logprob.detach().numpy(), -per_slot, atol=1e-5)
    (logprob.sum() - entropy.sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in agent.parameters() if p.grad is not None)


# -- the conformance suite ------------------------------------------------------------------
def test_masked_env_passes_every_check_including_masks():
    results = {r.name: r for r in check_env_spec(pick_legal_spec(), steps=60, num_envs=2)}
    assert all(r.ok for r in results.values()), [str(r) for r in results.values() if not r.ok]
    assert results["masks"].detail == ""  # it ran, not skipped


def test_masks_check_is_skipped_for_envs_without_a_mask():
    spec = EnvSpec("cartpole-like", EnvBuild(gymnasium.make, kwargs={"id": "CartPole-v1"}))
    (result,) = check_env_spec(spec, steps=5, checks=["masks"])
    assert result.ok and "no action mask" in result.detail


@pytest.mark.parametrize(
    ("target", "broken", "source"),
    [
        ("mask_logits", lambda logits, legal, sizes: logits, "policy sampling"),
        ("sample_legal", lambda legal, sizes, rng: np.zeros(len(legal), np.int64), "the random sampler"),
    ],
)
def test_masks_check_fails_when_a_sampler_ignores_the_mask(monkeypatch, target, broken, source):
    monkeypatch.setattr(checks, target, broken)
    (result,) = check_env_spec(pick_legal_spec(), steps=30, num_envs=2, checks=["masks"])
    assert not result.ok and source in result.detail and "illegal action" in result.detail


# -- training -----------------------------------------------------------------------------
def test_ppo_on_a_masked_env_never_steps_an_illegal_action_and_learns():
    """The env counts illegal arms: none in a whole run; the policy learns to pick the paying arm (random
    legal play earns about 0.4 per step)."""
    PickLegal.illegal = 0
    cfg = resolve_config(
        {},
        overrides=[
            "train.checkpoint_interval=0",
            "vec.num_envs=8",
            "train.num_steps=32",
            "train.learning_rate=0.01",
            "train.num_minibatches=4",
            "train.update_epochs=4",
        ],
    )
    trainer = Trainer(pick_legal_spec(), cfg)
    try:
        history = trainer.train_steps(12_000)
    finally:
        trainer.close()
    assert PickLegal.illegal == 0
    assert all(np.isfinite(h.get("policy_loss", 0.0)) for h in history)
    assert history[-1]["episode_return"] / 16 > 0.7, history[-1]


def test_a_uniform_stand_in_for_random_play_samples_even_when_greedy():
    """eval --opponent random --deterministic: the random side stays random (the trained side plays its mode)."""
    obs, act, flat = masked_rows(1, 1)
    agent = build_agent(obs, act, {"hidden_size": 16})
    x = torch.from_numpy(np.repeat(flat, 200, axis=0))
    assert len(set(agent.greedy(x)[0].tolist())) == 1
    agent.uniform = True
    picks = set(agent.greedy(x)[0].tolist())
    assert picks == set(np.flatnonzero(obs.mask.legal(flat)[0]).tolist())
