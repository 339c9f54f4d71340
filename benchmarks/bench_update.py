"""A/B timing of the default policies' PPO update (no envs): torch threads, bf16 autocast, compile.

Each variant builds the family's default agent with the plugin's default hyperparameters, warms
up on one update, then the variants are timed in turns (A B C, A B C, ...) so that background load
falls on all of them alike. Reports the median seconds per update and each variant's ratio to the
first; the load average is printed before and after.

    python benchmarks/bench_update.py breakout --variants t1,t2,t2-bf16 --rounds 3
    python benchmarks/bench_update.py nethack procgen --variants t1,t2

Variant names: ``t<N>`` (N torch threads), optionally ``-bf16`` (``torch.autocast("cpu", bfloat16)``
around the update's forward passes), ``-compile`` (``train.compile``) and ``-contig`` (the policy's 4-D
weights contiguous, instead of ``policy.channels_last``'s default channels-last layout).

``--write NAME`` also writes the table (a row per family, a column per variant) as
benchmarks/results/NAME.json (RESULTS.md shows ``update_bf16`` and ``update_channels_last``) and re-renders it.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from contextlib import nullcontext

import torch
from profile_update import family, random_batch

from pufferbox.train.config import PolicyConfig, TrainConfig, typed
from pufferbox.train.learner import Learner
from pufferbox.train.policies import build_agent


def parse_variant(name: str) -> tuple[int, bool, bool, bool]:
    """``"t2-bf16"`` -> (2 threads, bf16 autocast, no compile, channels-last weights)."""
    parts = name.split("-")
    if not parts[0].startswith("t") or not parts[0][1:].isdigit():
        raise SystemExit(f"--variants: {name!r} must start with t<threads>, e.g. t2 or t2-bf16")
    unknown = set(parts[1:]) - {"bf16", "compile", "contig"}
    if unknown:
        raise SystemExit(f"--variants: {name!r}: unknown option(s) {sorted(unknown)}; use bf16, compile, contig")
    return int(parts[0][1:]), "bf16" in parts, "compile" in parts, "contig" not in parts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("families", nargs="+", help="nethack, breakout, procgen, pong (Ocean Pong at its GPU profile)")
    parser.add_argument("--variants", default="t1,t2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", metavar="NAME", help="write the table as benchmarks/results/NAME.json")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    table = []
    for name in args.families:
        obs_spec, act_spec, policy, defaults = family(name)
        rows, horizon = defaults["vec"]["num_envs"], defaults["train"]["num_steps"]
        batch = random_batch(obs_spec, rows, horizon, int(act_spec.flat_space.n))
        base = build_agent(obs_spec, act_spec, typed(PolicyConfig, defaults["policy"]), policy)
        runs = {}
        for variant in args.variants.split(","):
            threads, bf16, compile_, channels_last = parse_variant(variant)
            tc = typed(TrainConfig, {**defaults["train"], "compile": compile_})
            agent = copy.deepcopy(base)
            agent = agent.to(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
            learner = Learner(agent, tc, compile=compile_)
            runs[variant] = (threads, bf16, learner, [])
        for _ in range(args.rounds + 1):  # the first round warms up (and compiles)
            for _variant, (threads, bf16, learner, times) in runs.items():
                torch.set_num_threads(threads)
                context = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()
                t0 = time.perf_counter()
                with context:
                    learner.update(batch)
                times.append(time.perf_counter() - t0)
        first = None
        print(f"== {name}: batch {rows} x {horizon}, {args.rounds} timed rounds")
        table.append([f"{name} ({rows} x {horizon})"])
        for variant, (_, _, _, times) in runs.items():
            median = statistics.median(times[1:])
            first = first or median
            rate = rows * horizon / median
            print(
                f"{variant:>16}: {median:7.2f} s/update  {first / median:5.2f}x  ({rate:,.0f} samples/s; "
                f"first update, with any compiling: {times[0]:.1f} s)"
            )
            table[-1].append(f"{median:.2f} s/update ({first / median:.2f}x)")
    print(f"load average after: {os.getloadavg()}")
    if args.write:
        from results import load, machine, publish

        command = " ".join(["python", "benchmarks/bench_update.py", *sys.argv[1:]])
        meta = {"command": command, "machine": machine(), "load": f"{load()} (at the end)"}
        variants = args.variants.split(",")
        publish(args.write, ["policy", *variants], table, meta, True)


if __name__ == "__main__":
    main()
