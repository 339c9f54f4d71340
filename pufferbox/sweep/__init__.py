"""Hyperparameter sweeps on Optuna: ``sweep()`` runs one, ``show()`` reports it.

See :mod:`pufferbox.sweep.study` (the driver), :mod:`.space` (what is searched),
:mod:`.objective` (what is optimized) and :mod:`.trial` (one trial = one training run).
"""

from pufferbox.sweep.study import SweepError, SweepResult, load_sweep, sweep

__all__ = ["sweep", "show", "SweepError", "SweepResult", "load_sweep"]


def show(run_dir, console=None, top: int = 10):
    """Print the best trials of the sweep in ``run_dir`` and write ``run_dir/sweep.png``; returns its path."""
    from pufferbox.sweep.report import show as _show

    return _show(run_dir, console=console, top=top)
