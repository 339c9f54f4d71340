"""Learning curves from run directories: episode return vs steps and vs wall time, runs overlaid.

Example:
    >>> plot_runs(["runs/cartpole-a", "runs/cartpole-b"], "curves.png")  # doctest: +SKIP
    'curves.png'
"""

from __future__ import annotations

import json
from pathlib import Path

from pufferbox.train.config import ConfigError

__all__ = ["plot_runs", "read_metrics"]


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
        rows = [r for r in read_metrics(run_dir) if r.get("return_recent") is not None]
        label = Path(run_dir).name
        by_step.plot([r["global_step"] for r in rows], [r["return_recent"] for r in rows], label=label)
        by_time.plot([r["wall_time"] for r in rows], [r["return_recent"] for r in rows], label=label)
    by_step.set_xlabel("environment steps")
    by_time.set_xlabel("wall time (s)")
    for ax in (by_step, by_time):
        ax.set_ylabel("episode return (recent mean)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)
    plt.close(fig)
    return str(output)
