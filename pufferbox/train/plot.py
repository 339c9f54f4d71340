"""Learning curves from run directories: episode return vs steps and vs wall time, runs overlaid.

A tournament run directory (``pufferbox tournament``) plots its leaderboard's best
evaluated score against total steps and wall time instead.

Example:
    >>> plot_runs(["runs/cartpole-a", "runs/cartpole-b"], "curves.png")  # doctest: +SKIP
    'curves.png'
"""

from __future__ import annotations

import json
from pathlib import Path

from pufferbox.train.config import ConfigError

__all__ = ["plot_runs", "read_curve", "read_metrics"]


def read_curve(run_dir: str | Path) -> tuple[list[float], list[float], list[float]]:
    """``(steps, wall_times, values)``: recent mean return of a run, or a tournament's best score."""
    if (Path(run_dir) / "leaderboard.sqlite").is_file():
        from pufferbox.tournament.leaderboard import Leaderboard

        board = Leaderboard.open_read_only(run_dir)  # never writes (read-only storage, a live tournament)
        history = board.history()
        board.close()
        return [h[1] for h in history], [h[0] for h in history], [h[2] for h in history]
    rows = [r for r in read_metrics(run_dir) if r.get("return_recent") is not None]
    return [r["global_step"] for r in rows], [r["wall_time"] for r in rows], [r["return_recent"] for r in rows]


def read_metrics(run_dir: str | Path) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise ConfigError(f"{run_dir}: no metrics.jsonl (is it a `pufferbox train` run directory?)")
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def plot_runs(run_dirs: list[str | Path], output: str | Path) -> str:
    """One PNG with two panels (return vs steps, return vs wall time), one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not run_dirs:
        raise ConfigError("plot: name at least one run directory")
    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(12, 4.5))
    for run_dir in run_dirs:
        steps, walls, values = read_curve(run_dir)
        tournament = (Path(run_dir) / "leaderboard.sqlite").is_file()
        label = Path(run_dir).name + (" (tournament best)" if tournament else "")
        draw = "steps-post" if tournament else "default"
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
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)
    plt.close(fig)
    return str(output)
