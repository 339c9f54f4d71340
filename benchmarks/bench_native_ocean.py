"""Throughput of the Ocean envs: native batched block vs one emulated env per slot (serial backend).

Usage: .venv/bin/python benchmarks/bench_native_ocean.py [--num-envs 256] [--seconds 1.0] [--write]
Prints a Markdown table of agent-steps/s and the native/emulated ratio (same run, same machine);
``--write`` writes it to benchmarks/results/ocean_native.json and re-renders it in RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from results import load, machine, publish

import pufferbox.vector
from pufferbox.registry import Registry

OCEAN = ["squared", "password", "stochastic", "memory", "multiagent", "spaces", "bandit"]


def steps_per_second(spec, num_envs: int, native: bool, seconds: float) -> float:
    venv = pufferbox.vector.make(spec, num_envs=num_envs, native=native)
    venv.async_reset(0)
    venv.recv()
    space = venv.single_action_space
    high = np.atleast_1d(getattr(space, "nvec", getattr(space, "n", 1)))
    actions = np.random.default_rng(0).integers(0, high, size=(16, venv.num_agents, *venv.act_spec.shape))
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        venv.send(actions[steps % 16])
        venv.recv()
        steps += 1
    elapsed = time.perf_counter() - start
    venv.close()
    return steps * venv.num_agents / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--write", action="store_true", help="write the table's JSON and re-render RESULTS.md")
    args = parser.parse_args()
    registry = Registry(only=["ocean"])
    before, rows = load(), []
    for name in OCEAN:
        spec = registry.get(name)
        fast = steps_per_second(spec, args.num_envs, True, args.seconds)
        slow = steps_per_second(spec, args.num_envs, False, args.seconds)
        rows.append([name, f"{fast:,.0f}", f"{slow:,.0f}", f"{fast / slow:.1f}x"])
        print(" | ".join(rows[-1]), flush=True)
    meta = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_native_ocean.py", *sys.argv[1:]]),
        "machine": machine(),
        "load": f"{before} before, {load()} after",
        "peer": "the same envs through the Gymnasium emulator (serial backend)",
    }
    columns = ["env", "native agent-steps/s", "emulated agent-steps/s", "native / emulated"]
    publish("ocean_native", columns, rows, meta, args.write)


if __name__ == "__main__":
    main()
