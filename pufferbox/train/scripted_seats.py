"""``league.scripted_opponent``: self-play's careless seat, sometimes played by a scripted player.

A plugin names a batched move function, ``"module:function"`` with ``move(observations, legal, rng) ->
actions`` (``observations``: the seat's observation tree over the chosen rows, ``legal``: ``(rows,
choices)`` bool). Of the episodes :class:`~pufferbox.train.collector.RandomSeats` hands to a
non-learning group (``league.random_opponent``), a share ``league.scripted_share`` is played by the
function instead of uniform legal moves; those rows stay masked out of training either way. A scripted
opponent can punish what self-play's seats never punish in each other (a one-ply "take the win, block
the loss" player does), which uniformly random play rarely does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pufferbox.registry import resolve
from pufferbox.train.collector import RandomSeats
from pufferbox.train.config import ConfigError


class ScriptedSeats(RandomSeats):
    """:class:`RandomSeats` whose careless group follows ``move`` in a ``scripted_share`` of its episodes.

    Example:
        >>> from gymnasium import spaces
        >>> from pufferbox.spaces import ActionSpec, ObservationSpec
        >>> first = lambda observations, legal, rng: legal.argmax(1)
        >>> seats = ScriptedSeats(first, 1.0, 1.0, np.array([0, 1]), 2, ObservationSpec(spaces.Box(0, 1, (3,))),
        ...                       ActionSpec(spaces.Discrete(4)), seed=0)
        >>> actions = np.full(4, 3)
        >>> masks = seats.apply(np.arange(4), np.zeros((4, 3), np.float32), np.ones(4, bool), actions, np.ones(4, bool))
        >>> int((actions == 0).sum()), int(masks.sum())  # the scripted rows move first legal and are not trained
        (2, 2)
    """

    def __init__(
        self,
        move: Callable[..., Any],
        scripted_share: float,
        share: float,
        slot_group: np.ndarray,
        num_envs: int,
        obs_spec: Any,
        act_spec: Any,
        seed: int,
    ):
        super().__init__(share, slot_group, num_envs, obs_spec, act_spec, seed)
        self.move, self.scripted_share, self.obs_spec = move, scripted_share, obs_spec
        self.scripted = np.zeros(num_envs, dtype=bool)  # per env: this episode's careless group is scripted

    def apply(
        self, rows: np.ndarray, obs: np.ndarray, starts: np.ndarray, actions: np.ndarray, masks: np.ndarray
    ) -> np.ndarray:
        fresh = rows[:: self.apr][starts.reshape(-1, self.apr).all(1)] // self.apr
        self.scripted[fresh] = self.rng.random(len(fresh)) < self.scripted_share
        return super().apply(rows, obs, starts, actions, masks)

    def pick(self, rows: np.ndarray, obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Uniform legal actions, the scripted player's in the rows of scripted episodes."""
        actions = super().pick(rows, obs, legal)
        scripted = self.scripted[rows // self.apr]
        if scripted.any():
            moves = self.move(self.obs_spec.unflatten(obs[scripted]), legal[scripted], self.rng)
            actions[scripted] = np.asarray(moves).reshape(actions[scripted].shape)
        return actions


def careless_seats(league: Any, slot_group: np.ndarray, venv: Any, seed: int) -> RandomSeats:
    """``league.random_opponent``'s seats: scripted in a share of episodes when ``league.scripted_opponent``
    names a move function (a one-line :class:`ConfigError` when it cannot be imported)."""
    args = (league.random_opponent, slot_group, venv.num_envs, venv.obs_spec, venv.act_spec, seed)
    if not league.scripted_opponent:
        return RandomSeats(*args)
    if not 0 <= league.scripted_share <= 1:
        raise ConfigError(f"league.scripted_share={league.scripted_share}: a share of episodes, between 0 and 1")
    try:
        move = resolve(league.scripted_opponent)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"league.scripted_opponent={league.scripted_opponent!r} cannot be imported ({exc}); "
            "name a move function as 'module:function'"
        ) from None
    if not callable(move):
        raise ConfigError(f"league.scripted_opponent={league.scripted_opponent!r} is not a function; name 'module:function'")
    return ScriptedSeats(move, league.scripted_share, *args)
