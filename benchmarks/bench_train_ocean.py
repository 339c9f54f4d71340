"""Time-to-threshold of PPO on every Ocean sanity env (thresholds: each EnvSpec.training.solved_return).

Each env trains in-process with its plugin defaults (plus the overrides below) until the
mean of the last 20 episodes reaches ``solved_return`` or the wall-time budget runs out.
Time counts from building the trainer (envs + model), not from interpreter launch.

    .venv/bin/python benchmarks/bench_train_ocean.py [--budget 60] [--envs squared memory ...] [--write]

Prints one JSON line per env, then the table; ``--write`` also writes it to
benchmarks/results/ocean_sanity_solve.json and re-renders it in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from results import load, machine, publish

from pufferbox.registry import get_registry
from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer

OCEAN = ["bandit", "memory", "multiagent", "password", "spaces", "squared", "stochastic"]
# Per-env settings (memory's LSTM, spaces' short horizon) live in the ocean plugin's defaults.
EXTRA: dict[str, list[str]] = {}


def time_to_threshold(env: str, budget: float, seed: int) -> dict:
    spec = get_registry().get(env)
    overrides = ["train.checkpoint_interval=0", f"train.seed={seed}", "train.total_steps=100000000", *EXTRA.get(env, [])]
    config = resolve_config(spec.training.config, overrides=overrides)
    start = time.perf_counter()
    trainer = Trainer(spec, config)
    try:
        while trainer.scores.solved_at_step is None and time.perf_counter() - start < budget:
            trainer.train_update()
        last = trainer.history[-1] if trainer.history else {}
        return {
            "env": env,
            "solved_return": spec.training.solved_return,
            "solved": trainer.scores.solved_at_step is not None,
            "seconds": round(time.perf_counter() - start, 2),
            "steps": trainer.global_step,
            "return_recent": last.get("return_recent"),
            "sps": last.get("sps"),
            "overrides": EXTRA.get(env, []),
        }
    finally:
        trainer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--envs", nargs="+", default=OCEAN)
    parser.add_argument("--write", action="store_true", help="write the table's JSON and re-render RESULTS.md")
    args = parser.parse_args()
    before = load()
    print(json.dumps({"load_avg_before": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}))
    rows = []
    for env in args.envs:
        result = time_to_threshold(env, args.budget, args.seed)
        print(json.dumps(result), flush=True)
        solved = "✓" if result["solved"] else "✗"
        rows.append([env, f"{result['solved_return']:g}", solved, f"{result['seconds']:.2f}", f"{result['steps']:,}"])
    print(json.dumps({"load_avg_after": [round(x, 2) for x in os.getloadavg()]}))
    meta = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_train_ocean.py", *sys.argv[1:]]),
        "machine": machine(),
        "load": f"{before} before, {load()} after",
    }
    publish("ocean_sanity_solve", ["env", "threshold", "solved", "seconds", "steps"], rows, meta, args.write)


if __name__ == "__main__":
    main()
