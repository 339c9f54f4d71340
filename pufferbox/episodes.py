"""The one form finished episodes travel in: :class:`Episodes`, arrays with one entry per episode.

Every producer (an emulated env, a native block, a backend, the cuda kernels' episode log)
reports the episodes that ended as an ``Episodes``: env ids, returns, lengths, and the named
extra metrics a plugin declares (e.g. Crafter's achievements, Tag's tag rate), each an array
aligned with the others. Consumers (the trainer, evaluation, tournaments) read the arrays;
no dict is built on the way.

Example:
    >>> eps = Episodes.from_arrays([3], [21.0], [21])
    >>> len(eps), eps.returns.tolist()
    (1, [21.0])
    >>> Episodes.concat([eps.relabel(100), Episodes.empty()]).env_ids.tolist()
    [103]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["NO_EPISODES", "Episodes"]


def _array(values: Any, dtype: Any) -> np.ndarray:
    return np.asarray(values, dtype=dtype).reshape(-1)


@dataclass(frozen=True, eq=False)
class Episodes:
    """Episodes that ended: ``env_ids`` (int64), ``returns`` (float64), ``lengths`` (int64) and
    ``metrics`` (name -> float64 array), all of one length. Picklable (pipes, Ray)."""

    env_ids: np.ndarray
    returns: np.ndarray
    lengths: np.ndarray
    metrics: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.env_ids)
        bad = [
            name
            for name, arr in (("returns", self.returns), ("lengths", self.lengths), *self.metrics.items())
            if len(arr) != n
        ]
        if bad:
            raise ValueError(f"Episodes: {', '.join(bad)} not of the {n} episodes' length")

    @classmethod
    def trusted(
        cls, env_ids: np.ndarray, returns: np.ndarray, lengths: np.ndarray, metrics: Mapping[str, np.ndarray]
    ) -> Episodes:
        """Build from arrays already of the canonical dtypes and one length, skipping the check
        (what internal paths that produced them use: one emulator step ends at most one episode,
        and each allocation here is on the per-step path)."""
        self = object.__new__(cls)
        self.__dict__.update(env_ids=env_ids, returns=returns, lengths=lengths, metrics=metrics)
        return self

    @classmethod
    def from_arrays(cls, env_ids: Any, returns: Any, lengths: Any, metrics: Mapping[str, Any] | None = None) -> Episodes:
        """Build from anything array-like, converting to the canonical dtypes."""
        return cls(
            _array(env_ids, np.int64),
            _array(returns, np.float64),
            _array(lengths, np.int64),
            {name: _array(v, np.float64) for name, v in (metrics or {}).items()},
        )

    @classmethod
    def one(cls, env_id: int, episode_return: float, length: int, metrics: Mapping[str, float] | None = None) -> Episodes:
        """One episode (what an emulated env reports when its episode ends)."""
        return cls.trusted(
            np.array([env_id], np.int64),
            np.array([episode_return], np.float64),
            np.array([length], np.int64),
            {name: np.array([value], np.float64) for name, value in metrics.items()} if metrics else {},
        )

    @classmethod
    def empty(cls, metric_names: Iterable[str] = ()) -> Episodes:
        return cls.from_arrays([], [], [], {name: [] for name in metric_names})

    def __len__(self) -> int:
        return len(self.env_ids)

    def relabel(self, first_env: int) -> Episodes:
        """The same episodes with ``first_env`` added to each env id (block-local -> backend-wide)."""
        if not first_env or not len(self):
            return self
        return Episodes.trusted(self.env_ids + first_env, self.returns, self.lengths, self.metrics)

    def select(self, index: Any) -> Episodes:
        """A subset (boolean mask, index array or slice)."""
        return Episodes(
            self.env_ids[index],
            self.returns[index],
            self.lengths[index],
            {name: arr[index] for name, arr in self.metrics.items()},
        )

    @staticmethod
    def gather(parts: Sequence[tuple[int, Episodes]]) -> Episodes:
        """One ``Episodes`` from ``(first_env, block-local episodes)`` pairs: relabel and concat in one pass."""
        if len(parts) == 1:
            first_env, episodes = parts[0]
            return episodes.relabel(first_env)
        # Parts are small (an emulator ends one episode): Python lists, then one array each, beat
        # concatenating many one-element arrays.
        env_ids: list[int] = []
        returns: list[float] = []
        lengths: list[int] = []
        for first_env, p in parts:
            env_ids += [first_env + env for env in p.env_ids.tolist()]
            returns += p.returns.tolist()
            lengths += p.lengths.tolist()
        metrics = {}
        if any(p.metrics for _, p in parts):
            names = sorted({name for _, p in parts for name in p.metrics})
            metrics = {
                name: np.concatenate([p.metrics.get(name, np.full(len(p), np.nan)) for _, p in parts]) for name in names
            }
        return Episodes.trusted(
            np.array(env_ids, np.int64), np.array(returns, np.float64), np.array(lengths, np.int64), metrics
        )

    @staticmethod
    def concat(parts: Sequence[Episodes]) -> Episodes:
        """One ``Episodes`` from several; a metric missing from a part is NaN for its episodes."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return Episodes.empty()
        if len(parts) == 1:
            return parts[0]
        names = sorted({name for p in parts for name in p.metrics})
        metrics = {name: np.concatenate([p.metrics.get(name, np.full(len(p), np.nan)) for p in parts]) for name in names}
        return Episodes(
            np.concatenate([p.env_ids for p in parts]),
            np.concatenate([p.returns for p in parts]),
            np.concatenate([p.lengths for p in parts]),
            metrics,
        )

    def __reduce__(self) -> tuple:
        # Plain lists: a worker sends episodes through a pipe nearly every step, and a few numbers
        # pickle several times faster as lists than as ndarrays (also compact: no dtype headers).
        return (
            _from_lists,
            (
                self.env_ids.tolist(),
                self.returns.tolist(),
                self.lengths.tolist(),
                {name: v.tolist() for name, v in self.metrics.items()} if self.metrics else None,
            ),
        )

    def info_dict(self, num_envs: int) -> dict[str, np.ndarray]:
        """Gymnasium's vector info layout (``key`` array and ``_key`` mask per env), as ``VectorEnv.step`` returns."""
        out: dict[str, np.ndarray] = {}
        if not len(self):
            return out  # Gymnasium leaves keys out when no env reports them
        columns = {"episode_return": self.returns, "episode_length": self.lengths, **self.metrics}
        for key, values in columns.items():
            out[key] = np.zeros(num_envs, dtype=values.dtype)
            out[key][self.env_ids] = values
            out["_" + key] = np.zeros(num_envs, dtype=bool)
            out["_" + key][self.env_ids] = True
        return out

    def __repr__(self) -> str:
        extra = "".join(f", {name}={arr.tolist()}" for name, arr in self.metrics.items())
        return (
            f"Episodes(env_ids={self.env_ids.tolist()}, returns={self.returns.tolist()}, "
            f"lengths={self.lengths.tolist()}{extra})"
        )


def _from_lists(env_ids: list, returns: list, lengths: list, metrics: dict[str, list] | None) -> Episodes:
    """Unpickle (see ``Episodes.__reduce__``)."""
    return Episodes.trusted(
        np.array(env_ids, np.int64),
        np.array(returns, np.float64),
        np.array(lengths, np.int64),
        {name: np.array(v, np.float64) for name, v in metrics.items()} if metrics else {},
    )


NO_EPISODES = Episodes.empty()  # what most steps return: shared, since an Episodes is never mutated
