"""Training throughput with an async pool vs synchronous batches, on an env with uneven step times.

The PPO trainer consumes ``send``/``recv``: with a pool (``batch_size < num_envs``) the
policy computes actions for one batch while the other envs keep simulating, and
``recv`` returns whichever envs finished first, so neither the workers nor the model wait
for the slowest env. Same trainer, same env (each step busy-waits an exponential time,
mean 1 ms, std = mean), same total steps; only the vector settings differ.

    .venv/bin/python benchmarks/bench_train_pool.py [--steps 16384] [--hidden 256]

Writes its table to benchmarks/results/train_pool.json and re-renders it in RESULTS.md.
"""

from __future__ import annotations

import argparse
import time

from results import load, machine, publish

from pufferbox.train.config import resolve_config
from pufferbox.train.trainer import Trainer
from pufferbox.vector.testenvs import env_spec_for

COLUMNS = ["vector configuration", "training steps/s", "vs sync multiprocessing"]

CONFIGS = [
    ("serial, 4 envs (sync)", {"backend": "serial", "num_envs": 4, "num_workers": 0, "batch_size": 0}),
    (
        "multiprocessing, 4 envs / 2 workers (sync)",
        {"backend": "multiprocessing", "num_envs": 4, "num_workers": 2, "batch_size": 0},
    ),
    (
        "multiprocessing pool, 8 envs / 4 workers, batch 4",
        {"backend": "multiprocessing", "num_envs": 8, "num_workers": 4, "batch_size": 4},
    ),
    (
        "multiprocessing pool, 8 envs / 8 workers, batch 4",
        {"backend": "multiprocessing", "num_envs": 8, "num_workers": 8, "batch_size": 4},
    ),
]


def measure(vec: dict, steps: int, hidden: int) -> float:
    spec = env_spec_for("uneven", mean_step_s=1e-3)
    config = resolve_config(
        overrides=[
            f"train.total_steps={steps}",
            "train.num_steps=64",
            "train.update_epochs=2",
            "train.checkpoint_interval=0",
            f"policy.hidden_size={hidden}",
        ]
    )
    config["vec"].update(vec)
    trainer = Trainer(spec, config)
    try:
        trainer.train_steps(4 * 64)  # warm-up: workers started, first update done
        start, before = time.perf_counter(), trainer.global_step
        trainer.train_steps(steps)
        return (trainer.global_step - before) / (time.perf_counter() - start)
    finally:
        trainer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=16384)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args()
    rows = []
    for name, vec in CONFIGS:
        sps = measure(vec, args.steps, args.hidden)
        rows.append((name, sps))
        print(f"{name}: {sps:,.0f} training steps/s", flush=True)
    base = rows[1][1]
    meta = {
        "command": f".venv/bin/python benchmarks/bench_train_pool.py --steps {args.steps} --hidden {args.hidden}",
        "machine": machine(),
        "load": f"{load()} (at the end)",
        "peer": "synchronous multiprocessing",
    }
    table = [[name, f"{sps:,.0f}", f"{sps / base:.2f}x"] for name, sps in rows]
    publish("train_pool", COLUMNS, table, meta, True)


if __name__ == "__main__":
    main()
