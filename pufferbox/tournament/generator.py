"""The tournament's generator: seeds a new pod from the leaderboard.

Exploit, then explore (population-based training): copy a strong agent from the
board's top half (weights and hyperparameters), then multiply each tunable
hyperparameter by a factor drawn from ``PERTURB_FACTORS``. An empty board yields a
fresh agent with the base hyperparameters, perturbed the same way so that the first
pods differ.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from pufferbox.tournament.leaderboard import Entry, Leaderboard

# Config keys ("section.key") that pods perturb, and their clamps.
TUNABLE: dict[str, tuple[float, float]] = {
    "train.learning_rate": (1e-5, 1e-1),
    "train.ent_coef": (0.0, 0.1),
    "train.clip_coef": (0.05, 0.5),
    "train.gae_lambda": (0.8, 0.999),
}
PERTURB_FACTORS = (0.8, 1.25)


@dataclass
class PodTask:
    """What a pod trains next: start weights (a checkpoint, or None) and hyperparameters."""

    pod: int
    hyperparams: dict
    parent: int | None = None
    parent_checkpoint: bytes | None = None  # the file's bytes: pods may run on nodes without the run dir
    parent_steps: int = 0
    generation: int = 0
    seed: int = 0
    meta: dict = field(default_factory=dict)


def perturb(hyperparams: dict, rng: random.Random) -> dict:
    out = dict(hyperparams)
    for key, (low, high) in TUNABLE.items():
        if key in out and isinstance(out[key], (int, float)) and not isinstance(out[key], bool):
            value = out[key] * rng.choice(PERTURB_FACTORS)
            if key == "train.gae_lambda":  # perturb 1-lambda, the horizon, rather than lambda
                value = 1.0 - (1.0 - out[key]) * rng.choice(PERTURB_FACTORS)
            out[key] = float(min(high, max(low, value)))
    return out


def propose(board: Leaderboard, base_hyperparams: dict, pod: int, rng: random.Random) -> PodTask:
    """The next pod's task: a perturbed copy of a top-half agent, or a fresh perturbed agent."""
    top = board.entries()
    seed = rng.randrange(2**31)
    if not top:
        return PodTask(pod=pod, hyperparams=perturb(base_hyperparams, rng) if pod else dict(base_hyperparams),
                       seed=seed)
    parent: Entry = rng.choice(top[: max(1, math.ceil(len(top) / 2))])
    with open(parent.checkpoint, "rb") as f:
        weights = f.read()
    return PodTask(pod=pod, hyperparams=perturb(parent.hyperparams, rng), parent=parent.id,
                   parent_checkpoint=weights, parent_steps=parent.steps,
                   generation=parent.generation + 1, seed=seed)
