"""A Trainer reused between a tournament's slices: new settings and weights, the envs kept running.

A pod (:mod:`pufferbox.tournament.pod`) keeps its trainers (envs, rollout buffers) from slice to slice
and gives each slice the task's hyperparameters, its parent's weights (or fresh ones) and, for frozen
agent groups, the leaderboard's policies. These are the only ways it changes a trainer; they live here
rather than on the Trainer, which only trains.

Example:
    >>> set_hyperparameters(trainer, {"learning_rate": 1e-3})   # doctest: +SKIP
    >>> load_weights(trainer, None, seed=7)                      # doctest: +SKIP
    >>> restart_rollout(trainer)                                 # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pufferbox.train.config import ConfigError, TrainConfig

if TYPE_CHECKING:
    from pufferbox.train.trainer import Trainer

__all__ = ["set_hyperparameters", "load_weights", "use_opponent_pool", "restart_rollout"]


def set_hyperparameters(trainer: Trainer, train: TrainConfig | Mapping[str, Any]) -> None:
    """Apply ``[train]`` values to ``trainer``'s next updates (``num_steps`` sizes the rollout and
    ``overlap`` the collector: either needs a new Trainer)."""
    if isinstance(train, TrainConfig):
        train = dataclasses.asdict(train)
    if int(train.get("num_steps", trainer.num_steps)) != trainer.num_steps:
        raise ConfigError(
            f"train.num_steps: this trainer collects {trainer.num_steps}-step segments; "
            "build a new Trainer for another rollout length"
        )
    if bool(train.get("overlap", trainer.tc.overlap)) != trainer.tc.overlap:
        raise ConfigError(
            "train.overlap: this trainer's collector is built for "
            f"overlap={str(trainer.tc.overlap).lower()}; build a new Trainer to change it"
        )
    trainer.config = trainer.config.updated({"train": train}, "set_hyperparameters")
    trainer.learner.hp = trainer.config.train


def load_weights(trainer: Trainer, state: Mapping[str, Any] | None, seed: int = 0) -> None:
    """A checkpoint's model and optimizer moments, or (``state`` None) fresh ones drawn from ``seed``."""
    from pufferbox.train.assembly import fresh_policy

    if state is not None:
        return trainer.learner.load_weights(state)
    trainer.agent.load_state_dict(fresh_policy(trainer.spec, trainer.parts, seed).state_dict())
    trainer.learner.reset_optimizer()


def use_opponent_pool(trainer: Trainer, root: str | os.PathLike) -> None:
    """Fill the frozen agent groups (``[league] frozen``) from the snapshots under ``root`` instead of
    ``RUN_DIR/pool`` (a tournament's leaderboard policies), drawing one for each now."""
    if trainer.league is None or not trainer.league.learner.frozen:
        raise ConfigError("an opponent pool fills frozen agent groups: set [league] frozen for a grouped env")
    trainer.league.use_pool(root)


def restart_rollout(trainer: Trainer) -> int:
    """Drop the rollout and recurrent state, keep the envs running; returns the env steps that the
    actions still pending will take without being recorded."""
    return trainer.collector.restart()
