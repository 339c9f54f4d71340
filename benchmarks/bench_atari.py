"""Atari stepping: EnvPool 0.8.4 against pufferbox's native block and its Gymnasium path, one run.

Breakout with ALE v5's preprocessing (sticky actions 0.25, 30 no-op starts, frame skip 4 with a
max-pool, grayscale 84x84, 4-frame stack), random actions drawn before timing, steps/s counted over
all envs. Rows:

* EnvPool 0.8.4 ``Breakout-v5`` (its C++ thread pool), in the CleanRL peer venv through
  ``envpool_peer.py`` (create it with ``python -c "import peer_venvs; peer_venvs.setup(['cleanrl'])"``
  from ``benchmarks/``; without it the row is skipped with a note);
* pufferbox's native block (``plugins/atari/pufferbox_atari/native.py``: ale-py's C++ vector env) on
  the serial backend, the default;
* pufferbox's Gymnasium path (``vec.native=false``): serial, and multiprocessing with one worker per core
  (the best backend before the native block).

Each configuration runs ``--rounds`` times, the rows interleaved within a round so that all of them
see the same background load; a cell is the median (min-max). Beside steps/s, the steps per CPU-second
of the stepping process (all its threads; not measured for multiprocessing, whose workers are other
processes). ``--write`` writes the table, the load before and after and the command to
benchmarks/results/atari_stepping.json and re-renders its table in RESULTS.md.

    .venv/bin/python benchmarks/bench_atari.py --seconds 3 --rounds 3 --write
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import peer_venvs
from results import load, machine, publish

import pufferbox.vector
from pufferbox.throughput import bench, random_actions

COLUMNS = ["configuration", "steps/s, median (min-max)", "vs EnvPool", "steps per CPU-second", "vs EnvPool"]
PEER = Path(__file__).with_name("envpool_peer.py")


Timing = tuple[float, float | None]  # (steps/s, steps per CPU-second of the process; None: not measured)


def envpool(num_envs: int, threads: int, seconds: float) -> Timing | None:
    """EnvPool's timing in its venv; None (with a note) when the venv is absent or fails."""
    try:
        python = peer_venvs.python_of(peer_venvs.CLEANRL_VENV)
    except peer_venvs.PeerMissing as exc:
        print(f"note: EnvPool row skipped: {exc}", flush=True)
        return None
    cmd = [str(python), str(PEER), "--num-envs", str(num_envs), "--threads", str(threads), "--seconds", str(seconds)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode:
        print(f"note: EnvPool failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}", flush=True)
        return None
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return float(out["sps"]), float(out["per_cpu_s"])


def in_process(seconds: float, num_envs: int, **make_kwargs: Any) -> Timing:
    """A serial pufferbox vector env's steps/s and steps per CPU-second (its threads included), as
    ``pufferbox bench`` times it: pre-drawn random actions, ``send``/``recv``."""
    with pufferbox.vector.make("breakout", num_envs=num_envs, **make_kwargs) as venv:
        actions = random_actions(venv)
        venv.async_reset(seed=0)
        venv.recv()
        venv.send(actions[0])  # warm-up
        venv.recv()
        steps, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds:
            venv.send(actions[steps % len(actions)])
            venv.recv()
            steps += 1
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return steps * num_envs / wall, steps * num_envs / cpu


def rows(num_envs: int, seconds: float) -> list[tuple[str, Callable[[], Timing | None]]]:
    """The configurations on all cores (as many threads or workers) and on one."""
    n, s, cores = num_envs, seconds, len(os.sched_getaffinity(0))

    def multiprocessing() -> Timing:
        return bench("breakout", "multiprocessing", n, num_workers=cores, seconds=s, native=False)["sps"], None

    return [
        (f"EnvPool 0.8.4 Breakout-v5, {n} envs, {cores} threads", lambda: envpool(n, cores, s)),
        (
            f"pufferbox native block (ale-py C++ threads), {n} envs, {cores} threads",
            lambda: in_process(s, n, env_kwargs={"num_threads": cores}),
        ),
        (f"pufferbox Gymnasium path, multiprocessing, {n} envs / {cores} workers", multiprocessing),
        (f"EnvPool 0.8.4 Breakout-v5, {n} envs, 1 thread", lambda: envpool(n, 1, s)),
        (f"pufferbox native block, {n} envs, 1 thread", lambda: in_process(s, n, env_kwargs={"num_threads": 1})),
        (f"pufferbox Gymnasium path, serial, {n} envs", lambda: in_process(s, n, native=False)),
    ]


def cell(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def ratio(values: list[float], peer: list[float]) -> str:
    return f"{statistics.median(values) / statistics.median(peer):.2f}x" if values and peer else "-"


def table_rows(results: dict[str, list[Timing]]) -> list[list[str]]:
    """The table's rows; each row's ratios are against the EnvPool row of its group (all cores, then one)."""
    labels = list(results)
    out = []
    for i, label in enumerate(labels):
        peer = results[labels[i - i % 3]]
        wall = [t[0] for t in results[label]]
        cpu = [t[1] for t in results[label] if t[1] is not None]
        peer_wall, peer_cpu = [t[0] for t in peer], [t[1] for t in peer if t[1] is not None]
        out.append([label, cell(wall), ratio(wall, peer_wall), cell(cpu), ratio(cpu, peer_cpu)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0, help="timing per configuration and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the table's JSON and re-render RESULTS.md")
    args = parser.parse_args()
    before = load()
    configurations = rows(args.num_envs, args.seconds)
    results: dict[str, list[Timing]] = {label: [] for label, _ in configurations}
    for round_ in range(args.rounds):
        for label, run in configurations:
            timing = run()
            if timing is not None:
                results[label].append(timing)
            print(f"round {round_ + 1}: {label:75s} {timing}", flush=True)
    command = (
        f".venv/bin/python benchmarks/bench_atari.py --num-envs {args.num_envs} --seconds {args.seconds:g} "
        f"--rounds {args.rounds}"
    )
    meta = {
        "command": command,
        "machine": machine(),
        "load": f"{before} before, {load()} after",
        "peer": "EnvPool 0.8.4 (CleanRL's venv)",
    }
    publish("atari_stepping", COLUMNS, table_rows(results), meta, args.write)


if __name__ == "__main__":
    sys.exit(main())
