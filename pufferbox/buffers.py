"""The arrays a vector backend owns and environments write into.

One row per agent slot. A backend allocates a :class:`Buffers` for all its rows (in
plain memory, shared memory, or GPU memory) and hands each environment a
:meth:`Buffers.slice` of its own rows; environments never allocate their outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np

from pufferbox.spaces import ActionSpec, ObservationSpec

Allocator = Callable[[tuple[int, ...], np.dtype], np.ndarray]


def numpy_allocator(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


@dataclass
class Buffers:
    """Per-row arrays: ``observations[rows, flat]``, ``rewards``, ``terminals``, ``truncations``,
    ``masks`` (agent present in this observation), ``actions[rows, ...]`` and
    ``final_observations[rows, flat]``: on a step where a row's episode was truncated (and not
    terminated), the episode's last observation, which ``observations`` no longer shows (SAME_STEP
    autoreset put the next episode's first there); a learner bootstraps the truncated return from
    it. Rows not truncated this step hold stale values: read it only where ``truncations``."""

    observations: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    final_observations: np.ndarray

    @classmethod
    def layout(
        cls, obs_spec: ObservationSpec, act_spec: ActionSpec, rows: int
    ) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Shape and dtype of each array, so shared-memory backends can size segments first."""
        return {
            "observations": ((rows, obs_spec.flat_size), obs_spec.flat_dtype),
            "rewards": ((rows,), np.dtype(np.float32)),
            "terminals": ((rows,), np.dtype(np.bool_)),
            "truncations": ((rows,), np.dtype(np.bool_)),
            "masks": ((rows,), np.dtype(np.bool_)),
            "actions": ((rows, *act_spec.shape), act_spec.dtype),
            "final_observations": ((rows, obs_spec.flat_size), obs_spec.flat_dtype),
        }

    @classmethod
    def allocate(
        cls, obs_spec: ObservationSpec, act_spec: ActionSpec, rows: int, allocator: Allocator = numpy_allocator
    ) -> Buffers:
        layout = cls.layout(obs_spec, act_spec, rows)
        return cls(**{name: allocator(shape, dtype) for name, (shape, dtype) in layout.items()})

    @classmethod
    def nbytes_for(cls, obs_spec: ObservationSpec, act_spec: ActionSpec, rows: int) -> int:
        return sum(int(np.prod(s)) * d.itemsize for s, d in cls.layout(obs_spec, act_spec, rows).values())

    def slice(self, start: int, stop: int) -> Buffers:
        """Views of rows ``start:stop`` (no copy)."""
        return Buffers(**{f.name: getattr(self, f.name)[start:stop] for f in fields(self)})

    def __len__(self) -> int:
        return len(self.rewards)
