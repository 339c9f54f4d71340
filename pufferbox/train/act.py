"""The act step: observations -> policy -> actions, log-probabilities and values, written once.

Every loop that acts with a policy goes through here: the host collector's ``collect`` and ``play``
(serial, multiprocessing), league matches, the Ray rollout actors (:class:`~pufferbox.train.ray_collector.
PolicyActing`) and the device collector (``--backend cuda``).

* :class:`ActStep` works on tensors where the policy is: the policy forward with its action masks and
  recurrent state, then a sample (torch's, or a backend's sampler kernel for discrete actions) or the
  mode (``greedy``). It makes no host read, so the device collector's loop stays free of syncs.
* :class:`RowActing` is the numpy face of it for CPU backends: the NaN/inf check of observations and of
  the policy's output, the optional observation normalizer, one copy up per input and one wait for all
  outputs (:class:`~pufferbox.train.transfer.Transfer`), and each agent row's LSTM state.
* :func:`rollout_schema` is the one list of what a rollout stores per step; :func:`bootstrapped` the one
  formula of the truncation bootstrap (``r + gamma * V(final obs)`` where a row was truncated, not terminated).

Example:
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ActionSpec, ObservationSpec
    >>> from pufferbox.train.policies import build_agent
    >>> obs_spec, act_spec = ObservationSpec(spaces.Box(-1, 1, (3,))), ActionSpec(spaces.Discrete(2))
    >>> acting = RowActing(build_agent(obs_spec, act_spec, {"hidden_size": 8}), act_spec, rows=4, agents_per_env=1)
    >>> sent, actions, logprobs, values = acting.act(np.zeros((4, 3), np.float32), np.ones(4, bool), np.arange(4))
    >>> sent.shape, logprobs.dtype.name
    ((4,), 'float32')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch
from gymnasium import spaces

from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.config import ConfigError
from pufferbox.train.transfer import Transfer
from pufferbox.vector.base import (
    LOGITS_NOT_FINITE,
    OBSERVATION_NOT_FINITE,
    NonFiniteActing,
    env_schema,
    first_non_finite_row,
)

if TYPE_CHECKING:
    from pufferbox.train.groups import GroupedAgent
    from pufferbox.train.policies import Agent

__all__ = [
    "ActStep",
    "Acted",
    "NonFiniteInput",
    "RowActing",
    "bootstrapped",
    "check_finite",
    "discrete_sampler",
    "rollout_fields",
    "rollout_schema",
]

LSTMState = tuple[torch.Tensor, torch.Tensor]
ArrayT = TypeVar("ArrayT", np.ndarray, torch.Tensor)


class NonFiniteInput(ConfigError, NonFiniteActing):
    """An env returned an observation holding NaN/inf, or the policy's action distribution is not finite
    (NaN or +inf logits; the -inf of masked actions is legal). The trainer adds the env and the step.
    Also a :class:`~pufferbox.vector.base.NonFiniteActing`, so a Ray actor's raise reaches the driver named."""


def rollout_fields(lstm: bool) -> tuple[str, ...]:
    """The arrays a rollout stores per step, as PPO's batch names them (LSTM policies add their state)."""
    return ("obs", "actions", "logprobs", "values", "rewards", "starts", "masks") + (("h", "c") if lstm else ())


def rollout_schema(obs_spec: ObservationSpec, act_spec: ActionSpec, lstm_size: int) -> dict[str, tuple[tuple, np.dtype]]:
    """Per stored array (:func:`rollout_fields`), its shape per row and step and its dtype: the envs' part
    (:func:`~pufferbox.vector.base.env_schema`) and the policy's."""
    f32 = np.dtype(np.float32)
    per_step = env_schema(obs_spec, act_spec) | {
        "logprobs": ((), f32),
        "values": ((), f32),
        "h": ((lstm_size,), f32),
        "c": ((lstm_size,), f32),
    }
    return {name: per_step[name] for name in rollout_fields(lstm_size > 0)}


def bootstrapped(rewards: ArrayT, values: ArrayT, cut: ArrayT, gamma: float) -> ArrayT:
    """``rewards`` with ``gamma * values`` added where ``cut`` (truncated, not terminated): SB3's fix of the
    time-limit bias. numpy or torch alike; the rows not cut keep their reward exactly."""
    if isinstance(rewards, torch.Tensor):
        return torch.where(cut, rewards + gamma * values, rewards)
    return np.where(cut, rewards + gamma * values, rewards).astype(np.float32)


def check_finite(rows: np.ndarray, row_ids: np.ndarray, agents_per_env: int, message: str, first_row: int = 0) -> None:
    """Raise :class:`NonFiniteInput` with ``message`` naming the env of the first row holding NaN/inf
    (``row_ids``: each row's agent row, numbered from ``first_row``)."""
    bad = first_non_finite_row(rows)
    if bad is not None:
        row = first_row + int(row_ids[bad])
        raise NonFiniteInput(message.format(env=row // agents_per_env, row=row))


@dataclass
class Acted:
    """One act step's outputs (tensors): ``actions`` as sampled (stored), their log-probabilities and the
    values (None when greedy), the rows' next recurrent state."""

    actions: torch.Tensor
    logprobs: torch.Tensor | None
    values: torch.Tensor | None
    state: LSTMState | None


class ActStep:
    """The policy on one batch of agent rows, on tensors where the policy is (no host read).

    ``sampler`` (a backend's sampler kernel, e.g. ``CudaVectorEnv.sample``) draws discrete actions from the
    policy's probabilities where the env reads them; else torch samples (``compile``: a torch.compile'd act).
    """

    def __init__(
        self,
        policy: Any,
        act_spec: ActionSpec,
        device: torch.device | str = "cpu",
        compile: bool = False,
        compile_mode: str = "default",
        sampler: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ):
        self.policy, self.sampler = policy, sampler
        self.forward = torch.compile(policy.act, mode=compile_mode) if compile else policy.act
        space: Any = act_spec.flat_space
        # Box (or hybrid) rows: sampled unclipped (stored, scored) and stepped clipped to the space
        self.bounds = None if act_spec.discrete else (space.low, space.high)
        self.device_bounds = None
        if self.bounds is not None:
            self.device_bounds = tuple(torch.as_tensor(b, device=device) for b in self.bounds)

    def __call__(
        self, obs: torch.Tensor, state: LSTMState | None, starts: torch.Tensor | None, greedy: bool = False
    ) -> Acted:
        """The rows' actions; ``starts[i]`` zeroes row i's recurrent state first; ``greedy``: the mode."""
        if greedy:
            action, new_state = self.policy.greedy(obs, state, starts)
            return Acted(action, None, None, new_state)
        if self.sampler is not None:
            hidden, new_state = self.policy.hidden(obs, state, starts)
            logits, value = self.policy.heads(hidden)
            action = self.sampler(torch.softmax(logits, dim=-1).contiguous())
            logprob = torch.log_softmax(logits, dim=-1).gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
            return Acted(action, logprob, value, new_state)
        try:
            action, logprob, _, value, new_state = self.forward(obs, state, starts)
        except RuntimeError as exc:  # torch's sampler on NaN/+inf probabilities: a traceback otherwise
            if "probability tensor contains" not in str(exc):
                raise
            raise NonFiniteInput("the policy's logits are NaN/inf on this step's observations") from None
        return Acted(action, logprob, value, new_state)

    def value(self, obs: torch.Tensor, state: LSTMState | None) -> torch.Tensor:
        """The critic's value of ``obs`` with the rows' state continued (no reset, nothing sampled): the
        truncation bootstrap's ``V(final obs)``."""
        hidden, _ = self.policy.hidden(obs, state, None)
        return self.policy.heads(hidden)[1].float()

    def sendable(self, actions: ArrayT) -> ArrayT:
        """What the env steps: Box actions clipped to the space (numpy on the host, tensors on a device)."""
        if self.bounds is None:
            return actions
        if isinstance(actions, torch.Tensor):
            assert self.device_bounds is not None
            return torch.clamp(actions, *self.device_bounds)
        return np.clip(actions, *self.bounds)


class RowActing:
    """The act step of a CPU backend: numpy rows in and out, each agent row's LSTM state kept here (CPU).

    ``first_row`` numbers the rows in messages (a Ray actor's rows are a block of the run's);
    ``norm`` (a :class:`~pufferbox.train.normalize.Normalizer`) is what the policy sees and learns from.
    """

    def __init__(
        self,
        policy: Any,
        act_spec: ActionSpec,
        rows: int,
        agents_per_env: int,
        device: torch.device | str = "cpu",
        compile: bool = False,
        compile_mode: str = "default",
        first_row: int = 0,
    ):
        self.policy, self.rows, self.agents_per_env, self.first_row = policy, rows, agents_per_env, first_row
        self.device = torch.device(device)
        self.step = ActStep(policy, act_spec, self.device, compile, compile_mode)
        self.transfer = Transfer(self.device)  # pinned staging on a GPU, plain on the CPU
        self.norm: Any = None
        self.restart()

    def restart(self) -> None:
        """Every row's recurrent state back to zero."""
        self.state = self.policy.initial_state(self.rows)

    def rows_state(self, rows: np.ndarray) -> LSTMState | None:
        if self.state is None:
            return None
        return self.state[0][rows].to(self.device), self.state[1][rows].to(self.device)

    def observe(self, obs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Check ``obs`` (NaN/inf names the env), then what the policy sees: normalized when a normalizer is set."""
        check_finite(obs, rows, self.agents_per_env, OBSERVATION_NOT_FINITE, self.first_row)
        return obs if self.norm is None else self.norm.observe(obs)

    @torch.inference_mode()  # every output leaves as numpy: no autograd bookkeeping at all
    def act(self, obs: np.ndarray, starts: np.ndarray, rows: np.ndarray, greedy: bool = False) -> tuple:
        """The policy on ``rows``' observations, advancing their LSTM state: ``(actions to send, actions,
        logprobs, values)`` as numpy (logprobs and values None when ``greedy``); one wait for the device."""
        obs_t, starts_t = self.transfer.to_device("obs", obs), self.transfer.to_device("starts", starts)
        acted = self.step(obs_t, self.rows_state(rows), starts_t, greedy)
        outputs = [acted.actions]
        if acted.logprobs is not None and acted.values is not None:
            outputs += [acted.logprobs, acted.values]
        host = self.transfer.to_host(outputs + ([] if acted.state is None else list(acted.state)))
        action, logprob, value = host[0], None, None
        if not greedy:
            logprob, value = host[1], host[2]
            # a sampled action's log-probability is NaN/inf only if its row's logits were (masked -inf never is)
            check_finite(logprob, rows, self.agents_per_env, LOGITS_NOT_FINITE, self.first_row)
        if self.state is not None:
            self.state[0][rows], self.state[1][rows] = torch.from_numpy(host[-2]), torch.from_numpy(host[-1])
        return self.step.sendable(action), action, logprob, value

    @torch.inference_mode()
    def bootstrap(
        self,
        rewards: np.ndarray,
        obs: np.ndarray,
        final: np.ndarray | None,
        cut: np.ndarray,
        rows: np.ndarray,
        gamma: float,
    ) -> np.ndarray:
        """``rewards`` bootstrapped where ``cut`` from ``final`` (the backend's final observations, unnormalized).

        The whole batch goes through the policy (final observations in the cut rows) so grouped and
        recurrent policies see the rows they expect; the rows' LSTM state continues (no reset)."""
        if final is None or not cut.any():
            return rewards
        batch = obs.copy()
        batch[cut] = final[cut] if self.norm is None else self.norm.observe(final[cut], update=False)
        value = self.step.value(self.transfer.to_device("final", batch), self.rows_state(rows)).cpu().numpy()
        return bootstrapped(np.asarray(rewards, dtype=np.float32), value, cut, gamma)


def discrete_sampler(
    venv: Any, act_spec: ActionSpec, policy: Agent | GroupedAgent
) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """A backend's sampler kernel where it can draw the actions (one Discrete, no action mask), else None."""
    if venv.samples_actions and isinstance(act_spec.flat_space, spaces.Discrete) and not policy.masked:
        return venv.sample
    return None
