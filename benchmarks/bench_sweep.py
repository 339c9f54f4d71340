"""Does a sweep beat the defaults? Steps to each env's solved_return: plugin defaults vs the best trial.

For each env: ``pufferbox sweep ENV`` (objective ``steps``: agent steps until the recent mean
return reaches ``solved_return``) with ``--trials`` trials, each capped at the env's default
``total_steps`` x ``--budget-scale``; then the defaults and the best trial's settings each train
on ``--seeds`` fresh seeds (not the sweep's seed, so the best is not judged on the seed it was
picked on) with ``stop_on_solve`` and twice the budget. Prints JSON lines and, with
``--write-results``, a table in RESULTS.md.

    .venv/bin/python benchmarks/bench_sweep.py [--envs cartpole squared password] [--trials 30] \\
        [--seeds 11 12 13] [--parallel 1] [--out runs/bench-sweep] [--write-results]
    # smoke run (seconds, numbers meaningless):
    .venv/bin/python benchmarks/bench_sweep.py --envs cartpole --trials 2 --budget-scale 0.02 --seeds 11
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from results import load, machine, publish

from pufferbox.registry import get_registry
from pufferbox.sweep import sweep
from pufferbox.train.config import resolve_config
from pufferbox.train.runner import run

ENVS = ["cartpole", "squared", "password"]


def steps_to_solve(env: str, config: dict, seed: int, budget: int) -> int | None:
    config = resolve_config(
        config,
        overrides=[
            f"train.seed={seed}",
            f"train.total_steps={budget}",
            "train.stop_on_solve=true",
            "train.checkpoint_interval=0",
        ],
    )
    result = run(env, config=config, dashboard=False, tensorboard=False)
    return result.solved_at_step


def median_steps(solved: list[int | None], budget: int) -> float:
    """Median with unsolved seeds counted as the budget (a lower bound on their true steps)."""
    return statistics.median(budget if s is None else s for s in solved)


def bench_env(env: str, args: argparse.Namespace, out: Path) -> dict:
    spec = get_registry().get(env)
    defaults = resolve_config(spec.training.config)
    budget = max(1024, int(defaults["train"]["total_steps"] * args.budget_scale))
    result = sweep(
        env,
        args.trials,
        out / env,
        parallel=args.parallel,
        pruner=args.pruner,
        overrides=[f"train.total_steps={budget}", "train.checkpoint_interval=0"],
        log=lambda s: None,
    )
    best = result.study.best_trial
    tuned = defaults
    for name, value in best.params.items():
        section, _, key = name.partition(".")
        tuned = resolve_config(tuned, overrides=[f"{section}.{key}={json.dumps(value)}"])
    row = {
        "env": env,
        "solved_return": spec.training.solved_return,
        "trials": len(result.study.trials),
        "sweep_budget": budget,
        "best_trial": best.number,
        "best_value": best.value,
        "best_params": best.params,
    }
    for label, config in (("defaults", defaults), ("best", tuned)):
        solved = [steps_to_solve(env, config, seed, 2 * budget) for seed in args.seeds]
        row[label] = {
            "steps": solved,
            "median": median_steps(solved, 2 * budget),
            "solved": sum(s is not None for s in solved),
        }
    return row


COLUMNS = ["env", "threshold", "defaults: median steps (solved)", "best trial: median steps (solved)", "ratio"]


def table_rows(rows: list[dict], args: argparse.Namespace) -> list[list[str]]:
    out = []
    for r in rows:
        d, b = r["defaults"], r["best"]
        out.append(
            [
                r["env"],
                r["solved_return"],
                f"{d['median']:,.0f} ({d['solved']}/{len(args.seeds)})",
                f"{b['median']:,.0f} ({b['solved']}/{len(args.seeds)})",
                f"{b['median'] / d['median']:.2f}x",
            ]
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=ENVS)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--seeds", nargs="+", type=int, default=[11, 12, 13])
    parser.add_argument("--budget-scale", type=float, default=1.0, help="x the env's default total_steps per trial")
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--pruner", default="median")
    parser.add_argument("--out", help="sweep directories go here (default: a temporary directory)")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-sweep-"))
    rows = []
    for env in args.envs:
        rows.append(bench_env(env, args, out))
        print(json.dumps(rows[-1]), flush=True)
    command = (
        f".venv/bin/python benchmarks/bench_sweep.py --trials {args.trials} --seeds {' '.join(map(str, args.seeds))}"
        " --write-results"
    )
    meta = {
        "command": command,
        "machine": f"{machine()} (steps, not seconds)",
        "load": load(),
        "peer": "the plugin defaults",
    }
    publish("sweeps", COLUMNS, table_rows(rows, args), meta, args.write_results, align="lllll")


if __name__ == "__main__":
    main()
