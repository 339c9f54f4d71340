"""``sweep()``: an Optuna study whose trials are pufferbox training runs.

The sweep directory holds ``sweep.toml`` (env, objective, search space, fixed settings),
``study.db`` (the embedded SQLite study, unless ``storage`` names another Optuna RDB URL)
and ``trials/<n>/`` (each trial's run directory). Re-running the same command continues the
study: trials a killed sweep left running are marked failed and queued again with the same
settings, and ``trials`` counts finished trials (complete, pruned or failed by an error).

Trial 0 is the env's defaults, so the best trial is never worse than them.

Example:
    >>> result = sweep("cartpole", trials=3, run_dir="/tmp/pb-sweep",
    ...                overrides=["train.total_steps=20000"])                      # doctest: +SKIP
    >>> result.best[0].params                                                     # doctest: +SKIP
    {'train.learning_rate': 0.0021, ...}
"""

from __future__ import annotations

import concurrent.futures as cf
import fcntl
import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pufferbox.registry import get_registry
from pufferbox.sweep.objective import Objective, parse_objective
from pufferbox.sweep.space import Param, fixed_values, flatten, resolve_space, space_to_toml
from pufferbox.sweep.trial import REPORTS, TrialJob, TrialOutcome, open_storage, run_trial
from pufferbox.train.config import ConfigError, RunConfig, dump_toml, load_toml, merge, parse_override, resolve_run_config
from pufferbox.train.rundir import disk_error

__all__ = ["sweep", "SweepResult", "SweepError", "open_storage", "load_sweep"]

PRUNERS = ("median", "hyperband", "none")


class SweepError(ConfigError):
    """A sweep cannot start as asked (bad input, a used or locked directory); one line says why."""


@dataclass
class SweepResult:
    study: Any
    run_dir: Path
    objective: Objective
    stop_signal: int | None = None  # the signal (SIGINT, SIGTERM) that stopped a trial, and so the sweep

    @property
    def best(self) -> list[Any]:
        """The best trial (single objective) or the Pareto front (multi)."""
        return list(self.study.best_trials)


def load_sweep(run_dir: str | Path) -> tuple[dict, Any]:
    """``(sweep.toml, study)`` of an existing sweep directory."""
    import optuna

    path = Path(run_dir) / "sweep.toml"
    if not path.is_file():
        raise SweepError(f"{run_dir}: not a sweep directory (no sweep.toml); run `pufferbox sweep ENV --run-dir DIR` first")
    meta = load_toml(path)
    return meta, optuna.load_study(study_name=meta["study_name"], storage=open_storage(meta["storage"]))


def base_config(spec: Any, config_file: str | Path | None, overrides: list[str]) -> tuple[RunConfig, dict]:
    """The config every trial starts from, and the ``[sweep.space]`` table of ``config_file``."""
    layers = resolve_run_config(spec.training.config).to_dict()
    table: dict = {}
    if config_file is not None:
        data = load_toml(config_file)
        table = data.pop("sweep", {}).get("space", {})
        layers = merge(layers, data, str(config_file))
    config = resolve_run_config(layers, overrides=overrides)
    for name, value in fixed_values(table).items():
        config = config.with_setting(name, value, f"sweep.space.{name}")
    return config, table


def make_pruner(name: str, prune_startup: int) -> Any:
    import optuna

    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=prune_startup, n_warmup_steps=REPORTS // 4)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=2, max_resource=REPORTS)
    return optuna.pruners.NopPruner()


def trial_config(config: RunConfig, params: dict[str, Any]) -> RunConfig:
    """``config`` with a trial's suggested ``{"section.key": value}`` applied (checked)."""
    for name, value in params.items():
        config = config.with_setting(name, value, f"trial setting {name}")
    return config


def check_args(trials: int, parallel: int, pruner: str) -> None:
    if trials < 1:
        raise SweepError(f"--trials {trials}: must be at least 1")
    if parallel < 1:
        raise SweepError(f"--parallel {parallel}: must be at least 1")
    if pruner not in PRUNERS:
        raise SweepError(f"--pruner {pruner}: choose one of {', '.join(PRUNERS)}")


class DirectoryLock:
    """One sweep process per directory (a second one would double-count the embedded study)."""

    def __init__(self, run_dir: Path):
        self.fh = open(run_dir / "sweep.lock", "w")  # noqa: SIM115  (held while the sweep runs: the lock)
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.close()
            raise SweepError(f"{run_dir}: another sweep is running in this directory") from None

    def release(self) -> None:
        self.fh.close()


def sweep(
    env: str,
    trials: int,
    run_dir: str | Path,
    *,
    parallel: int = 1,
    ray_address: str | None = None,
    overrides: list[str] | None = None,
    config_file: str | Path | None = None,
    objective: str | None = None,
    storage: str | None = None,
    study_name: str | None = None,
    pruner: str = "median",
    prune_startup: int = 2,
    seed: int = 0,
    plugin: str | None = None,
    callbacks: Callable[[str, str], list[Any]] | None = None,
    log: Callable[[str], None] = print,
) -> SweepResult:
    """Run (or continue) a sweep of ``trials`` finished trials; see the module docstring.

    ``plugin`` (distribution or entry-point name): take ``env`` from that plugin where two offer the
    name; recorded in ``sweep.toml``, so a continued sweep trains the same plugin's env without it.
    ``callbacks(trial_dir, trial_name)`` gives extra training callbacks per trial (e.g. a W&B tracker).
    """

    check_args(trials, parallel, pruner)
    if ray_address not in (None, "local") and storage is None:
        log(f"warning: {REMOTE_SQLITE}")  # RDB storage: the trials' machines write it themselves
    run_dir = Path(run_dir)
    spec = sweep_env(env, plugin, run_dir)
    overrides = list(overrides or [])
    config, table = base_config(spec, config_file, overrides)
    obj = parse_objective(objective, spec.training.solved_return, spec.name)
    fixed = {parse_name(text) for text in overrides} | set(fixed_values(table))
    space = resolve_space(config, table, fixed)
    if parallel > 1 and "train.torch_threads" not in fixed and config.train.torch_threads == 0:
        # K trials at once share the cores instead of each taking up to 4 threads
        config = config.updated({"train": {"torch_threads": max(1, (os.cpu_count() or 1) // parallel)}}, "--parallel")
    # with a cost objective the budget itself is searched, up to the configured total_steps
    if obj.multi and "train.total_steps" not in set(space) | set(flatten(table)):
        budget = config.train.total_steps
        space["train.total_steps"] = Param("train.total_steps", max(1, budget // 8), budget, log=True, is_int=True)
    meta = {
        "env": spec.name,
        "distribution": spec.meta.distribution,
        "objective": list(obj.names),
        "storage": storage or f"sqlite:///{run_dir.resolve()}/study.db",
        "study_name": study_name or run_dir.resolve().name,
        "overrides": overrides,
        "space": space_to_toml(space),
    }
    check_resume(run_dir, meta)
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = DirectoryLock(run_dir)
    try:
        dump_toml(meta, run_dir / "sweep.toml")
        study = open_study(meta, obj, make_pruner(pruner, prune_startup), seed, parallel)
        if not study.trials:
            study.enqueue_trial({n: v for n, v in defaults_of(config, space).items()})
        requeue_interrupted(study, embedded=storage is None, log=log)
        finished = sum(counted(t) for t in study.get_trials(deepcopy=False))
        log(f"sweep directory: {run_dir} ({finished} of {trials} trials finished)")
        job = {key: meta[key] for key in ("env", "distribution", "storage", "study_name")}
        job.update(objective=obj, prune=pruner != "none" and not obj.multi)
        with make_executor(parallel, ray_address) as submit:
            stop_signal = drive(study, trials, parallel, submit, space, config, run_dir, job, callbacks, log)
        return SweepResult(study, run_dir, obj, stop_signal)
    except Exception as exc:
        fault = storage_fault(exc, meta["storage"], run_dir)
        if fault is None:
            raise
        raise fault from None
    finally:
        lock.release()


REMOTE_SQLITE = (
    "trials on other machines cannot reach the sweep directory's SQLite study; pass --storage with an RDB URL they can reach"
)
RETRY = "free some space (or fix the storage), then run the same command again to continue the sweep"


def optuna_storage_errors() -> tuple[type[BaseException], ...]:
    """What a study on full or broken storage raises: Optuna's wrapper, or SQLAlchemy/SQLite's own error
    where Optuna does not wrap it (creating the storage)."""
    import sqlite3

    import optuna
    import sqlalchemy.exc

    return (optuna.exceptions.StorageInternalError, sqlalchemy.exc.OperationalError, sqlite3.OperationalError)


def storage_fault(exc: Exception, storage: str, run_dir: Path) -> SweepError | None:
    """One line for a study or sweep directory on full or broken storage (SQLite on a full disk raises from
    deep in Optuna); None for any other error."""
    if isinstance(exc, optuna_storage_errors()):
        return SweepError(f"{storage}: the study could not be written ({root_cause(exc)}); " + RETRY)
    error = disk_error(exc, run_dir) if isinstance(exc, OSError) else None  # sweep.toml, a trial directory
    return None if error is None else SweepError(f"{str(error).split('; ')[0]}; " + RETRY)


def root_cause(exc: BaseException) -> str:
    """The innermost cause's first line (``database or disk is full``), without SQLAlchemy's decorations."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def open_study(meta: dict[str, Any], obj: Any, pruner: Any, seed: int, parallel: int) -> Any:
    """The Optuna study named in ``meta`` (created or loaded) with a TPE sampler seeded for where it stands."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        storage=open_storage(meta["storage"]),
        study_name=meta["study_name"],
        directions=obj.directions,
        pruner=pruner,
        load_if_exists=True,
    )
    # seeded past the trials so far: a resumed sweep must not replay the first run's random draws;
    # constant_liar keeps K trials sampled at once from landing on the same point
    study.sampler = optuna.samplers.TPESampler(seed=seed + len(study.trials), multivariate=True, constant_liar=parallel > 1)
    return study


def fmt_value(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 and abs(v) != float("inf") else f"{v:.4g}"


def parse_name(text: str) -> str:
    ((section, values),) = parse_override(text).items()
    return f"{section}.{next(iter(values))}"


def defaults_of(config: RunConfig, space: dict[str, Param]) -> dict:
    """The config's own values of the searched settings (trial 0), those inside their range."""
    out = {}
    for name, param in space.items():
        value = config.setting(name)
        if value is not None and param.contains(value):
            out[name] = value
    return out


def sweep_env(env: str, plugin: str | None, run_dir: Path) -> Any:
    """The env a sweep trains: ``plugin``'s offer of ``env``, else (a continued sweep) the plugin its
    ``sweep.toml`` recorded, else the registry's holder of the name."""
    path = run_dir / "sweep.toml"
    recorded = load_toml(path).get("distribution") if plugin is None and path.is_file() else None
    chosen = plugin or recorded
    return get_registry().get(env, plugin=chosen) if chosen else get_registry().get(env)


def check_resume(run_dir: Path, meta: dict) -> None:
    path = run_dir / "sweep.toml"
    if not path.is_file():
        if run_dir.is_dir() and any(p.name != "sweep.lock" for p in run_dir.iterdir()):
            raise SweepError(f"{run_dir}: directory is not empty and holds no sweep; pick a new --run-dir")
        return
    old = load_toml(path)
    for key in ("env", "distribution", "objective", "storage", "study_name"):
        if key == "distribution" and key not in old:  # a sweep from before the record: any holder of the name
            continue
        if old.get(key) != meta[key]:
            raise SweepError(
                f"{run_dir}: this sweep has {key} {old.get(key)!r}, not {meta[key]!r}; "
                f"use the same settings to continue it or a new --run-dir"
            )
    if "overrides" in old and sorted(old["overrides"]) != sorted(meta["overrides"]):  # one study, one set of fixed settings
        given = " ".join(f"--set {text}" for text in old["overrides"]) or "no --set"
        raise SweepError(
            f"{run_dir}: this sweep fixes {given}, not {' '.join(meta['overrides']) or 'none'} (its trials would mix "
            f"settings); continue it with {given}, or start a new --run-dir"
        )


def counted(trial: Any) -> bool:
    """Finished trials count toward ``trials``; ones a killed sweep left behind do not."""
    import optuna

    S = optuna.trial.TrialState
    return trial.state in (S.COMPLETE, S.PRUNED) or (trial.state == S.FAIL and "error" in trial.user_attrs)


def requeue_interrupted(study: Any, embedded: bool, log: Callable[[str], None]) -> None:
    """Mark trials a killed sweep left RUNNING as failed and queue their settings again.

    Only for the embedded study, which the directory lock gives to this process alone; on a
    shared RDB other machines' trials are running for real.
    """
    import optuna

    if not embedded:
        return
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        study.enqueue_trial(t.params)
        log(f"trial {t.number} was interrupted; its settings are queued again")


def drive(
    study: Any,
    trials: int,
    parallel: int,
    submit: Callable,
    space: dict[str, Param],
    config: RunConfig,
    run_dir: Path,
    job: dict,
    callbacks: Callable | None,
    log: Callable[[str], None],
) -> int | None:
    """Ask for trials while fewer than ``trials`` are finished or running; tell each outcome. A trial cut
    short by its storage (a full disk) stops the sweep: :class:`SweepError` once the others are told.
    Returns the signal that interrupted a trial (the sweep stops after the trials in flight), or None."""
    import optuna

    pending: dict[cf.Future, Any] = {}
    stopping, stopped, stop_signal = False, None, None
    while True:
        done = sum(counted(t) for t in study.get_trials(deepcopy=False))
        while not stopping and len(pending) < parallel and done + len(pending) < trials:
            trial = study.ask()
            params = {name: param.suggest(trial) for name, param in space.items()}
            trial_dir = run_dir / "trials" / str(trial.number)
            trial.set_user_attr("run_dir", str(trial_dir))
            extra = callbacks(str(trial_dir), f"{study.study_name}-trial-{trial.number}") if callbacks else []
            try:
                cfg = trial_config(config, params)
            except ConfigError as exc:
                trial.set_user_attr("error", str(exc))
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                log(f"trial {trial.number}: fail ({exc})")
                continue
            spec = TrialJob(config=cfg, run_dir=str(trial_dir), trial_id=trial._trial_id, callbacks=extra, **job)
            pending[submit(spec, trial)] = trial
        if not pending and stopped:
            raise SweepError(f"{stopped}; the sweep stopped: " + RETRY)
        if not pending:
            return stop_signal
        finished, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
        for future in finished:
            trial = pending.pop(future)
            outcome = outcome_of(future)
            tell(study, trial, outcome, log)
            stopping = stopping or outcome.state in ("interrupted", "storage")
            if outcome.state == "storage":
                stopped = f"trial {trial.number}: {(outcome.error or '').split('; ')[0]}"
            stop_signal = stop_signal or outcome.stop_signal


def outcome_of(future: cf.Future) -> TrialOutcome:
    try:
        return future.result()
    except Exception as exc:  # the worker itself died (killed, out of memory, Ray node lost)
        return TrialOutcome("fail", error=f"worker died: {type(exc).__name__}: {exc}".splitlines()[0])


def tell(study: Any, trial: Any, outcome: TrialOutcome, log: Callable[[str], None]) -> None:
    import optuna

    S = optuna.trial.TrialState
    trial.set_user_attr("global_step", outcome.global_step)
    trial.set_user_attr("wall_time", outcome.wall_time)
    trial.set_user_attr("worker", outcome.worker)
    if outcome.state == "complete" and outcome.values is not None:
        study.tell(trial, outcome.values)
        values = ", ".join(fmt_value(v) for v in outcome.values)
        log(f"trial {trial.number}: complete, {'/'.join(study.metric_names or []) or 'value'} {values}")
    elif outcome.state == "interrupted":  # Ctrl-C: not counted; the same settings run first next time
        study.tell(trial, state=S.FAIL)
        study.enqueue_trial(trial.params)
        log(f"trial {trial.number}: interrupted; run the same command again to continue the sweep")
    elif outcome.state == "storage":  # the disk, not the settings: not counted, the same settings run first next time
        study.tell(trial, state=S.FAIL)
        study.enqueue_trial(trial.params)
        log(f"trial {trial.number}: stopped by its storage ({outcome.error})")
    elif outcome.state == "pruned":
        study.tell(trial, state=S.PRUNED)
        log(f"trial {trial.number}: pruned ({outcome.error})")
    else:
        trial.set_user_attr("error", outcome.error or "unknown error")
        study.tell(trial, state=S.FAIL)
        log(f"trial {trial.number}: fail ({outcome.error})")


def die_with_parent() -> None:
    """A worker of a killed sweep stops too (Linux), instead of training on for a study nobody drives."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: orphaned workers finish their trial, then exit
        pass


class make_executor:
    """``submit(job, trial) -> Future``: in this process, in worker processes, or as Ray tasks."""

    def __init__(self, parallel: int, ray_address: str | None):
        self.parallel, self.ray_address = parallel, ray_address
        self.pool: cf.ProcessPoolExecutor | None = None

    def __enter__(self) -> Callable[[TrialJob, Any], cf.Future]:
        if self.ray_address is not None:
            from pufferbox.vector.ray import ensure_ray

            ray = ensure_ray(None if self.ray_address == "local" else self.ray_address)
            remote = ray.remote(num_cpus=1)(run_trial)
            return lambda job, trial: remote.remote(job).future()
        if self.parallel > 1:
            # spawn: a forked child would inherit torch's threads and the driver's SQLite connections
            pool = self.pool = cf.ProcessPoolExecutor(
                self.parallel,
                mp_context=multiprocessing.get_context("spawn"),
                max_tasks_per_child=1,
                initializer=die_with_parent,
            )
            return lambda job, trial: pool.submit(run_trial, job)
        return self.inline

    @staticmethod
    def inline(job: TrialJob, trial: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        future.set_result(run_trial(job, trial))
        return future

    def __exit__(self, *exc: Any) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
