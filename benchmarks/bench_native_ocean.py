"""Throughput of the Ocean envs: native batched block vs one emulated env per slot (serial backend).

Usage: .venv/bin/python benchmarks/bench_native_ocean.py [--num-envs 256] [--seconds 1.0]
Prints a Markdown table of agent-steps/s and the native/emulated ratio (same run, same machine).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

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
    args = parser.parse_args()
    registry = Registry(only=["ocean"])
    print(f"num_envs={args.num_envs}, load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    print("| env | native agent-steps/s | emulated agent-steps/s | native / emulated |")
    print("|---|---:|---:|---:|")
    for name in OCEAN:
        spec = registry.get(name)
        fast = steps_per_second(spec, args.num_envs, True, args.seconds)
        slow = steps_per_second(spec, args.num_envs, False, args.seconds)
        print(f"| {name} | {fast:,.0f} | {slow:,.0f} | {fast / slow:.1f}x |")


if __name__ == "__main__":
    main()
