"""Helpers for native batched envs: one object simulating many envs in one process.

A native block (see :mod:`pufferbox.vector.base`) has ``num_envs``, ``num_agents``,
``obs_spec``, ``act_spec``, ``set_buffers``, ``vec_reset``, ``vec_step`` and ``close``.
:class:`NativeBlock` supplies the bookkeeping; a subclass writes the physics.

A block that ends many episodes per step returns them as :class:`EpisodeInfos` (arrays that
act as a sequence of info dicts); backends pass it on with :func:`relabel_infos`,
:func:`join_infos` and :func:`concat_infos`, so no dict is built unless a consumer iterates.

Example:
    >>> from pufferbox_classic.native import CartPoleNative   # doctest: +SKIP
    >>> block = CartPoleNative(num_envs=1024)                # doctest: +SKIP
    >>> block.vec_reset(seed=0)                              # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError

__all__ = ["NativeBlock", "EpisodeInfos", "episode_infos", "relabel_infos", "join_infos", "concat_infos"]


class NativeBlock:
    """Base for batched envs writing ``num_envs * agents_per_env`` buffer rows.

    Subclasses set ``obs_spec``/``act_spec``/``agents_per_env`` before calling
    ``super().__init__(num_envs, name)`` and implement ``vec_reset``/``vec_step``.
    """

    obs_spec: ObservationSpec
    act_spec: ActionSpec
    agents_per_env: int = 1
    is_multiagent = False

    def __init__(self, num_envs: int, name: str = "native"):
        if num_envs < 1:
            raise ValueError(f"{name}: num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.num_agents = num_envs * self.agents_per_env
        self.name = name
        self.set_buffers(Buffers.allocate(self.obs_spec, self.act_spec, self.num_agents))

    def set_buffers(self, buffers: Buffers) -> None:
        if len(buffers) != self.num_agents:
            raise ValueError(f"{self.name}: needs {self.num_agents} buffer rows, got {len(buffers)}")
        self.buffers = buffers

    def check_discrete_actions(self, actions: np.ndarray, n: int) -> None:
        """One cheap range check (the emulator checks the first step the same way)."""
        if actions.size and (actions.min() < 0 or actions.max() >= n):
            bad = actions[(actions < 0) | (actions >= n)][0]
            raise SpaceError(f"{self.name}: action {bad} is outside the flat action space Discrete({n})")

    def close(self) -> None:
        pass


class EpisodeInfos(Sequence[dict[str, Any]]):
    """Infos of the episodes that ended in one step, kept as three arrays; dicts are built on access.

    A native block ends hundreds of episodes per step; a dict each costs more than the physics.
    Iterating or indexing gives the same dicts as a list of infos would
    (``{key: env, "episode_return": float, "episode_length": int}``); consumers that want
    numbers read :attr:`envs`, :attr:`returns`, :attr:`lengths` directly. ``key`` is ``"env"``
    (block-local, what a block returns) until a backend relabels it (:meth:`relabel`) to ``"env_id"``.
    Pickles as the three arrays (multiprocessing pipes, Ray).

    Example:
        >>> infos = EpisodeInfos(np.array([3]), np.array([21.0]), np.array([21]))
        >>> list(infos.relabel(100))
        [{'env_id': 103, 'episode_return': 21.0, 'episode_length': 21}]
    """

    __slots__ = ("envs", "returns", "lengths", "key")

    def __init__(self, envs: np.ndarray, returns: np.ndarray, lengths: np.ndarray, key: str = "env"):
        if not len(envs) == len(returns) == len(lengths):
            raise ValueError(f"EpisodeInfos: arrays differ in length ({len(envs)}, {len(returns)}, {len(lengths)})")
        self.envs, self.returns, self.lengths, self.key = envs, returns, lengths, key

    def __len__(self) -> int:
        return len(self.envs)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> "EpisodeInfos": ...

    def __getitem__(self, index: int | slice) -> "dict[str, Any] | EpisodeInfos":
        if isinstance(index, slice):
            return EpisodeInfos(self.envs[index], self.returns[index], self.lengths[index], self.key)
        return {self.key: int(self.envs[index]), "episode_return": float(self.returns[index]),
                "episode_length": int(self.lengths[index])}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        key = self.key  # tolist(): Python scalars in one call per array
        for env, r, n in zip(self.envs.tolist(), self.returns.tolist(), self.lengths.tolist()):
            yield {key: env, "episode_return": r, "episode_length": n}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (EpisodeInfos, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so unhashable like them

    def __add__(self, other: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        return concat_infos((self, other))

    def __radd__(self, other: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        return concat_infos((other, self))  # list + EpisodeInfos (list has no nb_add: this runs)

    def __reduce__(self) -> tuple:
        return EpisodeInfos, (self.envs, self.returns, self.lengths, self.key)

    def __repr__(self) -> str:
        return f"EpisodeInfos({list(self)!r})"

    def relabel(self, first_env: int) -> "EpisodeInfos":
        """These infos with ``env_id = first_env + env`` (what backends report); no dicts built."""
        if self.key != "env":
            raise ValueError(f"EpisodeInfos: relabel needs block-local 'env' keys, these have {self.key!r}")
        return EpisodeInfos(self.envs + first_env, self.returns, self.lengths, "env_id")

    def episode_stats(self) -> tuple[np.ndarray, np.ndarray]:
        """``(returns, lengths)`` as float64 arrays: the fast path for trainers and evaluators."""
        return self.returns.astype(np.float64, copy=False), self.lengths.astype(np.float64)

    @classmethod
    def concat(cls, parts: Sequence["EpisodeInfos"]) -> "EpisodeInfos":
        keys = {p.key for p in parts}
        if len(keys) != 1:
            raise ValueError(f"EpisodeInfos: cannot join infos keyed {sorted(keys)}")
        return cls(np.concatenate([p.envs for p in parts]), np.concatenate([p.returns for p in parts]),
                   np.concatenate([p.lengths for p in parts]), keys.pop())


def episode_infos(done: np.ndarray, returns: np.ndarray, lengths: np.ndarray) -> EpisodeInfos:
    """Infos for envs whose episode ended, like the emulator's (``env`` is block-local)."""
    envs = np.flatnonzero(done)
    return EpisodeInfos(envs, returns[envs], lengths[envs])


def relabel_infos(infos: Sequence[dict[str, Any]], first_env: int) -> Sequence[dict[str, Any]]:
    """A block's infos with ``env_id = first_env + env``: :class:`EpisodeInfos` without building
    dicts, dict lists in place (blocks hand over fresh dicts every step, so no copies)."""
    if isinstance(infos, EpisodeInfos):
        return infos.relabel(first_env)
    for info in infos:
        info["env_id"] = first_env + info.pop("env", 0)
    return infos


def join_infos(infos: Sequence[dict[str, Any]], more: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
    """``infos`` followed by ``more``: a list is extended in place (and returned) when both are lists."""
    if not more:
        return infos
    if isinstance(infos, list) and isinstance(more, list):
        infos.extend(more)
        return infos
    return concat_infos((infos, more))


def concat_infos(parts: Iterable[Sequence[dict[str, Any]]]) -> Sequence[dict[str, Any]]:
    """One sequence of infos from several: :class:`EpisodeInfos` when every non-empty part is one."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return []
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, EpisodeInfos) for p in parts) and len({p.key for p in parts}) == 1:
        return EpisodeInfos.concat(parts)  # type: ignore[arg-type]
    return [info for part in parts for info in part]
