"""Learning curves from run directories: episode return vs steps and vs wall time, runs overlaid.

The one plotting module: ``pufferbox plot`` passes :func:`pufferbox.tournament.curves.read_curves` as
``read`` so tournament directories plot here too (training knows nothing of tournaments).

Example:
    >>> plot_runs(["runs/cartpole-a", "runs/cartpole-b"], "curves.png")  # doctest: +SKIP
    'curves.png'
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from pufferbox.train.config import ConfigError

__all__ = ["plot_curves", "plot_runs", "read_curve", "read_curves", "read_metrics"]

Curve = tuple[list[float], list[float], list[float]]  # (steps, wall times, values)
LabelledCurve = tuple[str, Curve, bool]  # (label, curve, drawn as steps)


def read_curve(run_dir: str | Path) -> Curve:
    """``(steps, wall_times, values)``: the recent mean return of a ``pufferbox train`` run."""
    return curve_of(read_metrics(run_dir), "return_recent")


def curve_of(rows: list[dict], key: str) -> Curve:
    mine = [r for r in rows if r.get(key) is not None]
    return [r["global_step"] for r in mine], [r["wall_time"] for r in mine], [r[key] for r in mine]


def read_curves(run_dir: str | Path) -> list[LabelledCurve]:
    """The run's curve (labelled by its directory name) and, for a run with agent groups, one per group:
    that group's mean episode return of each update (``<group>/episode_return``)."""
    name, rows = Path(run_dir).name, read_metrics(run_dir)
    groups = sorted({k.split("/", 1)[0] for r in rows for k in r if k.endswith("/episode_return")})
    out: list[LabelledCurve] = [(name, curve_of(rows, "return_recent"), False)]
    return out + [(f"{name}: {group}", curve_of(rows, f"{group}/episode_return"), False) for group in groups]


def read_metrics(run_dir: str | Path) -> list[dict]:
    """The run's metric lines. A last line cut short (a live run writing it, or a killed one) is skipped
    with a warning on stderr; a bad line before it is an error naming the file and line."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise ConfigError(f"{run_dir}: no metrics.jsonl (is it a `pufferbox train` run directory?)")
    lines = path.read_text(errors="replace").splitlines()
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if number < len(lines):
                raise ConfigError(f"{path}: line {number} is not JSON (the file is damaged)") from None
            print(
                f"warning: {path}: skipped its last line, which is incomplete (a run still writing it, or killed)",
                file=sys.stderr,
                flush=True,
            )
    return rows


def plot_runs(
    run_dirs: list[str | Path], output: str | Path, read: Callable[[str | Path], list[LabelledCurve]] = read_curves
) -> str:
    """One PNG with two panels (return vs steps, return vs wall time), one line per training run and,
    for runs with agent groups, one per group; ``read`` turns a directory into its curves."""
    if not run_dirs:
        raise ConfigError("plot: name at least one run directory")
    return plot_curves([curve for d in run_dirs for curve in read(d)], output)


def plot_curves(curves: list[LabelledCurve], output: str | Path) -> str:
    """Draw ``(label, (steps, walls, values), stepped)`` curves into one two-panel PNG at ``output``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, (steps, walls, values), stepped in curves:
        draw = "steps-post" if stepped else "default"
        by_step.plot(steps, values, label=label, drawstyle=draw)
        by_time.plot(walls, values, label=label, drawstyle=draw)
    by_step.set_xlabel("environment steps")
    by_time.set_xlabel("wall time (s)")
    for ax in (by_step, by_time):
        ax.set_ylabel("episode return (recent mean; tournament: best score)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    output = Path(output)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(output, dpi=100)
    except OSError as exc:  # read-only storage, no permission, a file where a folder should be
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ConfigError(f"{output}: cannot write the plot ({reason}); pass --output PATH where you can write") from None
    finally:
        plt.close(fig)
    return str(output)
