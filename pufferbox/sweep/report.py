"""``pufferbox sweep --show``: the best trials as a table and the sweep as a plot.

Single objective: the ``top`` finished trials by value, and a PNG with the value of every
trial (best so far as a line) beside each trial's learning curve as reported to the pruner
(pruned trials dashed). Two objectives: the Pareto front, and a scatter of all trials with
the front highlighted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pufferbox.sweep.study import fmt_value, load_sweep

__all__ = ["show", "ranked", "plot"]


def ranked(study: Any, top: int) -> list[Any]:
    """Best first: the top complete trials (single objective) or the Pareto front (multi)."""
    import optuna

    if len(study.directions) > 1:
        return sorted(study.best_trials, key=lambda t: t.values[0], reverse=study.directions[0].name == "MAXIMIZE")
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    maximize = study.direction.name == "MAXIMIZE"
    return sorted(complete, key=lambda t: t.value, reverse=maximize)[:top]


def short(name: str) -> str:
    return name.removeprefix("train.")


def fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def show(run_dir: str | Path, console: Any = None, top: int = 10) -> str:
    from rich.console import Console
    from rich.table import Table

    meta, study = load_sweep(run_dir)
    console = console or Console()
    trials = ranked(study, top)
    states: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        states[t.state.name.lower()] = states.get(t.state.name.lower(), 0) + 1
    names = meta["objective"]
    title = (
        f"{meta['env']}: {'Pareto front' if len(names) > 1 else f'best {len(trials)}'} of "
        f"{len(study.trials)} trials ({', '.join(f'{n} {s}' for s, n in sorted(states.items()))})"
    )
    table = Table(title=title)
    table.add_column("trial", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("settings", ratio=1)
    for t in trials:
        settings = " ".join(f"{short(k)}={fmt(v)}" for k, v in sorted(t.params.items()))
        table.add_row(str(t.number), *(fmt_value(v) for v in t.values), settings)
    console.print(table)
    path = plot(study, names, Path(run_dir) / "sweep.png")
    console.print(f"plot: {path}")
    return path


def plot(study: Any, names: list[str], path: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna

    S = optuna.trial.TrialState
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    done = [t for t in study.get_trials(deepcopy=False) if t.state == S.COMPLETE]
    if len(names) > 1:
        front = {t.number for t in study.best_trials}
        for group, color, label in ((False, "tab:gray", "trial"), (True, "tab:red", "Pareto front")):
            pts = [t for t in done if (t.number in front) == group]
            left.scatter([t.values[1] for t in pts], [t.values[0] for t in pts], c=color, label=label)
        left.set_xlabel(names[1])
        left.set_ylabel(names[0])
        left.legend()
    else:
        maximize = study.direction.name == "MAXIMIZE"
        left.scatter([t.number for t in done], [t.value for t in done], c="tab:blue", label="trial")
        best, line = None, []
        for t in sorted(done, key=lambda t: t.number):
            best = t.value if best is None else (max if maximize else min)(best, t.value)
            line.append((t.number, best))
        if line:
            left.step(*zip(*line), where="post", c="tab:red", label="best so far")
        left.set_xlabel("trial")
        left.set_ylabel(names[0])
        left.legend()
    for t in study.get_trials(deepcopy=False):
        if t.intermediate_values:
            steps = sorted(t.intermediate_values)
            right.plot(steps, [t.intermediate_values[s] for s in steps], ls="--" if t.state == S.PRUNED else "-", lw=1)
    right.set_xlabel("budget fraction (1/20ths)")
    right.set_ylabel(f"{names[0]} so far (dashed: pruned)")
    fig.suptitle(f"sweep: {study.study_name}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
