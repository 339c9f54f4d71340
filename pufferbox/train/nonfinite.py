"""When training produces NaN/inf: the error a run stops with, and what it tells the user to try.

The learner skips an update whose rewards, values or losses are not finite (its ``nonfinite`` counts
them in a row); the trainer asks :func:`check_updates` after each update and :func:`check_weights`
before each checkpoint, and turns a collector's :class:`~pufferbox.train.collector.NonFiniteInput`
into an error naming the env, the update and the likely cause with :func:`input_error`.

Example:
    >>> check_updates(trainer)          # doctest: +SKIP
    >>> raise input_error(trainer, exc)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from pufferbox.train.config import ConfigError

if TYPE_CHECKING:
    from pufferbox.train.collector import NonFiniteInput
    from pufferbox.train.trainer import Trainer

__all__ = ["NonFiniteError", "check_updates", "check_weights", "input_error", "learned_nothing"]


class NonFiniteError(ConfigError):
    """Training produced NaN/inf (rewards, losses or weights); the message says where and what to try.
    ``learned_nothing``: no update of the run ever changed the model (a failed start: the runner removes
    the new run directory)."""

    def __init__(self, message: str, learned_nothing: bool = False):
        super().__init__(message)
        self.learned_nothing = learned_nothing


def learned_nothing(trainer: Trainer) -> bool:
    """Every update so far was skipped as non-finite (also true before the first update)."""
    return trainer.learner.nonfinite >= trainer.update


def weights_finite(trainer: Trainer) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in trainer.agent.parameters())


def check_updates(trainer: Trainer) -> None:
    """Stop the run once ``train.max_nonfinite_updates`` updates in a row were skipped as non-finite."""
    skipped = trainer.learner.nonfinite
    if skipped >= trainer.tc.max_nonfinite_updates:
        raise NonFiniteError(
            f"{trainer.spec.name}: {skipped} updates in a row had a reward, value or loss that is not "
            "finite (NaN/inf); the model was left unchanged by them: check the env's rewards, or lower "
            "train.learning_rate (or ent_coef, vf_coef)",
            learned_nothing=learned_nothing(trainer),
        )


def check_weights(trainer: Trainer) -> None:
    """Refuse to checkpoint weights that are not finite (the earlier checkpoints stay the last good ones)."""
    if not weights_finite(trainer):
        raise NonFiniteError(
            f"{trainer.spec.name}: no checkpoint written at update {trainer.update}: the model's "
            "weights are not finite (NaN/inf); earlier checkpoints are kept"
        )


def input_error(trainer: Trainer, exc: NonFiniteInput) -> NonFiniteError:
    """What a NaN/inf observation or logit means for this run, naming the env and the step."""
    advice = (
        "the env returned it: fix the env (run with --check-obs to name the field)"
        if "observation with" in str(exc)
        else "check the observations' scale or lower train.learning_rate"
        if weights_finite(trainer)
        else "the policy's weights are not finite: lower train.learning_rate"
    )
    return NonFiniteError(
        f"{trainer.spec.name}: {exc} during update {trainer.update + 1} (after step {trainer.global_step:,}); {advice}",
        learned_nothing=learned_nothing(trainer),
    )
