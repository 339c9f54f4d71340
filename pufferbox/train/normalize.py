"""Observation and reward normalization for the trainer (as Gymnasium's NormalizeObservation/NormalizeReward
and SB3's VecNormalize do), applied by the collector to what the policy sees and learns from.

* :class:`ObsNormalizer`: running mean/var of the *float* leaves of the observation (read from the
  :class:`~pufferbox.spaces.ObservationSpec`; integer, uint8 image and discrete leaves are left as
  they are), ``(x - mean) / sqrt(var + eps)`` clipped to ``[-clip, clip]``.
* :class:`RewardScaler`: each agent row keeps a discounted return ``R = gamma * R + r`` (reset when
  the row starts an episode); rewards are divided by the running std of ``R`` and clipped.

The Learner never sees raw values: it trains on the normalized batch. Episode returns reported to
the user come from the envs, so they stay raw. Statistics are saved in checkpoints
(:meth:`Normalizer.state_dict`) and restored on ``--resume`` and by ``eval``, which freezes them.

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> from pufferbox.spaces import ObservationSpec
    >>> norm = Normalizer(ObservationSpec(spaces.Box(-1, 1, (2,))), 4, obs=True, reward=False)
    >>> x = norm.observe(np.array([[0, 1], [2, 3], [4, 5], [6, 7]], np.float32))
    >>> bool(abs(x.mean()) < 1e-3)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

__all__ = ["RunningMeanStd", "ObsNormalizer", "RewardScaler", "Normalizer"]


class RunningMeanStd:
    """Mean and variance of every sample seen, merged batch by batch (Chan et al.'s parallel update)."""

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4):
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = epsilon  # as Gymnasium/SB3: the first batch dominates the initial (0, 1) prior

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float64).reshape(-1, *self.mean.shape)
        if not len(x):
            return
        batch_mean, batch_var, n = x.mean(axis=0), x.var(axis=0), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + n
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean, self.var, self.count = self.mean + delta * n / total, m2 / total, total

    def moments(self) -> np.ndarray:
        """``[count, count * mean..., count * (var + mean**2)...]``: sums that add across sample sets."""
        square = self.var + self.mean**2
        return np.concatenate([[self.count], (self.count * self.mean).ravel(), (self.count * square).ravel()])

    def set_moments(self, moments: np.ndarray) -> None:
        """The statistics whose :meth:`moments` are ``moments``."""
        count, size = float(moments[0]), self.mean.size
        self.mean = (moments[1 : 1 + size] / count).reshape(self.mean.shape)
        square = (moments[1 + size :] / count).reshape(self.mean.shape)
        self.var, self.count = np.maximum(square - self.mean**2, 0.0), count  # never below 0 by rounding

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {
            "mean": torch.from_numpy(np.array(self.mean, np.float64)),
            "var": torch.from_numpy(np.array(self.var, np.float64)),
            "count": torch.tensor(self.count, dtype=torch.float64),
        }

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        mean = state["mean"].cpu().numpy().astype(np.float64)
        if mean.shape != self.mean.shape:
            raise ValueError(f"normalizer statistics of shape {mean.shape} do not fit this env's {self.mean.shape}")
        self.mean, self.var = mean, state["var"].cpu().numpy().astype(np.float64)
        self.count = float(state["count"])


class ObsNormalizer:
    """Normalizes the float leaves of flat observation rows in place (a copy of the batch is returned)."""

    def __init__(self, obs_spec: Any, clip: float = 10.0, epsilon: float = 1e-8):
        self.spec, self.clip, self.epsilon = obs_spec, clip, epsilon
        self.floats = [i for i, leaf in enumerate(obs_spec.leaves) if np.issubdtype(leaf.dtype, np.floating)]
        self.stats = {i: RunningMeanStd(tuple(obs_spec.leaves[i].shape)) for i in self.floats}

    def __call__(self, obs: np.ndarray, update: bool = True) -> np.ndarray:
        if not self.floats:
            return obs
        out = obs.copy()
        views = self.spec.leaf_views(out)
        for i in self.floats:
            stats, view = self.stats[i], views[i]
            if update:
                stats.update(view)
            scaled = (view - stats.mean) / np.sqrt(stats.var + self.epsilon)
            view[...] = np.clip(scaled, -self.clip, self.clip)
        return out

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {f"{i}.{k}": v for i in self.floats for k, v in self.stats[i].state_dict().items()}

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        for i in self.floats:
            self.stats[i].load_state_dict({k: state[f"{i}.{k}"] for k in ("mean", "var", "count")})


class RewardScaler:
    """Scales each row's rewards by the running std of its discounted return (not centred: signs stay)."""

    def __init__(self, num_rows: int, gamma: float, clip: float = 10.0, epsilon: float = 1e-8):
        self.gamma, self.clip, self.epsilon = gamma, clip, epsilon
        self.returns = np.zeros(num_rows, np.float64)
        self.stats = RunningMeanStd(())

    def __call__(self, rewards: np.ndarray, rows: np.ndarray, update: bool = True) -> np.ndarray:
        if update:
            self.returns[rows] = self.returns[rows] * self.gamma + rewards
            self.stats.update(self.returns[rows])
        scaled = rewards / np.sqrt(self.stats.var + self.epsilon)
        return np.clip(scaled, -self.clip, self.clip).astype(rewards.dtype, copy=False)

    def episode_start(self, rows: np.ndarray) -> None:
        """``rows`` begin an episode: their discounted return restarts at 0."""
        self.returns[rows] = 0.0

    def state_dict(self) -> dict[str, torch.Tensor]:
        return self.stats.state_dict()

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        self.stats.load_state_dict(state)


class Normalizer:
    """What the collector applies: ``observe`` (obs) and ``scale`` (rewards); ``frozen`` stops the updates (eval)."""

    def __init__(
        self,
        obs_spec: Any,
        num_rows: int,
        obs: bool,
        reward: bool,
        gamma: float = 0.99,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
    ):
        self.obs = ObsNormalizer(obs_spec, clip_obs) if obs else None
        self.reward = RewardScaler(num_rows, gamma, clip_reward) if reward else None
        self.frozen = False

    def observe(self, obs: np.ndarray, update: bool = True) -> np.ndarray:
        """``obs`` normalized; ``update`` False leaves the statistics alone (e.g. final observations)."""
        return obs if self.obs is None else self.obs(obs, update=update and not self.frozen)

    def scale(self, rewards: np.ndarray, rows: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """``rewards`` of ``rows`` scaled; ``starts`` marks rows whose *next* transition begins an episode."""
        if self.reward is None:
            return rewards
        out = self.reward(rewards, rows, update=not self.frozen)
        self.reward.episode_start(rows[starts])
        return out

    def state_dict(self) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        if self.obs is not None:
            out |= {f"obs.{k}": v for k, v in self.obs.state_dict().items()}
        if self.reward is not None:
            out |= {f"reward.{k}": v for k, v in self.reward.state_dict().items()}
        return out

    def running_stats(self) -> dict[str, RunningMeanStd]:
        """Every running statistic, by its key prefix in :meth:`state_dict`."""
        out = {} if self.obs is None else {f"obs.{i}.": self.obs.stats[i] for i in self.obs.floats}
        return out | ({} if self.reward is None else {"reward.": self.reward.stats})

    def pool(self, before: Mapping[str, torch.Tensor], total: Callable[[np.ndarray], np.ndarray]) -> None:
        """Data-parallel learners: make this learner's statistics those of every learner's samples.

        ``before``: the :meth:`state_dict` all learners shared when the rollout started; ``total``: an
        array summed over the learners (an all-reduce). Each learner adds what its own rows saw since
        ``before``, so afterwards all hold the same statistics, as one normalizer fed every row would.
        """
        stats = self.running_stats()
        if not stats:
            return
        prior = {}
        for prefix, running in stats.items():
            shared = RunningMeanStd(running.mean.shape)
            shared.load_state_dict({k: before[prefix + k] for k in ("mean", "var", "count")})
            prior[prefix] = shared.moments()
        added = total(np.concatenate([stats[p].moments() - prior[p] for p in stats]))
        start = 0
        for prefix, running in stats.items():
            running.set_moments(prior[prefix] + added[start : start + prior[prefix].size])
            start += prior[prefix].size

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore statistics saved by :meth:`state_dict`; a part this normalizer does not use is ignored."""
        for name, part in (("obs", self.obs), ("reward", self.reward)):
            keys = {k[len(name) + 1 :]: v for k, v in state.items() if k.startswith(name + ".")}
            if part is not None and keys:
                part.load_state_dict(keys)


def make_normalizer(obs_spec: Any, num_rows: int, train: Any) -> Normalizer | None:
    """The normalizer ``train`` (a :class:`~pufferbox.train.config.TrainConfig`) asks for, or None."""
    if not (train.norm_obs or train.norm_reward):
        return None
    return Normalizer(obs_spec, num_rows, train.norm_obs, train.norm_reward, train.gamma, train.clip_obs, train.clip_reward)
