"""Experiment tracking: Weights & Biases as a training callback (TensorBoard stays the default).

:class:`WandbTracker` logs each update's metrics under the same names as TensorBoard
(``charts/``, ``losses/``, ``time/``, against ``global_step``), the run's resolved config, and
optionally each new checkpoint as a ``model`` artifact. Without an API key (no
``WANDB_API_KEY``, no ``wandb login``) or when ``wandb.init`` fails online, it logs offline
under ``RUN_DIR/wandb`` (upload later with ``wandb sync``); ``WANDB_MODE`` and ``WANDB_DIR``
are honoured. A tracker failure never stops training: it prints one warning line and the
tracker switches itself off.

Example:
    >>> from pufferbox.train.runner import run
    >>> tracker = WandbTracker("runs/cp", project="pufferbox", tags=("cartpole",))    # doctest: +SKIP
    >>> run("cartpole", run_dir="runs/cp", callbacks=[tracker])                        # doctest: +SKIP
"""

from __future__ import annotations

import netrc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pufferbox.train.dashboard import LOSS_KEYS

__all__ = ["WandbTracker", "metric_name"]

SKIP = ("global_step", "update", "solved")


def metric_name(key: str) -> str:
    """The TensorBoard tag of a metrics key: ``losses/``, ``time/`` or ``charts/``."""
    return f"{'losses' if key in LOSS_KEYS else 'time' if key.startswith('time_') else 'charts'}/{key}"


def has_api_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        return False


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


class WandbTracker:
    """Training callback logging to W&B; it starts the W&B run at the first update (in the process
    that trains, so a sweep can hand one to a worker) and reads the config from ``RUN_DIR/config.toml``.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike,
        project: str = "pufferbox",
        entity: str | None = None,
        group: str | None = None,
        tags: tuple[str, ...] | list[str] = (),
        artifacts: bool = False,
        name: str | None = None,
        warn: Callable[[str], None] = warn,
    ):
        self.run_dir = Path(run_dir)
        self.options: dict[str, Any] = {  # wandb.init's keyword arguments
            "project": project,
            "entity": entity,
            "group": group,
            "tags": list(tags) or None,
            "name": name or self.run_dir.name,
        }
        self.artifacts, self.warn = artifacts, warn
        self.run: Any = None
        self.failed = False
        self.logged_checkpoints: set[str] = set()

    def start(self) -> None:
        try:
            import wandb
        except ImportError:
            raise RuntimeError("wandb is not installed; pip install 'pufferbox[wandb]'") from None

        from pufferbox.train.config import load_toml

        config = load_toml(self.run_dir / "config.toml") if (self.run_dir / "config.toml").is_file() else {}
        directory = os.environ.get("WANDB_DIR") or str(self.run_dir)
        mode: Any = os.environ.get("WANDB_MODE") or ("online" if has_api_key() else "offline")  # wandb checks it
        settings = wandb.Settings(silent=True, console="off")
        try:
            self.run = wandb.init(config=config, dir=directory, mode=mode, settings=settings, **self.options)
        except Exception as exc:  # online init failed (no network, bad key): keep the run, log offline
            if mode == "offline":
                raise
            self.warn(f"W&B online init failed ({type(exc).__name__}); logging offline (`wandb sync` later)")
            self.run = wandb.init(config=config, dir=directory, mode="offline", settings=settings, **self.options)
        self.run.define_metric("*", step_metric="global_step")

    def guarded(self, action: Callable[[], None]) -> None:
        """Runs ``action``; a failure switches tracking off with one warning line, never stops training."""
        if self.failed:
            return
        try:
            action()
        except Exception as exc:
            self.failed = True
            self.warn(f"W&B tracking off: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

    def __call__(self, metrics: dict) -> None:
        self.guarded(lambda: self.log(metrics))

    def log(self, metrics: dict) -> None:
        if self.run is None:
            self.start()
        row = {
            metric_name(k): v
            for k, v in metrics.items()
            if k not in SKIP and isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        self.run.log({**row, "global_step": metrics["global_step"]})
        if self.artifacts:
            self.log_checkpoints()

    def log_checkpoints(self) -> None:
        import wandb

        for path in sorted((self.run_dir / "checkpoints").glob("ckpt-*.pt")):
            if str(path) in self.logged_checkpoints:
                continue
            self.logged_checkpoints.add(str(path))
            artifact = wandb.Artifact(f"{self.options['name']}-model", type="model", metadata={"checkpoint": path.name})
            artifact.add_file(str(path))
            self.run.log_artifact(artifact, aliases=["latest", path.stem])

    def close(self) -> None:
        if self.run is None:
            return
        if self.artifacts:
            self.guarded(self.log_checkpoints)  # the final checkpoint is written after the last update
        run, self.run = self.run, None
        try:
            run.finish()
        except Exception as exc:
            self.warn(f"W&B finish failed: {type(exc).__name__}: {exc}".splitlines()[0])
