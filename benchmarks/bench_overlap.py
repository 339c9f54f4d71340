"""Exact on-policy PPO vs overlapped PPO (``train.overlap``): sample efficiency and training steps/s.

Three arms on the same env, config and seeds: ``exact`` (collect, then update), ``overlap+vtrace``
(rollout k+1 collected with the policy one update old while the learner updates on k, V-trace
targets) and ``overlap+none`` (the same, PPO's clipped ratio as the only lag correction).

* Sample efficiency (independent of machine load): env steps until the mean of the last
  ``solve_window`` episodes reaches the env's ``solved_return`` (cartpole, an Ocean env), over seeds.
* Throughput (load-dependent; the load average is printed with each row): training steps/s after a
  warm-up update, and the final mean return, on fixed short budgets (cartpole, breakout, nethack).

    .venv/bin/python benchmarks/bench_overlap.py --part efficiency --seeds 3            # cartpole + ocean
    .venv/bin/python benchmarks/bench_overlap.py --part speed --backend multiprocessing  # needs ale-py, nle

Writes its tables to benchmarks/results/overlap_efficiency.json and overlap_throughput.json and re-renders
them in RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from results import load, machine, publish

from pufferbox.registry import get_registry
from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer

EFFICIENCY_COLUMNS = ["env", "arm", "steps to threshold per seed", "median", "solved"]
SPEED_COLUMNS = ["env", "arm", "steps", "training steps/s", "final mean return", "load avg (1 min)"]
ARMS = {
    "exact": ["train.overlap=false"],
    "overlap+vtrace": ["train.overlap=true", "train.lag_correction=vtrace"],
    "overlap+none": ["train.overlap=true", "train.lag_correction=none"],
}
EFFICIENCY = {"cartpole": 500_000, "stochastic": 300_000}  # env: step cap (unsolved past it)
SPEED = {"cartpole": 65_536, "breakout": 16_384, "nethack": 16_384}  # env: step budget


def run(env: str, arm: str, seed: int, steps: int, vec: list[str], solve: bool) -> dict:
    spec = get_registry().get(env)
    overrides = [
        "train.checkpoint_interval=0",
        f"train.seed={seed}",
        f"train.total_steps={steps}",
        f"train.stop_on_solve={str(solve).lower()}",
        *vec,
        *ARMS[arm],
    ]
    trainer = Trainer(spec, resolve_config(spec.training.config, overrides=overrides))
    try:
        warm = trainer.train_update(trainer.budget_horizon())["global_step"]  # workers started, first update done
        start = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - start
    finally:
        trainer.close()
    return {
        "env": env,
        "arm": arm,
        "seed": seed,
        "solved_at": result.solved_at_step,
        "steps": result.global_step,
        "return": result.episode_return,
        "sps": (result.global_step - warm) / max(seconds, 1e-9),
        "load": os.getloadavg()[0],
    }


def fmt(x: float | None, spec: str = ",.0f") -> str:
    return "-" if x is None else format(x, spec)


def efficiency(seeds: int, vec: list[str], envs: list[str]) -> list[list[str]]:
    lines = []
    for env, cap in EFFICIENCY.items():
        if envs and env not in envs:
            continue
        for arm in ARMS:
            rows = [run(env, arm, seed, cap, vec, solve=True) for seed in range(1, seeds + 1)]
            for r in rows:
                print(r, flush=True)
            solved = [r["solved_at"] for r in rows if r["solved_at"] is not None]
            per_seed = ", ".join(fmt(r["solved_at"]) if r["solved_at"] is not None else f">{cap:,}" for r in rows)
            median = statistics.median(solved) if len(solved) == len(rows) else None
            lines.append([env, arm, per_seed, fmt(median), f"{len(solved)}/{len(rows)}"])
    return lines


def speed(vec: list[str], envs: list[str]) -> list[list[str]]:
    lines = []
    for env, steps in SPEED.items():
        if envs and env not in envs:
            continue
        for arm in ARMS:
            r = run(env, arm, 1, steps, vec, solve=False)
            print(r, flush=True)
            lines.append([env, arm, f"{r['steps']:,}", fmt(r["sps"]), fmt(r["return"], ".2f"), f"{r['load']:.2f}"])
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["efficiency", "speed", "both"], default="both")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--backend", default="multiprocessing")
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--envs", nargs="*", default=[], help="only these envs (default: all of the part's)")
    args = parser.parse_args()
    vec = [f"vec.backend={args.backend}"] + (
        [f"vec.num_workers={args.num_workers}"] if args.backend == "multiprocessing" else []
    )
    command = (
        f".venv/bin/python benchmarks/bench_overlap.py --part {args.part} --seeds {args.seeds} --backend {args.backend}"
        + (f" --envs {' '.join(args.envs)}" if args.envs else "")
    )
    meta = {"command": command, "machine": machine(), "peer": "exact PPO (`train.overlap=false`)"}
    if args.part in ("efficiency", "both"):
        rows = efficiency(args.seeds, vec, args.envs)
        publish("overlap_efficiency", EFFICIENCY_COLUMNS, rows, {**meta, "load": f"{load()} (at the end)"}, True, "lllrr")
    if args.part in ("speed", "both"):
        rows = speed(vec, args.envs)
        publish("overlap_throughput", SPEED_COLUMNS, rows, {**meta, "load": f"{load()} (at the end)"}, True, "llrrrr")


if __name__ == "__main__":
    main()
