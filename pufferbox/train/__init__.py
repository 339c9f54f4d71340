"""Training: PPO over pufferbox vector envs, policies, config, checkpoints, eval and plots.

Entry points for the CLI, tests and tournaments:

* :func:`run` — a whole run with its run directory (``pufferbox train``);
* :class:`Trainer` — ``train_steps(n)``, ``save_checkpoint()``, ``load_checkpoint(path)``;
* :func:`evaluate` — mean/std return of a checkpoint (``pufferbox eval``);
* :func:`plot_runs` — learning curves (``pufferbox plot``).

Example:
    >>> import pufferbox.train as pt
    >>> result = pt.run("cartpole", overrides=["train.total_steps=8192"], run_dir="/tmp/pb")  # doctest: +SKIP
"""

from pufferbox.train.config import ConfigError, resolve_config
from pufferbox.train.evaluate import evaluate
from pufferbox.train.plot import plot_runs
from pufferbox.train.policies import Agent, CNNEncoder, MLPEncoder
from pufferbox.train.ppo import Trainer, TrainResult
from pufferbox.train.runner import run

__all__ = ["Agent", "CNNEncoder", "ConfigError", "MLPEncoder", "TrainResult", "Trainer", "evaluate",
           "plot_runs", "resolve_config", "run"]
