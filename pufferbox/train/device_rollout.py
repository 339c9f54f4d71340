"""Rollouts that never leave the kernels' device: the ``cuda`` backend's half of the PPO loop.

:class:`DeviceRollout` is the tensor twin of :class:`pufferbox.train.ppo.Rollout` for a backend
whose ``recv()`` returns torch tensors on its device (:class:`~pufferbox.vector.cuda.CudaVectorEnv`).
Every env is stepped at once, so each agent row owns exactly one segment of ``horizon``
transitions (+1 bootstrap step, carried over as the next rollout's first step) and the storage
has the same ``(segments, horizon + 1, ...)`` layout, so the trainer's GAE and PPO update apply
unchanged.

Nothing in :meth:`DeviceRollout.collect`'s step loop copies between host and device or waits
for the device: observations are read in place, the policy runs on the device, discrete
actions are drawn by the backend's sampler kernel straight into its action buffer
(``venv.sample(probs)``), and env events (Tag's ``tagged`` flags) are summed on the device.
Once per rollout, after the loop, episode statistics are fetched (``venv.episode_stats()``,
two device→host copies) and the event totals are read.

Example:
    >>> venv = pufferbox.vector.make("cuda_cartpole", backend="cuda", num_envs=16, device="host")  # doctest: +SKIP
    >>> rollout = DeviceRollout(venv, agent, horizon=32)                                          # doctest: +SKIP
    >>> episodes, metrics = rollout.collect()                                                     # doctest: +SKIP
    >>> rollout.take(np.arange(16))["obs"].shape                                                  # doctest: +SKIP
    torch.Size([16, 33, 4])
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from pufferbox.episodes import Episodes

__all__ = ["DeviceRollout", "EVENT_METRICS"]

# Kernel state arrays that flag an event of the current step, and the metric reporting their rate:
# events per env and step, averaged over the rollout.
EVENT_METRICS = {"tagged": "tag_rate"}


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype=dtype)).dtype


class DeviceRollout:
    """One segment of ``horizon`` (+1) transitions per agent row, as tensors on ``venv.device``.

    ``agent`` is a :class:`~pufferbox.train.policies.Agent` already on that device.
    """

    def __init__(self, venv: Any, agent: Any, horizon: int):
        self.venv, self.agent, self.horizon = venv, agent, horizon
        self.device = torch.device(venv.device)
        self.rows = self.segments = venv.num_agents
        self.num_envs = venv.num_envs
        obs_spec, act_spec = venv.obs_spec, venv.act_spec

        def tensor(shape: tuple, dtype: Any) -> torch.Tensor:
            return torch.zeros((self.rows, horizon + 1, *shape), dtype=dtype, device=self.device)

        self.obs = tensor((obs_spec.flat_size,), torch_dtype(obs_spec.flat_dtype))
        self.actions = tensor(tuple(act_spec.shape), torch_dtype(act_spec.dtype))
        self.logprobs, self.values, self.rewards = (tensor((), torch.float32) for _ in range(3))
        self.starts, self.masks = tensor((), torch.bool), tensor((), torch.bool)
        self.lstm = agent.lstm_size > 0
        if self.lstm:
            self.h, self.c = tensor((agent.lstm_size,), torch.float32), tensor((agent.lstm_size,), torch.float32)
        # Discrete actions come from the backend's sampler kernel (one launch, written where the env reads them).
        self.use_sampler = isinstance(act_spec.flat_space, spaces.Discrete) and hasattr(venv, "sample")
        space = act_spec.flat_space
        self.bounds = None if act_spec.discrete else (
            torch.as_tensor(space.low, device=self.device), torch.as_tensor(space.high, device=self.device))
        self.events = {metric: flags for name, metric in EVENT_METRICS.items()
                       if (flags := venv.state_tensor(name)) is not None} if hasattr(venv, "state_tensor") else {}
        self.clear()

    def clear(self) -> None:
        """Start over from the envs' current observations: every row begins an episode, LSTM state zero."""
        self.state = self.agent.initial_state(self.rows, self.device)
        self.pending: torch.Tensor | None = None  # actions chosen for the last stored step, not yet sent
        self.fresh = True
        self.event_totals: dict[str, torch.Tensor] = {}  # device scalars, summed during a collect
        self.sent_steps = 0

    def arrays(self) -> list[torch.Tensor]:
        out = [self.obs, self.actions, self.logprobs, self.values, self.rewards, self.starts, self.masks]
        return out + ([self.h, self.c] if self.lstm else [])

    def take(self, segs: np.ndarray) -> dict[str, torch.Tensor]:
        """The stored segments (all rows, in order: every row has exactly one), no copies."""
        if len(segs) != self.rows:
            raise ValueError(f"a device rollout trains all {self.rows} segments at once, got {len(segs)}")
        out = {"obs": self.obs, "actions": self.actions, "logprobs": self.logprobs, "values": self.values,
               "rewards": self.rewards, "starts": self.starts, "masks": self.masks}
        return out | ({"h": self.h, "c": self.c} if self.lstm else {})

    def release(self, segs: np.ndarray) -> None:
        """Nothing to free: the next :meth:`collect` overwrites every segment."""

    def policy_step(self, obs: torch.Tensor, starts: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(action to send, action to store, logprob, value)`` for one step; updates the LSTM state."""
        if not self.use_sampler:
            action, logprob, _, value, self.state = self.agent.act(obs, self.state, starts)
            sent = action if self.bounds is None else torch.clamp(action, *self.bounds)  # sample unclipped, step clipped
            return sent, action, logprob, value
        hidden, self.state = self.agent.hidden(obs, self.state, starts)
        logits = self.agent.actor.linear(hidden)
        sent = self.venv.sample(torch.softmax(logits, dim=-1).contiguous())  # int32, in the env's action buffer
        logprob = torch.log_softmax(logits, dim=-1).gather(-1, sent.long().unsqueeze(-1)).squeeze(-1)
        return sent, sent, logprob, self.agent.critic(hidden).squeeze(-1)

    @torch.no_grad()
    def collect(self, phase_time: dict[str, float] | None = None) -> tuple[list[dict], dict[str, float]]:
        """Fill every row's segment; returns ``(episode infos, rollout metrics)``.

        The steps (:meth:`step`) make no host↔device transfer; the reads after them are the only ones.
        """
        phase_time = {"env": 0.0, "inference": 0.0} if phase_time is None else phase_time
        first = 0
        if self.pending is not None:  # the last step of the previous rollout is this one's first
            for x in self.arrays():
                x[:, 0] = x[:, self.horizon]
            first = 1
        self.event_totals = {metric: torch.zeros((), dtype=torch.int64, device=self.device) for metric in self.events}
        self.sent_steps = 0
        for t in range(first, self.horizon + 1):
            self.step(t, phase_time)
        t0 = time.perf_counter()
        episodes = self.venv.episode_stats() if hasattr(self.venv, "episode_stats") else Episodes.empty()
        per_env_step = max(1, self.num_envs * self.sent_steps)
        metrics = {metric: float(total) / per_env_step for metric, total in self.event_totals.items()}
        if hasattr(self.venv, "episodes_dropped"):
            metrics["episodes_dropped"] = float(self.venv.episodes_dropped)
        phase_time["env"] += time.perf_counter() - t0
        return episodes, metrics

    def step(self, t: int, phase_time: dict[str, float]) -> None:
        """Send the pending actions, store what comes back at slot ``t``, choose the next actions."""
        t0 = time.perf_counter()
        if self.pending is not None:
            self.venv.send(self.pending)
            self.sent_steps += 1
        obs, rewards, terminals, truncations, _, _, masks = self.venv.recv()
        t1 = time.perf_counter()
        if t > 0:  # the reward belongs to the transition stored one slot back
            self.rewards[:, t - 1] = rewards
        if self.pending is not None:
            for metric, flags in self.events.items():
                self.event_totals[metric] += flags.sum()
        starts = terminals | truncations
        if self.fresh:
            starts.fill_(True)
            self.fresh = False
        self.obs[:, t] = obs
        self.starts[:, t] = starts
        self.masks[:, t] = masks
        if self.lstm:
            self.h[:, t], self.c[:, t] = self.state
        sent, action, logprob, value = self.policy_step(obs, starts)
        self.actions[:, t] = action.reshape(self.actions[:, t].shape)
        self.logprobs[:, t] = logprob
        self.values[:, t] = value
        self.pending = sent
        phase_time["env"] += t1 - t0
        phase_time["inference"] += time.perf_counter() - t1
