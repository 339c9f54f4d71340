"""Where update metrics go: ``metrics.jsonl``, TensorBoard, and the terminal.

Each writer is a callable taking one update's metrics dict. On a terminal the
:class:`Dashboard` draws a rich Live panel (steps/s, returns, losses, time per phase,
CPU/RAM and GPU use); elsewhere (CI, ``docker logs``) :class:`PlainLog` prints one line
per update, at most every ``every`` seconds.

Example:
    >>> log = PlainLog(every=0.0)
    >>> log({"global_step": 2048, "sps": 1000.0, "return_recent": 21.5, "wall_time": 2.0})
    step=2048 sps=1000 return=21.50 t=2.0s
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, TextIO

__all__ = ["JsonlWriter", "TensorBoardWriter", "PlainLog", "Dashboard", "terminal_writer"]


def clean(value: Any) -> Any:
    """JSON has no NaN: write ``null`` instead."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class JsonlWriter:
    """Appends one JSON line per update to ``metrics.jsonl``."""

    def __init__(self, path: str | Path):
        self.fh = open(path, "a", buffering=1)  # noqa: SIM115  (open for the run; close() closes it)

    def __call__(self, metrics: dict) -> None:
        self.fh.write(json.dumps({k: clean(v) for k, v in metrics.items()}) + "\n")

    def close(self) -> None:
        self.fh.close()


class TensorBoardWriter:
    """Scalars under ``charts/`` (returns, sps), ``losses/`` and ``time/`` (phases).

    ``purge_step``: on resume, events at steps ``>= purge_step`` (written after the checkpoint, then
    replayed) are discarded by TensorBoard, so curves show each step once.
    """

    def __init__(self, log_dir: str | Path, purge_step: int | None = None):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(log_dir), purge_step=purge_step)

    def __call__(self, metrics: dict) -> None:
        step = metrics["global_step"]
        for key, value in metrics.items():
            if key in ("global_step", "update", "solved") or not isinstance(value, (int, float)) or value is None:
                continue
            group = "losses" if key in LOSS_KEYS else "time" if key.startswith("time_") else "charts"
            self.writer.add_scalar(f"{group}/{key}", value, step)

    def close(self) -> None:
        self.writer.close()


LOSS_KEYS = {"policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance"}


def fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else format(value, spec)


class PlainLog:
    """One line per update (rate-limited), for logs that are not a terminal."""

    def __init__(self, stream: TextIO | None = None, every: float = 1.0, hardware: str = ""):
        self.stream = stream
        self.every = every
        self.last = -math.inf
        if hardware:
            print(f"training on {hardware}", file=self.stream or sys.stdout, flush=True)

    def __call__(self, metrics: dict) -> None:
        now = time.perf_counter()
        if now - self.last < self.every:
            return
        self.last = now
        line = (
            f"step={metrics['global_step']} sps={fmt(metrics.get('sps'), '.0f')} "
            f"return={fmt(metrics.get('return_recent'))} t={fmt(metrics.get('wall_time'), '.1f')}s"
        )
        if "policy_loss" in metrics:
            line += f" pg={fmt(metrics['policy_loss'], '.3f')} v={fmt(metrics['value_loss'], '.3f')}"
        print(line, file=self.stream or sys.stdout, flush=True)

    def close(self) -> None:
        pass


class SystemStats:
    """CPU/RAM (psutil) and GPU (torch.cuda) use, sampled at most once a second."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        self.last, self.values = -math.inf, dict[str, str]()
        psutil.cpu_percent(None)

    def read(self) -> dict:
        now = time.perf_counter()
        if now - self.last >= 1.0:
            self.last = now
            mem = self.psutil.virtual_memory()
            self.values = {
                "cpu %": f"{self.psutil.cpu_percent(None):.0f}",
                "ram": f"{mem.percent:.0f}% of {mem.total / 2**30:.0f} GiB",
            }
            try:
                import torch

                if torch.cuda.is_available():
                    self.values["gpu %"] = f"{torch.cuda.utilization():.0f}"
                    self.values["gpu mem"] = f"{torch.cuda.memory_allocated() / 2**30:.2f} GiB"
            except Exception:  # utilization needs pynvml; the dashboard must not die for it
                pass
        return self.values


class Dashboard:
    """A rich Live panel redrawn at each update."""

    def __init__(self, env: str, run_dir: str | None, total_steps: int, hardware: str = ""):
        from rich.console import Console
        from rich.live import Live

        self.env, self.run_dir, self.total_steps, self.hardware = env, run_dir, total_steps, hardware
        self.system = SystemStats()
        self.live = Live(self.render({}), console=Console(), refresh_per_second=4, transient=False)
        self.live.start()

    def render(self, m: dict) -> Any:
        from rich.panel import Panel
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan")
        table.add_column()
        table.add_column(style="bold cyan")
        table.add_column()
        times = {k[5:]: m.get(k, 0.0) for k in ("time_env", "time_inference", "time_learn")}
        total = sum(times.values()) or 1.0
        rows = [
            ("steps", f"{m.get('global_step', 0):,} / {self.total_steps:,}", "steps/s", fmt(m.get("sps"), ",.0f")),
            ("return (recent)", fmt(m.get("return_recent")), "ep. length", fmt(m.get("episode_length"), ".1f")),
            ("policy loss", fmt(m.get("policy_loss"), ".4f"), "value loss", fmt(m.get("value_loss"), ".4f")),
            ("entropy", fmt(m.get("entropy"), ".3f"), "approx kl", fmt(m.get("approx_kl"), ".4f")),
            ("env", f"{times['env'] / total:.0%}", "inference", f"{times['inference'] / total:.0%}"),
            ("learn", f"{times['learn'] / total:.0%}", "wall", fmt(m.get("wall_time"), ".1f") + " s"),
        ]
        if self.hardware:
            rows.append(("device", self.hardware, "", ""))
        system = list(self.system.read().items())
        while system:
            (k1, v1), *system = system
            (k2, v2), *system = system or [("", "")]
            rows.append((k1, v1, k2, v2))
        for row in rows:
            table.add_row(*row)
        title = f"pufferbox train {self.env}" + (" [green]solved[/]" if m.get("solved") else "")
        return Panel(table, title=title, subtitle=self.run_dir or "")

    def __call__(self, metrics: dict) -> None:
        self.live.update(self.render(metrics))

    def close(self) -> None:
        self.live.stop()


def terminal_writer(
    env: str, run_dir: str | None, total_steps: int, stream: TextIO | None = None, hardware: str = ""
) -> Any:
    """A :class:`Dashboard` when stdout is a terminal, else a :class:`PlainLog`; both show ``hardware``
    (what :meth:`~pufferbox.train.hardware.Hardware.describe` says)."""
    if (stream or sys.stdout).isatty():
        return Dashboard(env, run_dir, total_steps, hardware)
    return PlainLog(stream, hardware=hardware)
