"""Policies: the agent (an encoder from :mod:`pufferbox.encoders`, optional LSTM, actor/critic heads).

Example:
    >>> import gymnasium, torch
    >>> from pufferbox.spaces import ObservationSpec, ActionSpec
    >>> obs, act = ObservationSpec(gymnasium.spaces.Box(-1, 1, (4,))), ActionSpec(gymnasium.spaces.Discrete(2))
    >>> agent = Agent(MLPEncoder(obs, act, hidden_size=32), act)
    >>> action, logprob, entropy, value, state = agent.act(torch.zeros(3, 4))
    >>> action.shape, value.shape
    (torch.Size([3]), torch.Size([3]))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import torch
from gymnasium import spaces
from torch import nn
from torch.distributions import Categorical, Normal

from pufferbox.encoders import CNNEncoder, MLPEncoder, is_image_space, layer_init
from pufferbox.spaces import ActionMask, ActionSpec, ObservationSpec, mask_logits
from pufferbox.train.config import ConfigError, PolicyConfig, typed

__all__ = ["MLPEncoder", "CNNEncoder", "ActionDistribution", "Agent", "is_image_space", "build_agent", "layer_init"]

LSTMState = tuple[torch.Tensor, torch.Tensor]


class ActionDistribution:
    """The policy's distribution over flat action rows: a Categorical per discrete slot, then a diagonal
    Normal over the continuous values (a Gaussian per ``Box`` leaf); the parts are independent, so a row's
    log-probability and entropy are sums over them. Rows are the :class:`~pufferbox.spaces.ActionSpec`'s:
    ``(B,)`` for a lone ``Discrete``, else ``(B, slots + values)`` (float32 when values are present)."""

    def __init__(self, categoricals: list[Categorical], normal: Normal | None, lone: bool):
        self.categoricals, self.normal, self.lone = categoricals, normal, lone
        self.slots = len(categoricals)

    def parts(self, action: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor | None]:
        """``action``'s choice per slot and its continuous values."""
        if self.lone:
            return [action], None
        choices = action[..., : self.slots].long().unbind(-1) if self.categoricals else []
        return list(choices), (action[..., self.slots :] if self.normal is not None else None)

    def join(self, choices: list[torch.Tensor], values: torch.Tensor | None) -> torch.Tensor:
        if self.lone:
            return choices[0]
        if values is None:
            return torch.stack(choices, dim=-1)
        return torch.cat([torch.stack(choices, dim=-1).to(values.dtype), values], dim=-1) if choices else values

    def sample(self) -> torch.Tensor:
        return self.join([c.sample() for c in self.categoricals], None if self.normal is None else self.normal.sample())

    def mode(self) -> torch.Tensor:
        """The most likely choice per slot (legal where masked) and the Normal's mean."""
        return self.join([c.logits.argmax(-1) for c in self.categoricals], None if self.normal is None else self.normal.mean)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        choices, values = self.parts(action)
        terms = [c.log_prob(a) for c, a in zip(self.categoricals, choices)]
        if values is not None:
            terms.append(cast(Normal, self.normal).log_prob(values).sum(-1))
        return terms[0] if len(terms) == 1 else torch.stack(terms, dim=-1).sum(-1)

    def entropy(self) -> torch.Tensor:
        terms = [c.entropy() for c in self.categoricals]
        if self.normal is not None:
            terms.append(self.normal.entropy().sum(-1))
        return terms[0] if len(terms) == 1 else torch.stack(terms, dim=-1).sum(-1)


class ActionHead(nn.Module):
    """One linear layer for the logits of every discrete slot (Discrete, MultiDiscrete and the discrete row
    of a hybrid action) and the means of every continuous value (Box and a hybrid's continuous row), with
    a learned log standard deviation per value; :meth:`distribution` makes its :class:`ActionDistribution`.

    ``legal`` (bool ``(B, logits)``, from the observation's :class:`~pufferbox.spaces.ActionMask`) sets
    illegal logits to -inf before sampling, scoring and argmax, so entropy and the PPO ratio are over
    legal actions only; None (envs without a mask) costs nothing.
    """

    def __init__(self, act_spec: ActionSpec, in_size: int):
        super().__init__()
        space: Any = act_spec.flat_space
        self.lone = isinstance(space, spaces.Discrete)
        if self.lone:
            self.sizes, values = [int(space.n)], 0
        else:
            discrete = getattr(space, "discrete", space if act_spec.discrete else None)  # a hybrid's discrete row
            self.sizes = [] if discrete is None else [int(n) for n in np.asarray(discrete.nvec).ravel()]
            values = act_spec.continuous_size
        self.values = values
        if values:
            self.logstd = nn.Parameter(torch.zeros(values))
        self.linear: nn.Module = layer_init(nn.Linear(in_size, sum(self.sizes) + values), std=0.01)  # groups may mask it

    def logits(self, hidden: torch.Tensor, legal: torch.Tensor | None = None) -> torch.Tensor:
        """The discrete slots' logits (masked), then the continuous values' means."""
        out = self.linear(hidden)
        if legal is None:
            return out
        if not self.values:
            return mask_logits(out, legal, tuple(self.sizes))
        choices, means = out.split([sum(self.sizes), self.values], dim=-1)
        return torch.cat([mask_logits(choices, legal, tuple(self.sizes)), means], dim=-1)

    def distribution(self, hidden: torch.Tensor, legal: torch.Tensor | None = None) -> ActionDistribution:
        out = self.logits(hidden, legal)
        if self.lone:
            return ActionDistribution([Categorical(logits=out, validate_args=False)], None, lone=True)
        normal = None
        if self.values:
            out, means = out.split([sum(self.sizes), self.values], dim=-1)
            normal = Normal(means, self.logstd.exp().expand_as(means), validate_args=False)
        parts = torch.split(out, self.sizes, dim=-1) if self.sizes else ()
        return ActionDistribution([Categorical(logits=p, validate_args=False) for p in parts], normal, lone=False)

    def sample(self, hidden: torch.Tensor, action: torch.Tensor | None = None, legal: torch.Tensor | None = None):
        """``(action, logprob, entropy)``; pass ``action`` to score a stored one."""
        dist = self.distribution(hidden, legal)
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action), dist.entropy()

    def mode(self, hidden: torch.Tensor, legal: torch.Tensor | None = None) -> torch.Tensor:
        return self.distribution(hidden, legal).mode()

    def score(
        self, hidden: torch.Tensor, action: torch.Tensor, legal: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logprob, entropy)`` of stored actions: for one unmasked ``Discrete`` straight from the log-softmax
        (what :class:`~torch.distributions.Categorical` computes, in fewer operations: the update's forward)."""
        if not (self.lone and legal is None):
            return self.sample(hidden, action, legal)[1:]
        logp = torch.log_softmax(self.linear(hidden), dim=-1)
        return logp.gather(-1, action.long().unsqueeze(-1)).squeeze(-1), -(logp.exp() * logp).sum(-1)


class Agent(nn.Module):
    """Encoder → optional LSTM (state per agent row, reset on episode start) → actor and critic.

    ``obs_spec`` with an action mask (:attr:`ObservationSpec.mask`): every action the agent samples,
    scores or takes greedily is legal in its row's observation.
    """

    def __init__(
        self, encoder: nn.Module, act_spec: ActionSpec, lstm_size: int = 0, obs_spec: ObservationSpec | None = None
    ):
        super().__init__()
        self.encoder = encoder
        self.mask: ActionMask | None = None if obs_spec is None or obs_spec.mask is None else obs_spec.mask.fit(act_spec)
        width = int(cast(int, encoder.hidden_size))
        self.lstm = nn.LSTMCell(width, lstm_size) if lstm_size else None
        if self.lstm is not None:
            for name, param in self.lstm.named_parameters():
                if "bias" in name:
                    nn.init.constant_(param, 0)
                else:
                    nn.init.orthogonal_(param, 1.0)
            width = lstm_size
        self.lstm_size = lstm_size
        self.uniform = False  # zeroed logits standing for a random player (matches): greedy still samples
        self.actor = ActionHead(act_spec, width)
        self.critic: nn.Module = layer_init(nn.Linear(width, 1), std=1.0)
        output_layers = getattr(encoder, "output_layers", None)  # its own action and value layers (pufferbox.encoders)
        if callable(output_layers):
            if self.lstm is not None:
                raise ConfigError(
                    f"policy.lstm: the encoder {type(encoder).__name__} brings its own output layers, which read its "
                    "features directly; train it without policy.lstm"
                )
            self.actor.linear, self.critic = output_layers(cast(nn.Linear, self.actor.linear).out_features)

    def initial_state(self, rows: int, device: torch.device | str = "cpu") -> LSTMState | None:
        if self.lstm is None:
            return None
        zeros = torch.zeros(rows, self.lstm_size, device=device)
        return zeros, zeros.clone()

    def hidden(self, obs: torch.Tensor, state: LSTMState | None, starts: torch.Tensor | None):
        """Features for one step; ``starts[i]`` True zeroes row i's LSTM state first."""
        x = self.encoder(obs)
        if self.lstm is None:
            return x, None
        assert state is not None, "a recurrent policy needs its state (initial_state)"
        h, c = state
        if starts is not None:
            keep = (~starts).float().unsqueeze(-1)
            h, c = h * keep, c * keep
        h, c = self.lstm(x, (h, c))
        return h, (h, c)

    def heads(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(action logits, value)`` from :meth:`hidden`'s features (for samplers outside torch, e.g. a kernel)."""
        return self.actor.linear(hidden), self.critic(hidden).squeeze(-1)

    @property
    def masked(self) -> bool:
        """Whether the env declares an action mask (then only legal actions are ever chosen)."""
        return self.mask is not None

    def legal(self, obs: torch.Tensor) -> torch.Tensor | None:
        """The legal choices of ``(B, flat)`` observations; None without a mask."""
        return None if self.mask is None else self.mask.legal_torch(obs)

    def act(self, obs: torch.Tensor, state: LSTMState | None = None, starts: torch.Tensor | None = None):
        """One inference step: ``(action, logprob, entropy, value, new_state)``."""
        hidden, state = self.hidden(obs, state, starts)
        action, logprob, entropy = self.actor.sample(hidden, legal=self.legal(obs))
        return action, logprob, entropy, self.critic(hidden).squeeze(-1), state

    def evaluate(
        self, obs: torch.Tensor, actions: torch.Tensor, state: LSTMState | None = None, starts: torch.Tensor | None = None
    ):
        """Score stored actions: ``(logprob, entropy, value)``.

        Feed-forward: ``obs`` is ``(N, flat)``. Recurrent: ``obs`` is ``(T, R, flat)``, one
        sequence per agent row, unrolled from ``state`` with resets at ``starts`` (truncated BPTT).
        """
        if self.lstm is None:
            hidden = self.encoder(obs)
        else:
            steps, rows = obs.shape[:2]
            x = self.encoder(obs.reshape(steps * rows, -1)).reshape(steps, rows, -1)
            assert state is not None and starts is not None, "a recurrent policy scores sequences from a state"
            h, c = state
            outs = []
            for t in range(steps):
                keep = (~starts[t]).float().unsqueeze(-1)
                h, c = self.lstm(x[t], (h * keep, c * keep))
                outs.append(h)
            hidden = torch.stack(outs).reshape(steps * rows, -1)
            actions = actions.reshape(steps * rows, *actions.shape[2:])
            obs = obs.reshape(steps * rows, -1)
        logprob, entropy = self.actor.score(hidden, actions, self.legal(obs))
        return logprob, entropy, self.critic(hidden).squeeze(-1)

    def greedy(self, obs: torch.Tensor, state: LSTMState | None = None, starts: torch.Tensor | None = None):
        """The policy's mode; a stand-in for uniform random play (``uniform``) samples even here."""
        hidden, state = self.hidden(obs, state, starts)
        if self.uniform:
            return self.actor.sample(hidden, legal=self.legal(obs))[0], state
        return self.actor.mode(hidden, self.legal(obs)), state


def build_agent(
    obs_spec: ObservationSpec, act_spec: ActionSpec, policy: PolicyConfig | Mapping[str, Any], plugin_policy: Any = None
) -> Agent:
    """The agent for a ``[policy]`` section (a :class:`PolicyConfig` or its dict); ``plugin_policy`` is the
    env's default encoder."""
    from pufferbox.registry import resolve

    if not isinstance(policy, PolicyConfig):
        policy = typed(PolicyConfig, policy, "policy")
    choice, hidden = policy.encoder, policy.hidden_size
    if choice == "auto":
        if plugin_policy is not None:
            encoder_cls = plugin_policy
        elif obs_spec.is_leaf and is_image_space(obs_spec.space):
            encoder_cls = CNNEncoder
        else:
            encoder_cls = MLPEncoder
    elif choice == "mlp":
        encoder_cls = MLPEncoder
    elif choice == "cnn":
        encoder_cls = CNNEncoder
    else:
        encoder_cls = resolve(choice)
    encoder = encoder_cls(obs_spec, act_spec, hidden_size=hidden)
    lstm_size = (policy.lstm_size or hidden) if policy.lstm else 0
    agent = Agent(encoder, act_spec, lstm_size=lstm_size, obs_spec=obs_spec)
    if policy.channels_last:  # oneDNN's convolutions run channels-last (RESULTS.md: "channels-last")
        agent = cast(Agent, cast(Any, agent).to(memory_format=torch.channels_last))  # torch's stubs omit memory_format
    return agent
