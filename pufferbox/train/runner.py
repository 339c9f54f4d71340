"""``run()``: a whole training run with its run directory, writers, Ctrl-C handling and resume.

The run directory holds ``config.toml`` (the resolved config), ``metrics.jsonl``,
TensorBoard event files under ``tb/`` and ``checkpoints/ckpt-<update>.pt``.

Example:
    >>> result = run("cartpole", overrides=["train.total_steps=4096"], run_dir="/tmp/pb-run")  # doctest: +SKIP
    >>> result.checkpoint                                                                    # doctest: +SKIP
    '/tmp/pb-run/checkpoints/ckpt-00000004.pt'
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from pufferbox.envargs import check_env_kwargs
from pufferbox.registry import get_registry
from pufferbox.train.assembly import refuse_learners
from pufferbox.train.checkpoint import (
    CheckpointError,
    check_encoder_is_trusted,
    check_scripted_opponent_is_trusted,
    latest_checkpoint,
    latest_finite_checkpoint,
    no_usable_checkpoint,
    remove_stale_temp_files,
)
from pufferbox.train.config import (
    RESUMED,
    ConfigError,
    Layer,
    Layers,
    RunConfig,
    dump_toml,
    flag_layers,
    load_toml,
    merge,
    without_machine_keys,
)
from pufferbox.train.dashboard import JsonlWriter, TensorBoardWriter, terminal_writer
from pufferbox.train.distributed import LearnerLost, Solo, Team, first_line, free_address, join_as_rank_zero, join_group
from pufferbox.train.hardware import pick_device
from pufferbox.train.plan import PROFILES, Plan, plan_record, planned_config
from pufferbox.train.rundir import (
    RunDirGuard,
    claim_run_dir,
    discard_empty_run_dir,
    discard_failed_start,
    disk_error,
    new_run_dir,
    trim_metrics,
)
from pufferbox.train.trainer import Trainer, TrainResult, UpdateAbandoned

__all__ = ["run", "default_run_dir", "start_team", "learner_process"]


def default_run_dir(env: str, root: str | Path = "runs") -> Path:
    """A fresh ``root/ENV-TIMESTAMP[-N]``, created now (so no other run can take the same name)."""
    return new_run_dir(env, root)


def resolve_resume(
    env: str | None, resume: str | Path, overrides: list[str] | None, flags: Mapping[str, Any] | None
) -> tuple[str, RunConfig, Path, dict[str, Any]]:
    """The env, config, checkpoint and ``[run]`` record of ``--resume RUN_DIR`` plus ``overrides``/``flags``
    (nothing written): one stack, the run's ``config.toml`` (read once) beneath the ``--set`` and flag layers."""
    run_dir = Path(resume)
    if not (run_dir / "config.toml").is_file() or latest_checkpoint(run_dir / "checkpoints") is None:
        raise CheckpointError(f"{run_dir}: not a run directory with config.toml and checkpoints/ckpt-*.pt")
    checkpoint = latest_finite_checkpoint(run_dir / "checkpoints")  # skips (and names) a truncated or NaN newest one
    if checkpoint is None:
        raise no_usable_checkpoint(run_dir / "checkpoints")
    base = load_toml(run_dir / "config.toml")
    recorded = base.pop("run", {})
    env_name = recorded.get("env")
    if env is not None and env_name is not None and env != env_name:
        raise ConfigError(f"--resume {run_dir}: that run trained {env_name!r}, not {env!r}")
    source = str(run_dir / "config.toml")
    values = merge({}, without_machine_keys(base), source)  # the Ray address: this command's, not the record's
    resumed = Layer(source, values, origins=resumed_origins(base, recorded.get("sources")))
    layers = Layers.build(resumed, overrides=overrides)  # the recorded run, then each --set in order
    config = layers.resolve()
    given = Layers(tuple(layer for layer in layers.layers if layer.by_user)).resolve()  # the --set values alone
    explicit, explicit_opponent = given.policy.encoder, given.league.scripted_opponent  # built-ins where not set
    check_encoder_is_trusted(config.policy.encoder, source, explicit=explicit)
    check_scripted_opponent_is_trusted(config.league.scripted_opponent, source, explicit=explicit_opponent)
    return env or env_name, layers.above(*flag_layers(flags)).resolve(), checkpoint, recorded


def resumed_origins(recorded: Mapping[str, Any], sources: Mapping[str, str] | None) -> dict[str, str]:
    """Provenance of a resumed run's recorded values: ``config.toml of the resumed run (plan)`` for each key
    its ``[run.sources]`` names (an older config.toml without that table: each key not at its built-in)."""
    if sources is None:
        sources = dict.fromkeys(RunConfig.from_dict(recorded).provenance(""), "")
    named = {key: f"{RESUMED} ({origin})" if origin else RESUMED for key, origin in sources.items()}
    return {key: sources[key] if sources[key].startswith(RESUMED) else origin for key, origin in named.items()}


class Writers:
    """The metric writers, as one callback; filled only once the run has been validated."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def __call__(self, metrics: dict) -> None:
        for writer in self.items:
            writer(metrics)

    def close(self) -> None:
        for writer in self.items:
            try:
                writer.close()
            except OSError:  # a full disk fails the final flush too; the first error is the one reported
                pass


def run(
    env: str | None = None,
    config: RunConfig | Mapping[str, Any] | None = None,
    *,
    config_file: str | Path | None = None,
    overrides: list[str] | None = None,
    flags: Mapping[str, Any] | None = None,
    run_dir: str | Path | None = None,
    resume: str | Path | None = None,
    stop_after: int | None = None,
    dashboard: bool = True,
    tensorboard: bool = True,
    callbacks: list[Any] | None = None,
    profile: str = "auto",
) -> TrainResult:
    """Train ``env``; returns a :class:`TrainResult`. Either ``config`` (a :class:`RunConfig`, or its
    dict of sections) or the layers (``config_file``, ``overrides``, ``flags``: see ``resolve_run_config``).

    ``run_dir`` must not hold a run already (:class:`RunDirError`); it is locked while training.
    ``resume`` is a run directory: its ``config.toml`` is the base (``overrides``/``flags`` may
    extend it, e.g. ``total_steps``) and training continues from its newest checkpoint in it.
    Everything (config, policy shape, worker counts) is validated before anything is written, so a
    failed resume leaves the run directory as it was. ``stop_after`` stops after that many steps of
    this call (for tests and tournaments). SIGINT and SIGTERM checkpoint after the current update
    (or, when its rollout is stuck past the grace, the last completed one: :class:`stop_on_signals`).
    ``callbacks`` get each update's metrics after the writers (trackers, sweep reporters); each
    has a ``close()``, called when the run ends. ``profile``: ``"auto"`` (the env's GPU profile when the
    run trains on a CUDA device), ``"gpu"`` or ``"cpu"`` (see :func:`~pufferbox.train.plan.choose_plan`).
    """
    if resume is not None:
        run_dir = Path(resume)
    lock = None
    try:
        if run_dir is not None:  # before reading anything: a live trainer may be writing it
            lock = claim_run_dir(run_dir, resume=resume is not None)
        return run_locked(
            env,
            config,
            config_file=config_file,
            overrides=overrides,
            flags=flags,
            run_dir=run_dir,
            resume=resume,
            stop_after=stop_after,
            dashboard=dashboard,
            tensorboard=tensorboard,
            callbacks=callbacks,
            profile=profile,
        )
    except BaseException as exc:
        if lock is not None and lock.fresh and run_dir is not None:
            lock.release()
            lock = None
            if getattr(exc, "learned_nothing", False):  # e.g. settings that made the first updates non-finite
                discard_failed_start(Path(run_dir))
            discard_empty_run_dir(Path(run_dir))  # a failed start leaves no empty run directory behind
        error = disk_error(exc, run_dir or ".") if isinstance(exc, OSError) else None
        if error is None:
            raise
        raise error from None
    finally:
        if lock is not None:
            lock.release()


def resolve_run(
    env: str | None,
    config: RunConfig | Mapping[str, Any] | None,
    config_file: str | Path | None,
    overrides: list[str] | None,
    flags: Mapping[str, Any] | None,
    resume: str | Path | None,
    profile: str,
) -> tuple[str, RunConfig, Path | None, str | None, Plan | dict | None]:
    """``(env, run config, checkpoint to resume, distribution that trained it, plan or its record)``: a
    resumed run's recorded settings, else the plugin's defaults planned for this machine (train/plan.py),
    else ``config`` as given."""
    if profile not in PROFILES:
        raise ConfigError(f"--profile: expected one of {', '.join(PROFILES)}, got {profile!r}")
    if resume is not None and profile != "auto":
        raise ConfigError("--profile: a resumed run keeps the settings it recorded; drop --profile")
    if resume is not None:  # a resumed run keeps its recorded settings, and its plan's record
        env, run, checkpoint, recorded = resolve_resume(env, resume, overrides, flags)
        return env, run, checkpoint, recorded.get("distribution"), recorded.get("plan")
    if env is None:
        raise ConfigError("run(): name an env")
    if config is None:
        run, plan = planned_config(get_registry().get(env), config_file, overrides, flags, profile=profile)
        return env, run, None, None, plan
    return env, RunConfig.of(config), None, None, None


def run_locked(
    env: str | None,
    config: RunConfig | Mapping[str, Any] | None,
    *,
    config_file: str | Path | None,
    overrides: list[str] | None,
    flags: Mapping[str, Any] | None,
    run_dir: str | Path | None,
    resume: str | Path | None,
    stop_after: int | None,
    dashboard: bool,
    tensorboard: bool,
    callbacks: list[Any] | None = None,
    profile: str = "auto",
) -> TrainResult:
    env, run, checkpoint, distribution, plan = resolve_run(env, config, config_file, overrides, flags, resume, profile)
    registry = get_registry()  # a resume trains the env of the plugin it trained before
    spec = registry.get(env, plugin=distribution) if distribution else registry.get(env)
    check_env_kwargs(spec, dict(run.env), native=run.vec.native, backend=run.vec.backend)
    writers, guard = Writers(), None
    trainer = start_trainer(spec, run, run_dir, writers, checkpoint, stop_after)
    try:
        if checkpoint is not None:
            load_resumed(trainer, checkpoint)
        if run_dir is not None:
            run_dir = Path(run_dir)
            remove_stale_temp_files(run_dir / "checkpoints")  # a SIGKILL mid-write leaves one; we hold the lock
            for stale in run_dir.glob("metrics.jsonl.*.tmp"):  # and one of trim_metrics
                stale.unlink(missing_ok=True)
            # [run] records what "auto" settings resolved to on this machine
            run_record = {"env": spec.name, "distribution": spec.meta.distribution, **trainer.hardware.as_config()}
            run_record |= plan_record(plan) | {"sources": run.provenance("run() config")}
            dump_toml({"run": run_record, **run.to_dict()}, run_dir / "config.toml")
            guard = RunDirGuard(run_dir)
            guard.quiet_writer_threads()
            writers.items.append(guard)  # first: nothing is written into a run dir deleted under the run
            if checkpoint is not None:
                trim_metrics(run_dir / "metrics.jsonl", trainer.update)
            writers.items.append(JsonlWriter(run_dir / "metrics.jsonl"))
            if tensorboard:
                writers.items.append(
                    TensorBoardWriter(run_dir / "tb", purge_step=trainer.global_step + 1 if checkpoint is not None else None)
                )
        if dashboard and isinstance(plan, Plan):
            print(plan.describe(trainer.hardware.torch_threads), flush=True)
        if dashboard:
            writers.items.append(
                terminal_writer(
                    spec.name,
                    None if run_dir is None else str(run_dir),
                    run.train.total_steps,
                    hardware=trainer.hardware.describe(),
                )
            )
        writers.items.extend(callbacks or [])
        total = run.train.total_steps
        if stop_after is None and trainer.global_step < total and trainer.planned_steps() != total:
            print(
                f"note: train.total_steps={total:,} is not a multiple of the "
                f"{trainer.num_rows} agent rows stepped together; the run ends at {trainer.planned_steps():,} "
                "steps (the last rollout is cut short to stay as close as it can)",
                flush=True,
            )
        if guard is None:
            return train_until_stopped(trainer, False, stop_after)
        return train_guarded(trainer, guard, stop_after)
    finally:
        trainer.close()
        writers.close()  # the guard last: TensorBoard's thread may fail while flushing
        if guard is not None:
            guard.restore_threads()


def start_trainer(
    spec: Any,
    config: RunConfig,
    run_dir: Any,
    writers: Writers,
    checkpoint: Path | None,
    stop_after: int | None,
) -> Trainer:
    """The Trainer, rank 0 of ``train.learners`` data-parallel learners when there are several (the
    others are started here and load ``checkpoint`` themselves)."""
    if config.train.learners > 1 and stop_after is not None:
        raise ConfigError("train.learners: a run of several learners trains to its budget; stop_after needs one learner")
    team = start_team(spec, config, None if checkpoint is None else str(checkpoint))
    try:
        return Trainer(spec, config, run_dir=run_dir, callbacks=[writers], team=team)
    except BaseException:
        team.close()
        raise


def train_guarded(trainer: Trainer, guard: RunDirGuard, stop_after: int | None) -> TrainResult:
    """:func:`train_until_stopped` into a run dir; if the dir was deleted or replaced meanwhile, whatever
    failed because of it (a checkpoint write, TensorBoard) is reported as :class:`RunDirLost`, and a
    checkpoint written into a lost dir is never reported as the run's."""
    try:
        result = train_until_stopped(trainer, True, stop_after)
    except Exception:
        guard.check()
        raise
    guard.check()
    return result


def train_until_stopped(trainer: Trainer, saves: bool, stop_after: int | None) -> TrainResult:
    """Train to the budget (or ``stop_after`` more steps) under :class:`stop_on_signals`; ``saves``: a
    checkpoint at the end, also when a stop signal abandoned the update in progress (the last completed one)."""
    with stop_on_signals(trainer) as stop:
        try:
            if stop_after is not None:
                trainer.train_steps(stop_after)
                if saves:
                    trainer.save_checkpoint()
                result = trainer.result()
            else:
                result = trainer.train()
        except UpdateAbandoned:  # the stop's grace ran out mid-rollout (a hung worker): save the last update
            stop.disarm()
            trainer.abandon_update()
            if saves:
                trainer.save_checkpoint()
            result = trainer.result()
        except LearnerLost as lost:  # data-parallel: another learner died or hangs; save the last completed update
            stop.disarm()
            trainer.abandon_update()
            raise LearnerLost(f"{lost}; {saved_for_resume(trainer) if saves else 'nothing saved'}") from None
    result.stop_signal = stop.signum
    return result


def saved_for_resume(trainer: Trainer) -> str:
    """Save the last completed update; the advice that goes with it."""
    trainer.save_checkpoint()
    return (
        f"the run stopped at update {trainer.update:,} (step {trainer.global_step:,}, saved): "
        f"continue with `pufferbox train --resume {trainer.run_dir}` (with any --learners)"
    )


def load_resumed(trainer: Trainer, checkpoint: Path) -> None:
    """Load ``checkpoint``; a policy that does not fit (e.g. ``--set policy.hidden_size``) is a user error."""
    try:
        trainer.load_checkpoint(checkpoint)
    except ConfigError as exc:  # names its own fix (e.g. the checkpoint's optimizer)
        raise CheckpointError(f"--resume: {checkpoint}: {exc}") from None
    except (RuntimeError, KeyError, ValueError) as exc:
        first = str(exc).strip().splitlines()
        raise CheckpointError(
            f"--resume: {checkpoint} does not fit this config "
            f"({first[-1].strip() if first else type(exc).__name__}); drop the --set that "
            f"changed [policy] or start a new --run-dir"
        ) from None


class stop_on_signals:
    """First SIGINT (Ctrl-C) or SIGTERM (docker stop, Kubernetes, Slurm): finish the current update,
    checkpoint, return (the CLI then exits 0 after SIGINT, 143 = 128+SIGTERM after SIGTERM). If the
    update's rollout is still running ``grace_s`` seconds after the signal (a hung or stopped worker,
    a slow env), it is abandoned (:class:`~pufferbox.train.trainer.UpdateAbandoned`): the run saves the
    last completed update and its workers are killed, well within ``docker stop``'s 10 seconds.
    A second signal interrupts at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    GRACE_S = 3.0  # seconds a rollout in progress may take to finish after the stop signal
    RECHECK_S = 0.2  # while the learner updates (it never waits on workers): look again this soon

    def __init__(self, trainer: Trainer, grace_s: float | None = None):
        self.trainer = trainer
        self.grace_s = self.GRACE_S if grace_s is None else grace_s
        self.previous: dict[int, Any] = {}
        self.signum: int | None = None

    def handler(self, signum: int, frame: Any) -> None:
        if self.trainer.stop_requested:
            raise KeyboardInterrupt
        self.trainer.stop_requested = True
        self.signum = signum
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        if self.trainer.team.rank == 0:  # said once: every learner gets the signal, rank 0 saves
            print(f"\n{name}: saving a checkpoint after this update (again to abort)", flush=True)
        if signal.SIGALRM in self.previous:
            signal.setitimer(signal.ITIMER_REAL, self.grace_s)

    def deadline(self, signum: int, frame: Any) -> None:
        """The grace is over: abandon a rollout in progress; the learner's update always finishes."""
        if not self.trainer.stop_requested:  # an alarm that is not ours (no stop signal came)
            return
        if self.trainer.collecting:
            raise UpdateAbandoned
        signal.setitimer(signal.ITIMER_REAL, self.RECHECK_S)

    def disarm(self) -> None:
        if signal.SIGALRM in self.previous:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __enter__(self) -> stop_on_signals:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self.previous[signum] = signal.signal(signum, self.handler)
            self.previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, self.deadline)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.disarm()
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)
        self.previous.clear()


# -- data-parallel learners (train.learners): rank 0 starts the others, each runs a Trainer ----------
def learner_device(tc: Any, rank: int) -> str:
    """``train.device`` of learner ``rank``: on CUDA each learner has a GPU of its own (``cuda:RANK``)."""
    device = pick_device(tc.device)
    return f"cuda:{rank}" if device.type == "cuda" else "cpu"


def start_team(spec: Any, config: RunConfig, checkpoint: str | os.PathLike | None = None) -> Team | Solo:
    """Rank 0 of ``train.learners`` learners (a :class:`Solo` for one): refuses impossible settings in one line,
    starts ranks 1..N-1 (each loads ``checkpoint`` when resuming) and joins their process group
    (``train.learners_on=ray``: as actors on the cluster at ``vec.ray_address``)."""
    tc = config.train
    if tc.learners == 1:
        return Solo()
    refuse_learners(spec, config)
    if tc.learners_on == "ray":  # ranks 1..N-1 as actors on a Ray cluster, each running learner_process
        from pufferbox.train.ray_learners import start_ray_team

        return start_ray_team(spec, config, checkpoint, learner_process, learner_device(tc, 0))
    address, context = free_address(), torch.multiprocessing.get_context("spawn")
    processes = []
    for rank in range(1, tc.learners):
        args = (rank, address, spec.name, spec.meta.distribution, config, checkpoint)
        processes.append(context.Process(target=learner_process, args=args, name=f"pufferbox-learner-{rank}"))
        processes[-1].start()
    team = Team(0, tc.learners, torch.device(learner_device(tc, 0)), processes)
    return join_as_rank_zero(team, address, tc.learner_timeout)


def learner_process(
    rank: int,
    address: str,
    env: str,
    distribution: str | None,
    config: RunConfig,
    checkpoint: str | None,
    device: str | None = None,
) -> None:
    """Learner ``rank`` > 0 (a spawned process or a Ray actor, whose ``device`` Ray chose): its share of the
    envs, no run directory; its errors are one line on stderr and exit status 1 (rank 0 then names it)."""
    tc = config.train
    trainer = None
    try:
        device = device or learner_device(tc, rank)  # made torch's current device: "cuda"/"auto" land there
        join_group(rank, tc.learners, address, device, tc.learner_timeout)
        spec = get_registry().get(env, plugin=distribution) if distribution else get_registry().get(env)
        trainer = Trainer(spec, config, team=Team(rank, tc.learners, torch.device(device)))
        if checkpoint is not None:
            trainer.load_checkpoint(checkpoint)
        with stop_on_signals(trainer):
            trainer.train()
    except UpdateAbandoned:  # a stop signal's grace ran out mid-rollout: rank 0 saves its last update
        pass
    except LearnerLost as exc:
        if trainer is None or not trainer.stop_requested:  # rank 0 sends SIGTERM when it ends the run early
            print(f"Error: {exc}", file=sys.stderr, flush=True)
            sys.exit(1)
    except (Exception, KeyboardInterrupt) as exc:
        print(f"Error: learner {rank}: {first_line(exc)}", file=sys.stderr, flush=True)
        sys.exit(1)
    finally:
        if trainer is not None:
            trainer.close()
        elif dist.is_initialized():  # a process that exits inside a process group aborts
            dist.destroy_process_group()
