"""Learning curves of training runs and tournaments (``pufferbox plot``).

A tournament directory (it holds ``leaderboard.sqlite``) plots its leaderboard's best evaluated
score against total steps and wall time; any other directory is a training run
(:func:`pufferbox.train.plot.read_curve`).

Example:
    >>> plot_runs(["runs/cartpole-a", "runs/tournament-b"], "curves.png")  # doctest: +SKIP
    'curves.png'
"""

from __future__ import annotations

from pathlib import Path

from pufferbox.train import plot as train_plot
from pufferbox.train.config import ConfigError

__all__ = ["plot_runs", "read_curve", "is_tournament"]


def is_tournament(run_dir: str | Path) -> bool:
    return (Path(run_dir) / "leaderboard.sqlite").is_file()


def read_curve(run_dir: str | Path) -> train_plot.Curve:
    """``(steps, wall_times, values)``: a tournament's best score, or a training run's recent mean return."""
    if not is_tournament(run_dir):
        return train_plot.read_curve(run_dir)
    from pufferbox.tournament.leaderboard import Leaderboard

    board = Leaderboard.open_read_only(run_dir)  # never writes (read-only storage, a live tournament)
    try:
        history = board.history()
    finally:
        board.close()
    return [h[1] for h in history], [h[0] for h in history], [h[2] for h in history]


def plot_runs(run_dirs: list[str | Path], output: str | Path) -> str:
    """One PNG with two panels (return vs steps, return vs wall time), one line per run or tournament."""
    if not run_dirs:
        raise ConfigError("plot: name at least one run directory")
    curves = [
        (Path(d).name + (" (tournament best)" if is_tournament(d) else ""), read_curve(d), is_tournament(d))
        for d in run_dirs
    ]
    return train_plot.plot_curves(curves, output)
