"""What a training checkpoint holds, taken from a :class:`~pufferbox.train.trainer.Trainer` and put back.

One place for the format (:data:`CHECKPOINT_FORMAT`): the env's name, the layered config as TOML, the
learner's state (the policy or each group's, optimizer moments), the counters (``global_step``,
``update``, ``wall_time``), the RNG states (torch's, the minibatch shuffle generator's, CUDA's), the
scoreboard (recent returns, when it was solved) and the running observation/reward statistics when
the run normalizes. Files are written and read by :mod:`pufferbox.train.checkpoint`.

A :class:`Rollback` is the smaller record a trainer keeps of each update's start, so an update
dropped mid-rollout (:class:`~pufferbox.train.trainer.UpdateAbandoned`) can be put back.

Example:
    >>> state = take(trainer)                       # doctest: +SKIP
    >>> put(trainer, state, "ckpt-00000003.pt")     # doctest: +SKIP
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from typing import Any

import tomli_w
import torch

from pufferbox.train.config import ConfigError

__all__ = ["CHECKPOINT_FORMAT", "Rollback", "take", "put"]

CHECKPOINT_FORMAT = 1


def take(trainer: Any) -> dict[str, Any]:
    """The trainer's state as a checkpoint dict (plain tensors, numbers and strings)."""
    return {
        "format": CHECKPOINT_FORMAT,
        "env": trainer.spec.name,
        "distribution": trainer.spec.meta.distribution,  # whose env: another plugin may offer the same name
        "config": tomli_w.dumps(trainer.config.to_dict()),
        **trainer.learner.state_dict(),
        "global_step": trainer.global_step,
        "update": trainer.update,
        "wall_time": trainer.wall_time(),
        "torch_rng": torch.get_rng_state(),
        "shuffle_rng": trainer.learner.generator.get_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        **trainer.scores.state_dict(),
        **({"normalizer": trainer.normalizer.state_dict()} if trainer.normalizer is not None else {}),
    }


def put(trainer: Any, state: dict[str, Any], path: str | os.PathLike) -> None:
    """Restore ``state`` (read from ``path``) into ``trainer``; a checkpoint of another env, or with
    agent groups where the run has one policy (or the reverse), is a one-line :class:`ConfigError`."""
    if state.get("env") != trainer.spec.name:
        raise ConfigError(f"checkpoint {path} is for env {state.get('env')!r}, not {trainer.spec.name!r}")
    if ("groups" in state) != (trainer.league is not None):
        raise ConfigError(
            f"checkpoint {path} holds {'agent groups' if 'groups' in state else 'one shared policy'}"
            f", this run {'agent groups' if trainer.league is not None else 'one shared policy'}: "
            "resume with the run's own [groups]"
        )
    trainer.learner.load_weights(state)
    trainer.global_step, trainer.update = int(state["global_step"]), int(state["update"])
    trainer.elapsed_before, trainer.start_time = float(state["wall_time"]), time.perf_counter()
    torch.set_rng_state(state["torch_rng"].cpu())
    trainer.learner.restore_shuffle(state["shuffle_rng"])
    if state["cuda_rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    trainer.scores.load_state_dict(state)
    if trainer.normalizer is not None and "normalizer" in state:
        trainer.normalizer.load_state_dict(state["normalizer"])


@dataclass(frozen=True)
class Rollback:
    """What a rollout changes besides the envs, as the last completed update left it: torch's RNG
    state, the normalizer's statistics (when the run normalizes) and, with data-parallel learners,
    rank 0's learner state (the update's first minibatch steps may be taken when another learner is lost).
    The weights, optimizer and counters of a single learner change only after a rollout."""

    torch_rng: torch.Tensor
    normalizer: dict[str, Any] | None = None
    learner: dict[str, Any] | None = None

    @classmethod
    def of(cls, trainer: Any) -> Rollback:
        team = trainer.team
        return cls(
            torch_rng=torch.get_rng_state(),
            normalizer=None if trainer.normalizer is None else trainer.normalizer.state_dict(),  # a copy
            learner=copy.deepcopy(trainer.learner.state_dict()) if team.size > 1 and team.rank == 0 else None,
        )

    def restore(self, trainer: Any) -> None:
        if self.learner is not None:
            trainer.learner.load_weights(self.learner)
        torch.set_rng_state(self.torch_rng)
        if self.normalizer is not None:
            trainer.normalizer.load_state_dict(self.normalizer)
