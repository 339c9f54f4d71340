"""One sweep trial: an ordinary training run in ``SWEEP_DIR/trials/<n>`` that reports its learning
curve to Optuna and stops early when the pruner says so.

:func:`run_trial` runs in the sweep's process, in a worker process (``--parallel``) or in a Ray
task (``--ray-address``); it never raises for a failed run: it returns a :class:`TrialOutcome`.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any

from pufferbox.sweep.objective import Objective
from pufferbox.train.config import RunConfig

__all__ = ["TrialJob", "TrialOutcome", "run_trial", "REPORTS"]

REPORTS = 20  # learning-curve points each trial reports to the pruner (one per 1/20 of its budget)


def open_storage(url: str) -> Any:
    """An Optuna RDB storage; SQLite waits for its lock instead of failing under parallel trials."""
    import optuna

    kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
    return optuna.storages.RDBStorage(url, engine_kwargs=kwargs)


@dataclass
class TrialJob:
    """Everything a worker needs (picklable): the resolved config and where the study lives."""

    env: str
    config: RunConfig
    run_dir: str
    objective: Objective
    storage: str
    study_name: str
    trial_id: int
    prune: bool
    distribution: str | None = None  # the plugin whose ``env`` the trial trains (another may offer the name)
    callbacks: list[Any] = field(default_factory=list)


@dataclass
class TrialOutcome:
    state: str  # "complete", "pruned", "fail", "interrupted" (Ctrl-C) or "storage" (disk full: the sweep stops)
    values: list[float] | None = None
    error: str | None = None
    global_step: int = 0
    wall_time: float = 0.0
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")  # where it trained
    stop_signal: int | None = None  # "interrupted": the signal that stopped it (SIGINT, SIGTERM)


class Reporter:
    """Training callback: reports the objective-so-far at REPORTS evenly spaced steps; prunes."""

    def __init__(self, trial: Any, objective: Objective, budget: int, prune: bool):
        self.trial, self.objective, self.budget, self.prune = trial, objective, budget, prune
        self.every = max(1, budget // REPORTS)
        self.next_point = 1
        self.solved_at: int | None = None

    def __call__(self, metrics: dict) -> None:
        import optuna

        if metrics.get("solved") and self.solved_at is None:
            self.solved_at = metrics["global_step"]
        if self.objective.multi:  # Optuna cannot prune multi-objective trials
            return
        while metrics["global_step"] >= self.next_point * self.every:
            value = self.objective.intermediate(metrics, self.budget, self.solved_at)
            if value is not None:
                self.trial.report(value, self.next_point)
            self.next_point += 1
            if self.prune and value is not None and self.trial.should_prune():
                raise optuna.TrialPruned(f"pruned at step {metrics['global_step']}")

    def close(self) -> None:
        pass


def open_trial(job: TrialJob) -> Any:
    import optuna

    study = optuna.load_study(study_name=job.study_name, storage=open_storage(job.storage))
    return optuna.trial.Trial(study, job.trial_id)


def use_distribution(env: str, distribution: str | None) -> None:
    """Make ``distribution`` win ``env``'s name in this process (a worker, a Ray task), as ``--plugin`` does,
    where another plugin holds it here (the name's holder is left as it is)."""
    from pufferbox.registry import canonical, get_registry, prefer

    if distribution and canonical(get_registry().get(env).meta.distribution) != canonical(distribution):
        prefer(distribution)


def run_trial(job: TrialJob, trial: Any = None) -> TrialOutcome:
    """Train ``job.config`` with a :class:`Reporter`; ``trial`` is the live Optuna trial in-process."""
    import optuna

    from pufferbox.train.rundir import StorageError
    from pufferbox.train.runner import run

    trial = trial if trial is not None else open_trial(job)
    budget = job.config.train.total_steps
    reporter = Reporter(trial, job.objective, budget, job.prune)
    try:
        use_distribution(job.env, job.distribution)
        result = run(job.env, config=job.config, run_dir=job.run_dir, dashboard=False, callbacks=[reporter, *job.callbacks])
    except optuna.TrialPruned as exc:
        return TrialOutcome("pruned", error=str(exc))
    except StorageError as exc:  # not the settings' fault: the trial runs again once there is room
        return TrialOutcome("storage", error=str(exc).splitlines()[0])
    except Exception as exc:  # a trial's failure is the sweep's data, not its end
        return TrialOutcome("fail", error=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    if result.interrupted:
        return TrialOutcome(
            "interrupted", global_step=result.global_step, wall_time=result.wall_time, stop_signal=result.stop_signal
        )
    summary = {
        "episode_return": result.episode_return,
        "solved_at_step": result.solved_at_step,
        "global_step": result.global_step,
        "wall_time": result.wall_time,
    }
    return TrialOutcome(
        "complete", job.objective.values(summary, budget), global_step=result.global_step, wall_time=result.wall_time
    )
