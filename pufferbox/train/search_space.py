"""PPO's tunable hyperparameters, with one set of bounds for sweeps and tournaments.

Each :class:`Knob` has the bounds no searched or perturbed value leaves, and two uses:

* a sweep searches :meth:`Knob.window` around the env's default (``spread`` times smaller to
  ``spread`` times larger, on the knob's own scale), inside the bounds, so trial 0 (the defaults)
  is inside the space (:mod:`pufferbox.sweep.space`);
* a tournament moves a value one :meth:`Knob.perturb` step (``tournament`` knobs only: the ones
  that decide how much PPO learns per env step), inside the same bounds
  (:mod:`pufferbox.tournament.generator`).

The bounds hold every first-party plugin's defaults with their sweep windows (a test checks it):
they exclude only settings PPO does not train with (a learning rate that only diverges, a
rollout shorter than a few steps), so the sweep's window and the tournament's selection decide
the rest.

Example:
    >>> KNOBS["train.learning_rate"].window(1e-3)
    {'low': 0.00025, 'high': 0.004, 'log': True}
    >>> KNOBS["train.num_steps"].window(128)
    {'choices': [64, 128, 256]}
    >>> KNOBS["train.ent_coef"].window(0.0)   # no entropy bonus: a linear range from zero
    {'low': 0.0, 'high': 0.01, 'log': False}
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["KNOBS", "PERTURB_FACTORS", "Knob", "tournament_knobs"]

PERTURB_FACTORS = (0.8, 1.25)


@dataclass(frozen=True)
class Knob:
    """One tunable hyperparameter: its bounds, how a sweep searches it and how a perturbation moves it.

    ``kind``: ``scale`` multiplies (continuous, e.g. a learning rate; a sweep searches it on a log
    scale if ``log``); ``horizon`` works on ``1 - value`` (discount and GAE's lambda: the horizon,
    not the value); ``pow2`` halves, keeps or doubles (integers whose useful values span octaves,
    swept as those three ``choices`` if ``choices``); ``step`` adds -1, 0 or +1 (small integers such
    as PPO epochs). A zero ``scale`` knob (no entropy bonus) is switched to ``low_nonzero``, and swept
    over ``[0, low_nonzero * spread]``.
    """

    low: float
    high: float
    kind: Literal["scale", "horizon", "pow2", "step"] = "scale"
    spread: float = 2.0
    log: bool = False
    choices: bool = False
    low_nonzero: float = 0.0
    tournament: bool = True

    @property
    def integer(self) -> bool:
        return self.kind in ("pow2", "step")

    def clamp(self, value: float) -> float:
        moved = min(self.high, max(self.low, value))
        return round(moved) if self.integer else float(moved)

    def window(self, default: float) -> dict[str, Any]:
        """The sweep's range around ``default`` (clamped into the bounds first), in ``[sweep.space]``'s form."""
        d, w = self.clamp(default), self.spread
        if self.integer:
            below, above = max(1, int(d // w)), int(d * w)
            if self.choices:
                return {"choices": sorted({self.clamp(below), d, self.clamp(above)})}
            return {"low": self.clamp(below), "high": self.clamp(above), "log": False}
        if self.kind == "horizon":
            gap = 1.0 - d
            low, high = 1.0 - gap * w, 1.0 - gap / w
        elif d == 0:  # a multiplicative range cannot leave zero: search [0, a small nonzero value] linearly
            return {"low": 0.0, "high": self.low_nonzero * w, "log": False}
        else:
            low, high = d / w, d * w
        return {"low": self.clamp(low), "high": self.clamp(high), "log": self.log}

    def perturb(self, value: float, rng: random.Random) -> float:
        """``value`` moved once by this knob's rule, inside the bounds."""
        if self.kind == "horizon":
            moved = 1.0 - (1.0 - value) * rng.choice(PERTURB_FACTORS)
        elif self.kind == "pow2":
            moved = value * rng.choice((0.5, 1, 2))
        elif self.kind == "step":
            moved = value + rng.choice((-1, 0, 1))
        elif value == 0:  # a multiplicative step cannot leave zero: switch the term on, or not
            moved = rng.choice((0.0, self.low_nonzero))
        else:
            moved = value * rng.choice(PERTURB_FACTORS)
        return self.clamp(moved)


# The knobs that decide PPO's sample efficiency. Bounds: see the module docstring; windows: how far
# from the env's default a sweep looks.
KNOBS: dict[str, Knob] = {
    "train.learning_rate": Knob(1e-5, 5e-2, spread=4, log=True),
    "train.ent_coef": Knob(0.0, 0.2, spread=10, log=True, low_nonzero=1e-3),
    "train.gamma": Knob(0.5, 0.99999, kind="horizon", spread=3, tournament=False),
    "train.gae_lambda": Knob(0.5, 0.999, kind="horizon", spread=2),
    "train.clip_coef": Knob(0.05, 0.5, spread=1.5),
    "train.vf_coef": Knob(0.05, 2.0, spread=2, tournament=False),
    "train.max_grad_norm": Knob(0.05, 20.0, spread=4, log=True, tournament=False),
    "train.update_epochs": Knob(1, 32, kind="step"),
    "train.num_minibatches": Knob(1, 1024, kind="pow2"),
    "train.num_steps": Knob(4, 4096, kind="pow2", choices=True),
}


def tournament_knobs() -> dict[str, Knob]:
    """The knobs a tournament perturbs (the sweep searches all of :data:`KNOBS`)."""
    return {name: knob for name, knob in KNOBS.items() if knob.tournament}
