"""A tournament's learning curve for ``pufferbox plot``: its leaderboard's best evaluated score against
total steps and wall time. The one plotting module is :mod:`pufferbox.train.plot`; this only reads.

Example:
    >>> from pufferbox.train.plot import plot_runs
    >>> plot_runs(["runs/cartpole-a", "runs/tournament-b"], "curves.png", read=read_curves)  # doctest: +SKIP
    'curves.png'
"""

from __future__ import annotations

from pathlib import Path

from pufferbox.train import plot

__all__ = ["read_curves", "read_curve", "is_tournament"]


def is_tournament(run_dir: str | Path) -> bool:
    return (Path(run_dir) / "leaderboard.sqlite").is_file()


def read_curve(run_dir: str | Path) -> plot.Curve:
    """``(steps, wall_times, values)``: a tournament's best score, or a training run's recent mean return."""
    if not is_tournament(run_dir):
        return plot.read_curve(run_dir)
    from pufferbox.tournament.leaderboard import Leaderboard

    board = Leaderboard.open_read_only(run_dir)  # never writes (read-only storage, a live tournament)
    try:
        history = board.history()
    finally:
        board.close()
    return [h[1] for h in history], [h[0] for h in history], [h[2] for h in history]


def read_curves(run_dir: str | Path) -> list[plot.LabelledCurve]:
    """A tournament's best-score curve (drawn as steps), or what :func:`pufferbox.train.plot.read_curves` reads."""
    if not is_tournament(run_dir):
        return plot.read_curves(run_dir)
    return [(f"{Path(run_dir).name} (tournament best)", read_curve(run_dir), True)]
