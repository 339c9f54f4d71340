"""Validation set for the trainer's built-in defaults: envs trained with NO plugin settings.

A third-party env whose plugin gives no ``defaults`` trains with :data:`pufferbox.train.config.DEFAULTS`
only. Each env of the set trains from ``resolve_config(None, ...)`` (the plugin's own defaults are
ignored) plus one *candidate* (a few ``--set`` overrides), for a fixed step budget, 3 seeds. Reported
per run: the mean return of the last 20 episodes at the end and the step at which it first reached
the env's ``solved_return`` (None: not within the budget). Steps, not seconds: sample efficiency does
not depend on the machine's load.

    python benchmarks/bench_defaults.py --candidates builtin sb3 --seeds 1 2 3 > defaults.jsonl
    python benchmarks/bench_defaults.py --table defaults.jsonl    # the markdown table of RESULTS.md
    python benchmarks/bench_defaults.py --table defaults.jsonl --write   # into results/builtin_defaults.json
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

# env -> step budget (agent steps). Classic control from the classic plugin; ocean sanity envs.
VALIDATION_SET: dict[str, int] = {
    "cartpole": 100_000,
    "acrobot": 100_000,
    "mountaincar": 200_000,
    "pendulum": 200_000,
    "bandit": 20_000,
    "squared": 50_000,
    "stochastic": 30_000,
}
ORDER = ["bandit", "stochastic", "squared", "cartpole", "acrobot", "pendulum", "mountaincar"]  # quick ones first
# name -> overrides on top of the built-in defaults; "builtin" is DEFAULTS as they are.
CANDIDATES: dict[str, list[str]] = {
    "builtin": [],
    "cleanrl": [
        "vec.num_envs=4",
        "train.num_steps=128",
        "train.learning_rate=2.5e-4",
        "train.update_epochs=4",
        "train.num_minibatches=4",
        "train.ent_coef=0.01",
    ],
    # SB3 PPO: 2048 steps per update (here 8 envs x 256), 10 epochs of 64-sample minibatches, lr 3e-4, no entropy.
    "sb3": [
        "vec.num_envs=8",
        "train.num_steps=256",
        "train.learning_rate=3e-4",
        "train.update_epochs=10",
        "train.num_minibatches=32",
        "train.ent_coef=0.0",
    ],
    "builtin+norm": ["train.norm_obs=true", "train.norm_reward=true"],
    "sb3+norm": [
        "vec.num_envs=8",
        "train.num_steps=256",
        "train.learning_rate=3e-4",
        "train.update_epochs=10",
        "train.num_minibatches=32",
        "train.ent_coef=0.0",
        "train.norm_obs=true",
        "train.norm_reward=true",
    ],
}


def run(env: str, candidate: str, seed: int, budget: int) -> dict:
    spec = get_registry().get(env)
    config = resolve_config(
        None,
        overrides=[
            *CANDIDATES[candidate],
            "train.checkpoint_interval=0",
            f"train.seed={seed}",
            f"train.total_steps={budget}",
        ],
    )
    start = time.perf_counter()
    trainer = Trainer(spec, config)
    try:
        result = trainer.train()
    finally:
        trainer.close()
    kls = [h["approx_kl"] for h in trainer.history if h.get("approx_kl") is not None]
    kl = round(sum(kls) / len(kls), 6) if kls else None  # ~0: the update does not move the policy
    return {
        "env": env,
        "candidate": candidate,
        "seed": seed,
        "budget": budget,
        "steps": result.global_step,
        "solved_return": spec.training.solved_return,
        "final_return": result.episode_return,
        "solved_at_step": result.solved_at_step,
        "mean_approx_kl": kl,
        "seconds": round(time.perf_counter() - start, 1),
        "load_avg": round(os.getloadavg()[0], 2),
    }


def table(path: str) -> tuple[list[str], list[list[str]]]:
    """Columns and rows: one row per env, one column per candidate: mean final return (solved seeds, median steps)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.startswith('{"env"')]
    envs = list(dict.fromkeys(r["env"] for r in rows))
    cands = list(dict.fromkeys(r["candidate"] for r in rows))
    out = []
    for env in envs:
        mine = [r for r in rows if r["env"] == env]
        cells = []
        for cand in cands:
            runs = [r for r in mine if r["candidate"] == cand]
            if not runs:
                cells.append("-")
                continue
            finals = [r["final_return"] for r in runs if r["final_return"] is not None]
            solved = sorted(r["solved_at_step"] for r in runs if r["solved_at_step"] is not None)
            mean = f"{statistics.mean(finals):.1f}" if finals else "n/a"
            at = f", median {statistics.median(solved) / 1000:.0f}k steps" if solved else ""
            cells.append(f"{mean} ({len(solved)}/{len(runs)} solved{at})")
        out.append([f"{env} ({mine[0]['solved_return']}, {mine[0]['budget'] // 1000}k)", *cells])
    return ["env (threshold, budget)", *cands], out


def run_machine(path: str) -> dict:
    """The machine and load the runs recorded on their first line (``cpus``, ``load_avg_before``)."""
    first = json.loads(Path(path).read_text().splitlines()[0])
    load = " / ".join(f"{x:.2f}" for x in first.get("load_avg_before", []))
    return {"machine": f"{first['cpus']} CPUs" if "cpus" in first else "", "load": f"{load} before" if load else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=ORDER)
    parser.add_argument("--candidates", nargs="+", default=["builtin"], choices=list(CANDIDATES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--budget-scale", type=float, default=1.0, help="multiply every env's step budget")
    parser.add_argument("--table", metavar="JSONL", help="print the markdown table of an earlier run's output")
    parser.add_argument("--write", action="store_true", help="with --table: write results/builtin_defaults.json")
    args = parser.parse_args()
    if args.table:
        columns, rows = table(args.table)
        meta = {"command": f"python benchmarks/bench_defaults.py --table {args.table}", **run_machine(args.table)}
        publish("builtin_defaults", columns, rows, meta, args.write, align="l" * len(columns))
        return
    print(json.dumps({"load_avg_before": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}))
    for env in args.envs:
        for candidate in args.candidates:
            for seed in args.seeds:
                print(json.dumps(run(env, candidate, seed, int(VALIDATION_SET[env] * args.budget_scale))), flush=True)


if __name__ == "__main__":
    main()
