"""Training: PPO over pufferbox vector envs, policies, config, checkpoints, eval and plots.

Entry points for the CLI, tests and tournaments:

* :func:`run` — a whole run with its run directory (``pufferbox train``);
* :class:`Trainer` — ``train_steps(n)``, ``save_checkpoint()``, ``load_checkpoint(path)``; it wires a
  collector (:class:`HostCollector`/:class:`DeviceCollector`, the env<->policy loop) to a
  :class:`Learner` (the PPO update);
* :func:`evaluate` — mean/std return of a checkpoint (``pufferbox eval``);
* :func:`plot_runs` — learning curves (``pufferbox plot``).

Names are imported on first use, so ``import pufferbox.train.config`` (which every CLI
command does for its error types) does not pay for importing torch.

Example:
    >>> import pufferbox.train as pt
    >>> result = pt.run("cartpole", overrides=["train.total_steps=8192"], run_dir="/tmp/pb")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

EXPORTS = {
    "Agent": "pufferbox.train.policies",
    "CNNEncoder": "pufferbox.train.policies",
    "MLPEncoder": "pufferbox.train.policies",
    "ConfigError": "pufferbox.train.config",
    "PolicyConfig": "pufferbox.train.config",
    "TrainConfig": "pufferbox.train.config",
    "VecConfig": "pufferbox.train.config",
    "RunConfig": "pufferbox.train.config",
    "resolve_config": "pufferbox.train.config",
    "resolve_run_config": "pufferbox.train.config",
    "Collected": "pufferbox.train.collector",
    "DeviceCollector": "pufferbox.train.collector",
    "HostCollector": "pufferbox.train.collector",
    "Learner": "pufferbox.train.learner",
    "OverlapCollector": "pufferbox.train.overlap",
    "vtrace": "pufferbox.train.overlap",
    "Trainer": "pufferbox.train.trainer",
    "TrainResult": "pufferbox.train.trainer",
    "evaluate": "pufferbox.train.evaluate",
    "plot_runs": "pufferbox.train.plot",
    "run": "pufferbox.train.runner",
}

__all__ = sorted(EXPORTS)


def __getattr__(name: str) -> Any:
    if name in EXPORTS:
        return getattr(importlib.import_module(EXPORTS[name]), name)
    raise AttributeError(f"module 'pufferbox.train' has no attribute {name!r}")
