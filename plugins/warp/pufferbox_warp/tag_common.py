"""numpy bookkeeping shared by the two Tag references (``tag.py``, ``tag_continuous.py``).

The twin of ``kernels/tag_common.cuh``: who tags whom once "close enough" is known, tagged
runners leaving the game, the episode end, and which agents each agent observes. Arrays are
``BatchedReference.arrays`` rows, ``[env, agent]``.

Example:
    >>> import numpy as np
    >>> dist = np.array([[[0, 4, 1], [4, 0, 9], [1, 9, 0]]])  # [env, agent, other]
    >>> nearest_agents(dist, 1)[0, :, 0].tolist()
    [2, 0, 0]
"""

from __future__ import annotations

import numpy as np


def catches(near: np.ndarray, alive: np.ndarray, is_tagger: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(caught, hit)`` from ``near[env, agent, other]``: runners each tagger catches, runners tagged."""
    caught = (near & (alive & ~is_tagger)[:, None, :]).sum(-1)
    hit = (near & (alive & is_tagger)[:, None, :]).any(-1) & alive & ~is_tagger
    return caught, hit


def leave_and_count(arrays: dict[str, np.ndarray], num_taggers: int, episode_length: int) -> None:
    """Tagged runners leave the game (terminal); ``done`` is 1 when no runner is left, 2 at the time limit."""
    a = arrays
    stays = (a["in_game"] != 0) & (a["tagged"] == 0)
    a["in_game"][:] = stays
    a["terminals"][:] = ~stays
    a["truncations"][:] = 0
    a["steps"][:, 0] += 1
    remaining = stays[:, num_taggers:].sum(-1)
    a["done"][:, 0] = np.where(remaining == 0, 1, np.where(a["steps"][:, 0] >= episode_length, 2, 0))


def report_done(arrays: dict[str, np.ndarray]) -> None:
    """Every agent of an env whose episode ended: mask on, terminal or (if not terminal) truncated."""
    a = arrays
    d = a["done"][:, :1]
    a["masks"][:] = np.where(d != 0, 1, a["masks"])
    a["terminals"][:] = np.where(d == 1, 1, a["terminals"])
    a["truncations"][:] = (d == 2) & (a["terminals"] == 0)


def nearest_agents(dist: np.ndarray, k: int) -> np.ndarray:
    """``[env, agent, k]`` indices of the k nearest others by ``dist[env, agent, other]`` (ties: lower index).

    Overwrites ``dist``'s diagonal so that no agent picks itself.
    """
    n = dist.shape[1]
    never = np.iinfo(dist.dtype).max if np.issubdtype(dist.dtype, np.integer) else np.inf
    dist[:, np.arange(n), np.arange(n)] = never
    if not np.issubdtype(dist.dtype, np.integer):
        return np.argsort(dist, axis=-1, kind="stable")[:, :, :k]
    # (distance, index) as one unique integer: a partial selection of the k smallest is exact, and
    # O(n) per agent where the stable sort is O(n log n) (1000-agent Tag's first reset: minutes)
    key = dist.astype(np.int64) * n + np.arange(n)
    part = np.argpartition(key, k - 1, axis=-1)[:, :, :k]
    return np.take_along_axis(part, np.argsort(np.take_along_axis(key, part, -1), axis=-1), -1)


def other_agents(num_envs: int, n: int) -> np.ndarray:
    """``[env, agent, n - 1]`` indices of every other agent, in order."""
    others = np.array([[j for j in range(n) if j != i] for i in range(n)], dtype=np.int64)
    return np.broadcast_to(others, (num_envs, n, n - 1))
