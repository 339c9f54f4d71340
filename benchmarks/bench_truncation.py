"""Does bootstrapping on time-limit truncation learn better than treating the limit as a death?

Two arms per env, the plugin's own defaults otherwise: ``bootstrap`` (``train.bootstrap_truncation``
on, the default: a truncated step's reward gets ``gamma * V(final observation)``) and ``terminate``
(off: the value target stops at the time limit, what most vectorizers do by default). Pendulum is the
clearest case: every episode ends by its 200-step limit, never by a termination. Reported per run:
the mean return of the last 20 episodes at the end and the step at which it first reached the env's
``solved_return``. Steps, not seconds: sample efficiency does not depend on the machine's load.

    python benchmarks/bench_truncation.py --envs pendulum cartpole --seeds 1 2 3 > trunc.jsonl
    python benchmarks/bench_truncation.py --envs cartpole --set train.stop_on_solve=false > trunc-long.jsonl
    python benchmarks/bench_truncation.py --table trunc.jsonl     # the markdown table of RESULTS.md
    python benchmarks/bench_truncation.py --table trunc.jsonl --write   # into results/truncation.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from results import publish

from pufferbox.registry import get_registry
from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer

ARMS = {"bootstrap": "train.bootstrap_truncation=true", "terminate": "train.bootstrap_truncation=false"}


def run(env: str, arm: str, seed: int, budget: int | None, extra: list[str] = ()) -> dict:
    spec = get_registry().get(env)
    overrides = [*extra, ARMS[arm], "train.checkpoint_interval=0", f"train.seed={seed}"]
    if budget:
        overrides.append(f"train.total_steps={budget}")
    config = resolve_config(spec.training.config, overrides=overrides)
    start = time.perf_counter()
    trainer = Trainer(spec, config)
    try:
        result = trainer.train()
    finally:
        trainer.close()
    return {
        "env": env,
        "arm": arm,
        "seed": seed,
        "overrides": list(extra),
        "budget": trainer.tc.total_steps,
        "steps": result.global_step,
        "solved_return": spec.training.solved_return,
        "final_return": result.episode_return,
        "solved_at_step": result.solved_at_step,
        "seconds": round(time.perf_counter() - start, 1),
        "load_avg": round(os.getloadavg()[0], 2),
    }


def table(path: str) -> tuple[list[str], list[list[str]]]:
    """Columns and rows: one row per env, one column per arm: mean final return (solved seeds, median steps)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.startswith('{"env"')]
    out = []
    for env in dict.fromkeys(r["env"] for r in rows):
        cells = []
        for arm in ARMS:
            runs = [r for r in rows if r["env"] == env and r["arm"] == arm]
            finals = [r["final_return"] for r in runs if r["final_return"] is not None]
            solved = sorted(r["solved_at_step"] for r in runs if r["solved_at_step"] is not None)
            if not finals:
                cells.append("-")
                continue
            each = ", ".join(f"{f:.0f}" for f in finals)
            at = f", median {statistics.median(solved) / 1000:.0f}k steps" if solved else ""
            cells.append(f"{statistics.mean(finals):.1f} ({each}; {len(solved)}/{len(runs)} solved{at})")
        first = next(r for r in rows if r["env"] == env)
        budget = first.get("budget", first["steps"]) // 1000
        out.append([f"{env} ({first['solved_return']}, {budget}k)", *cells])
    return ["env (threshold, step budget)", *(f"{a} (default)" if a == "bootstrap" else a for a in ARMS)], out


def run_machine(path: str) -> dict:
    """The machine and load the runs recorded on their first line (``cpus``, ``load_avg_before``)."""
    first = json.loads(Path(path).read_text().splitlines()[0])
    load = " / ".join(f"{x:.2f}" for x in first.get("load_avg_before", []))
    return {"machine": f"{first['cpus']} CPUs" if "cpus" in first else "", "load": f"{load} before" if load else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["pendulum", "cartpole"])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--total-steps", type=int, help="override every env's default step budget")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    parser.add_argument("--table", metavar="JSONL", help="print the markdown table of an earlier run's output")
    parser.add_argument("--write", action="store_true", help="with --table: write results/truncation.json")
    args = parser.parse_args()
    if args.table:
        columns, rows = table(args.table)
        meta = {"command": f"python benchmarks/bench_truncation.py --table {args.table}", **run_machine(args.table)}
        publish("truncation", columns, rows, meta, args.write, align="l" * len(columns))
        return
    print(json.dumps({"load_avg_before": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}))
    for env in args.envs:
        for seed in args.seeds:
            for arm in args.arms:  # arms interleaved: a drift in machine load hits both alike
                print(json.dumps(run(env, arm, seed, args.total_steps, args.set)), flush=True)


if __name__ == "__main__":
    main()
