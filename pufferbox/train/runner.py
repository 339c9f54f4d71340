"""``run()``: a whole training run with its run directory, writers, Ctrl-C handling and resume.

The run directory holds ``config.toml`` (the resolved config), ``metrics.jsonl``,
TensorBoard event files under ``tb/`` and ``checkpoints/ckpt-<update>.pt``.

Example:
    >>> result = run("cartpole", overrides=["train.total_steps=4096"], run_dir="/tmp/pb-run")  # doctest: +SKIP
    >>> result.checkpoint                                                                    # doctest: +SKIP
    '/tmp/pb-run/checkpoints/ckpt-00000004.pt'
"""

from __future__ import annotations

import datetime
import signal
import threading
from pathlib import Path
from typing import Any

from pufferbox.registry import get_registry
from pufferbox.train.checkpoint import CheckpointError, latest_checkpoint, latest_finite_checkpoint
from pufferbox.train.config import ConfigError, dump_toml, load_toml, merge, resolve_config
from pufferbox.train.dashboard import JsonlWriter, TensorBoardWriter, terminal_writer
from pufferbox.train.ppo import Trainer, TrainResult

__all__ = ["run", "default_run_dir"]


def default_run_dir(env: str, root: str | Path = "runs") -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path(root) / f"{env}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = Path(root) / f"{env}-{stamp}-{n}"
    return path


def run(env: str | None = None, config: dict | None = None, *, config_file: str | Path | None = None,
        overrides: list[str] | None = None, flags: dict | None = None, run_dir: str | Path | None = None,
        resume: str | Path | None = None, stop_after: int | None = None, dashboard: bool = True,
        tensorboard: bool = True) -> TrainResult:
    """Train ``env``; returns a :class:`TrainResult`. Either ``config`` (resolved) or the layers.

    ``resume`` is a run directory: its ``config.toml`` is the base (``overrides``/``flags`` may
    extend it, e.g. ``total_steps``) and training continues from its newest checkpoint in it.
    ``stop_after`` stops after that many steps of this call (for tests and tournaments).
    """
    if resume is not None:
        run_dir = Path(resume)
        if not (run_dir / "config.toml").is_file() or latest_checkpoint(run_dir / "checkpoints") is None:
            raise CheckpointError(f"{run_dir}: not a run directory with config.toml and checkpoints/ckpt-*.pt")
        checkpoint = latest_finite_checkpoint(run_dir / "checkpoints")  # skips a poisoned (NaN/inf) newest one
        if checkpoint is None:
            raise CheckpointError(f"{run_dir}: no checkpoint with finite weights in checkpoints/ (every one holds "
                                  "NaN/inf); start a new run")
        base = load_toml(run_dir / "config.toml")
        env_name = base.pop("run", {}).get("env")
        if env is not None and env_name is not None and env != env_name:
            raise ConfigError(f"--resume {run_dir}: that run trained {env_name!r}, not {env!r}")
        env = env or env_name
        config = base
        for text in overrides or []:
            config = resolve_config(config, overrides=[text])
        config = resolve_config(config, flags=flags)
    else:
        checkpoint = None
        if env is None:
            raise ConfigError("run(): name an env")
        if config is None:
            spec = get_registry().get(env)
            config = resolve_config(spec.defaults, config_file, overrides, flags)
        else:
            config = merge(resolve_config(), config, "config")
    spec = get_registry().get(env)
    if run_dir is not None:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
    trainer = Trainer(spec, config, run_dir=run_dir)
    writers: list[Any] = []
    try:
        if run_dir is not None:  # [run] records what "auto" settings resolved to on this machine
            dump_toml({"run": {"env": spec.name, **trainer.hardware.as_config()}, **config}, run_dir / "config.toml")
            writers.append(JsonlWriter(run_dir / "metrics.jsonl"))
            if tensorboard:
                writers.append(TensorBoardWriter(run_dir / "tb"))
        if dashboard:
            writers.append(terminal_writer(spec.name, None if run_dir is None else str(run_dir),
                                           config["train"]["total_steps"], hardware=trainer.hardware.describe()))
        trainer.callbacks.extend(writers)
        if checkpoint is not None:
            trainer.load_checkpoint(checkpoint)
        total = config["train"]["total_steps"]
        if stop_after is None and trainer.global_step < total and trainer.planned_steps() != total:
            print(f"note: train.total_steps={total:,} is not a multiple of the "
                  f"{trainer.num_rows} agent rows stepped together; the run ends at {trainer.planned_steps():,} "
                  "steps (the last rollout is cut short to stay as close as it can)", flush=True)
        with stop_on_sigint(trainer):
            if stop_after is not None:
                trainer.train_steps(stop_after)
                if run_dir is not None:
                    trainer.save_checkpoint()
                return trainer.result()
            return trainer.train()
    finally:
        trainer.close()
        for writer in writers:
            writer.close()


class stop_on_sigint:
    """First Ctrl-C: finish the current update, checkpoint, return. Second: interrupt now."""

    def __init__(self, trainer: Trainer):
        self.trainer = trainer
        self.previous: Any = None

    def handler(self, signum: int, frame: Any) -> None:
        if self.trainer.stop_requested:
            raise KeyboardInterrupt
        self.trainer.stop_requested = True
        print("\nCtrl-C: saving a checkpoint after this update (again to abort)", flush=True)

    def __enter__(self) -> "stop_on_sigint":
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self.handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

