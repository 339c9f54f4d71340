"""Encoders, action heads and the LSTM agent (state reset on episode start, BPTT unroll)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.policies import Agent, CNNEncoder, MLPEncoder, build_agent


def dict_obs_spec() -> ObservationSpec:
    return ObservationSpec(spaces.Dict({"pos": spaces.Box(-1, 1, (2,), np.float32), "hp": spaces.Discrete(5)}))


def test_mlp_encoder_reads_every_leaf_of_a_dict_observation():
    spec = dict_obs_spec()
    enc = MLPEncoder(spec, ActionSpec(spaces.Discrete(3)), hidden_size=16)
    flat = spec.zeros(2)
    spec.write(flat, 0, {"pos": np.array([0.5, -0.5], np.float32), "hp": 3})
    spec.write(flat, 1, {"pos": np.array([0.5, -0.5], np.float32), "hp": 4})
    out = enc(torch.from_numpy(flat))
    assert out.shape == (2, 16)
    assert not torch.allclose(out[0], out[1])  # the Discrete leaf reaches the network


@pytest.mark.parametrize("shape", [(64, 64, 3), (4, 84, 84), (16, 16, 3)])
def test_cnn_is_chosen_for_image_observations(shape):
    spec = ObservationSpec(spaces.Box(0, 255, shape, np.uint8))
    act = ActionSpec(spaces.Discrete(4))
    agent = build_agent(spec, act, {"hidden_size": 32})
    assert isinstance(agent.encoder, CNNEncoder)
    obs = torch.from_numpy(np.random.default_rng(0).integers(0, 255, (3, spec.flat_size), dtype=np.uint8))
    action, logprob, entropy, value, _ = agent.act(obs)
    assert action.shape == (3,) and value.shape == (3,)


def test_plugin_encoder_by_reference():
    spec, act = dict_obs_spec(), ActionSpec(spaces.Discrete(2))
    agent = build_agent(spec, act, {"hidden_size": 8, "encoder": "pufferbox.train.policies:MLPEncoder"})
    assert isinstance(agent.encoder, MLPEncoder) and agent.encoder.hidden_size == 8
    custom = build_agent(spec, act, {"hidden_size": 8}, plugin_policy=MLPEncoder)
    assert isinstance(custom.encoder, MLPEncoder)


@pytest.mark.parametrize(
    "space, shape",
    [
        (spaces.Discrete(3), (5,)),
        (spaces.MultiDiscrete([3, 2, 4]), (5, 3)),
        (spaces.Box(-1, 1, (2,), np.float32), (5, 2)),
    ],
)
def test_action_heads_score_their_own_samples(space, shape):
    obs_spec, act_spec = ObservationSpec(spaces.Box(-1, 1, (4,), np.float32)), ActionSpec(space)
    agent = Agent(MLPEncoder(obs_spec, act_spec, 16), act_spec)
    obs = torch.randn(5, 4)
    action, logprob, entropy, value, _ = agent.act(obs)
    assert action.shape == shape and logprob.shape == (5,) and entropy.shape == (5,)
    again, _, _ = agent.evaluate(obs, action)
    torch.testing.assert_close(again, logprob)
    if act_spec.discrete:
        assert act_spec.flat_space.contains(action[0].numpy().astype(np.int64).reshape(act_spec.shape))


def lstm_agent() -> Agent:
    torch.manual_seed(0)
    obs_spec, act_spec = ObservationSpec(spaces.Box(-1, 1, (3,), np.float32)), ActionSpec(spaces.Discrete(2))
    return build_agent(obs_spec, act_spec, {"hidden_size": 8, "lstm": True, "lstm_size": 6})


def test_lstm_state_resets_on_episode_start():
    agent = lstm_agent()
    obs = torch.randn(4, 3)
    state = (torch.randn(4, 6), torch.randn(4, 6))
    starts = torch.tensor([True, False, True, False])
    h_reset, _ = agent.hidden(obs, state, starts)
    h_fresh, _ = agent.hidden(obs, agent.initial_state(4), None)
    h_kept, _ = agent.hidden(obs, state, None)
    torch.testing.assert_close(h_reset[starts], h_fresh[starts])  # started rows forget the old state
    torch.testing.assert_close(h_reset[~starts], h_kept[~starts])  # the others keep it
    assert not torch.allclose(h_kept[starts], h_fresh[starts])


def test_lstm_unroll_matches_step_by_step_inference():
    agent = lstm_agent()
    steps, rows = 7, 3
    obs = torch.randn(steps, rows, 3)
    starts = torch.rand(steps, rows) < 0.3
    state0 = (torch.randn(rows, 6), torch.randn(rows, 6))
    state, logprobs, values, actions = state0, [], [], []
    for t in range(steps):
        action, logprob, _, value, state = agent.act(obs[t], state, starts[t])
        actions.append(action), logprobs.append(logprob), values.append(value)
    logprob, _, value = agent.evaluate(obs, torch.stack(actions), state0, starts)
    torch.testing.assert_close(logprob, torch.stack(logprobs).reshape(-1))
    torch.testing.assert_close(value, torch.stack(values).reshape(-1))


@pytest.mark.parametrize("shape", [(4, 84, 84), (64, 64, 3)])
def test_channels_last_convolutions_compute_what_the_default_layout_computes(shape):
    """``policy.channels_last`` (default on) only changes how conv weights sit in memory: same outputs and
    gradients as the contiguous layout, and a checkpoint moves between the two."""
    spec = ObservationSpec(spaces.Box(0, 255, shape, np.uint8))
    act = ActionSpec(spaces.Discrete(4))
    torch.manual_seed(0)
    fast = build_agent(spec, act, {"hidden_size": 32})
    plain = build_agent(spec, act, {"hidden_size": 32, "channels_last": False})
    plain.load_state_dict(fast.state_dict())
    conv = fast.encoder.conv[0].weight
    assert conv.is_contiguous(memory_format=torch.channels_last) and not conv.is_contiguous()
    assert plain.encoder.conv[0].weight.is_contiguous()
    obs = torch.from_numpy(np.random.default_rng(1).integers(0, 255, (5, spec.flat_size), dtype=np.uint8))
    actions = torch.arange(5) % 4
    out_fast, out_plain = fast.evaluate(obs, actions), plain.evaluate(obs, actions)
    for a, b in zip(out_fast, out_plain):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    out_fast[0].sum().backward()
    out_plain[0].sum().backward()
    torch.testing.assert_close(fast.encoder.conv[0].weight.grad, plain.encoder.conv[0].weight.grad, rtol=1e-3, atol=1e-5)
