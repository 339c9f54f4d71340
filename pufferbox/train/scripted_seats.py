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

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from pufferbox.registry import resolve
from pufferbox.train.collector import RandomSeats
from pufferbox.train.config import ConfigError


class ScriptedOpponentError(ConfigError):
    """The scripted opponent raised, or returned what is not one whole move per row (one line)."""


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
        name: str = "",
    ):
        super().__init__(share, slot_group, num_envs, obs_spec, act_spec, seed)
        self.move, self.scripted_share, self.obs_spec = move, scripted_share, obs_spec
        self.name = name or f"{getattr(move, '__module__', '?')}:{getattr(move, '__qualname__', '?')}"
        self.warned = False  # illegal moves are said once
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
            actions[scripted] = self.scripted_moves(obs[scripted], legal[scripted], actions[scripted])
        return actions

    def scripted_moves(self, obs: np.ndarray, legal: np.ndarray, uniform: np.ndarray) -> np.ndarray:
        """The function's moves for these rows: one line (:class:`ScriptedOpponentError`) when it raises or
        returns what is not one whole move per row; its illegal moves are replaced by ``uniform`` (legal) ones,
        said once on stderr."""
        try:
            moves = self.move(self.obs_spec.unflatten(obs), legal, self.rng)
        except Exception as exc:
            text = str(exc).strip().splitlines()
            raise ScriptedOpponentError(
                f"league.scripted_opponent={self.name!r} raised {type(exc).__name__}"
                + (f": {text[0][:200]}" if text else "")
                + '; fix the function (move(observations, legal, rng) -> one move per row) or set it to ""'
            ) from exc
        try:
            found = np.asarray(moves)
        except Exception:  # ragged lists and the like
            found = np.asarray(None)
        if found.size != uniform.size or not np.issubdtype(found.dtype, np.integer):
            what = type(moves).__name__ if found.dtype == object else f"shape {found.shape}, dtype {found.dtype}"
            raise ScriptedOpponentError(
                f"league.scripted_opponent={self.name!r} returned {what} for {len(legal)} rows; expected "
                f'{uniform.size} whole moves (shape {uniform.shape}); fix the function or set it to ""'
            )
        found = found.reshape(uniform.shape)
        bad = ~self.legal_moves(found.reshape(len(legal), -1), legal)
        if bad.any():
            if not self.warned:
                self.warned = True
                print(
                    f"warning: league.scripted_opponent={self.name!r} played {int(bad.sum())} illegal (masked-out) "
                    "moves in one step; those and any later ones are replaced by uniform legal moves",
                    file=sys.stderr,
                    flush=True,
                )
            found = found.copy()
            found[bad] = uniform[bad]
        return found

    def legal_moves(self, moves: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Per row: every part of its move in range and allowed by ``legal`` (the parts' masks side by side)."""
        sizes = np.asarray(self.sizes)
        ok = ((moves >= 0) & (moves < sizes)).all(1)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        index = np.where(ok[:, None], moves, 0) + offsets
        return ok & np.take_along_axis(legal, index, axis=1).all(1)


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
    return ScriptedSeats(move, league.scripted_share, *args, name=league.scripted_opponent)
