"""Time-to-solve and training steps/s on CartPole: `pufferbox train` vs Stable-Baselines3 PPO.

Both run as fresh processes (wall time counts from launch, imports included, to exit) and
stop once the mean return of the last 20 episodes reaches 475. pufferbox uses its default
settings (`pufferbox train cartpole`); SB3 uses the RL-Zoo CartPole-v1 hyperparameters.

    .venv/bin/python benchmarks/bench_train_cartpole.py [--seeds 1 2 3] [--skip-sb3]

Prints one JSON line per run and a summary with the medians and the ratios; ``--write`` also writes the
table to benchmarks/results/cartpole_sb3.json and re-renders it in RESULTS.md (needs the SB3 runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUFFERBOX = str(Path(sys.executable).with_name("pufferbox"))

SB3_SCRIPT = r"""
import json, sys, time
import numpy as np
import torch
torch.set_num_threads(int(sys.argv[3]))  # as pufferbox does (1); torch's default (2 here) spins under load
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

seed, budget = int(sys.argv[1]), int(sys.argv[2])
def linear(start):
    return lambda progress: progress * start

class StopOnSolve(BaseCallback):
    solved_step = None
    def _on_step(self):
        returns = [ep["r"] for ep in list(self.model.ep_info_buffer)[-20:]]
        if len(returns) == 20 and np.mean(returns) >= 475:
            self.solved_step = self.num_timesteps
            return False
        return True

# RL-Zoo hyperparameters for CartPole-v1 (rl-baselines3-zoo hyperparams/ppo.yml)
env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
            ent_coef=0.0, learning_rate=linear(1e-3), clip_range=linear(0.2), seed=seed, device="cpu", verbose=0)
callback = StopOnSolve()
start = time.perf_counter()
model.learn(total_timesteps=budget, callback=callback)
train_time = time.perf_counter() - start
print(json.dumps({"solved_step": callback.solved_step, "steps": model.num_timesteps,
                  "train_sps": model.num_timesteps / train_time}))
"""


def run_pufferbox(seed: int, workdir: Path, sets: tuple[str, ...] = ()) -> dict:
    run_dir = workdir / f"pufferbox-{seed}"
    start = time.perf_counter()
    proc = subprocess.run(
        [PUFFERBOX, "train", "cartpole", "--seed", str(seed), "--run-dir", str(run_dir), "--no-tensorboard"]
        + [arg for item in sets for arg in ("--set", item)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"pufferbox train failed:\n{proc.stdout}\n{proc.stderr}")
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    last = metrics[-1]
    solved = next((m for m in metrics if m["solved"]), None)
    return {
        "tool": "pufferbox",
        "seed": seed,
        "solved": solved is not None,
        "wall_s": round(wall, 2),
        "solved_step": solved and solved["global_step"],
        "train_sps": last["sps"],
    }


def run_sb3(seed: int, budget: int, threads: int) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", SB3_SCRIPT, str(seed), str(budget), str(threads)], capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"SB3 failed:\n{proc.stderr}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "tool": "sb3",
        "seed": seed,
        "solved": out["solved_step"] is not None,
        "wall_s": round(wall, 2),
        "solved_step": out["solved_step"],
        "train_sps": round(out["train_sps"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--skip-sb3", action="store_true")
    parser.add_argument(
        "--set", action="append", default=[], help="KEY=VALUE passed to pufferbox (e.g. train.torch_threads=2)"
    )
    parser.add_argument("--sb3-budget", type=int, default=300_000)
    parser.add_argument("--sb3-threads", type=int, default=1, help="torch threads for SB3 (pufferbox uses 1)")
    parser.add_argument("--write", action="store_true", help="write the table's JSON and re-render RESULTS.md")
    args = parser.parse_args()
    if args.write and args.skip_sb3:
        parser.error("--write compares with SB3: drop --skip-sb3")
    load_before = os.getloadavg()
    results: dict[str, list[dict]] = {"pufferbox": [], "sb3": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:  # interleaved, so both see the same background load
            for tool in ("pufferbox", "sb3"):
                if tool == "sb3" and args.skip_sb3:
                    continue
                row = (
                    run_pufferbox(seed, Path(tmp), tuple(args.set))
                    if tool == "pufferbox"
                    else run_sb3(seed, args.sb3_budget, args.sb3_threads)
                )
                results[tool].append(row)
                print(json.dumps(row), flush=True)
    summary = {
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    for tool, rows in results.items():
        if rows:
            summary[tool] = {
                "solved": f"{sum(r['solved'] for r in rows)}/{len(rows)}",
                "median_wall_s": statistics.median(r["wall_s"] for r in rows),
                "median_train_sps": statistics.median(r["train_sps"] for r in rows),
            }
    if results["sb3"] and results["pufferbox"]:
        summary["time_to_solve_speedup"] = round(summary["sb3"]["median_wall_s"] / summary["pufferbox"]["median_wall_s"], 2)
        summary["train_sps_ratio"] = round(summary["pufferbox"]["median_train_sps"] / summary["sb3"]["median_train_sps"], 1)
    print(json.dumps(summary, indent=2))
    if args.write:
        publish_summary(summary)


def publish_summary(summary: dict) -> None:
    """The RESULTS.md table: each tool's solved seeds, median wall time to solve and training steps/s."""
    from results import machine, publish

    p, s = summary["pufferbox"], summary["sb3"]
    rows = [
        ["pufferbox", p["solved"], f"{p['median_wall_s']:.2f}", f"{p['median_train_sps']:,.0f}"],
        ["SB3 PPO (RL-Zoo)", s["solved"], f"{s['median_wall_s']:.2f}", f"{s['median_train_sps']:,.0f}"],
        ["pufferbox / SB3", "", f"{summary['time_to_solve_speedup']:.2f}x faster to solve"]
        + [f"{summary['train_sps_ratio']}x"],
    ]
    load = " / ".join(f"{x:.2f}" for x in summary["load_avg_before"])
    meta = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_train_cartpole.py", *sys.argv[1:]]),
        "machine": machine(),
        "load": f"{load} before, {' / '.join(f'{x:.2f}' for x in summary['load_avg_after'])} after",
        "peer": "SB3 PPO with RL-Zoo hyperparameters",
    }
    columns = ["trainer", "solved", "median wall s, launch → solved", "median training steps/s"]
    publish("cartpole_sb3", columns, rows, meta, True)


if __name__ == "__main__":
    main()
