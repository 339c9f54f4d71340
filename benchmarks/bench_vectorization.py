"""Vectorization throughput: pufferbox backends against Gymnasium, SB3 and PufferLib 3.0, one run.

Workloads: gymnasium CartPole (per-step overhead), an env whose step time varies widely
(exponential, mean 1 ms: a pool must win), and the native batched CartPole on one core
(its C kernel, its numpy reference kernel, PufferLib's C CartPole; ``--workloads native``
runs just that section). NetHack is ``benchmarks/bench_nethack.py``. PufferLib runs in its own venv
(``$PUFFERLIB_VENV``, default the one ``bench_train_peers.py --setup`` builds) through ``pufferlib_peer.py``;
without that venv its rows are skipped with a printed note. ``--write`` writes the tables to
benchmarks/results/vec_cartpole.json, vec_uneven.json and vec_native.json (with the load average and the
exact command) and re-renders them in RESULTS.md.

    .venv/bin/python benchmarks/bench_vectorization.py --seconds 2 --write
    .venv/bin/python benchmarks/bench_vectorization.py --workloads native --seconds 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium
import numpy as np
import peer_venvs
from results import machine, publish, timed

from pufferbox.throughput import bench
from pufferbox.vector.testenvs import UnevenStepEnv, env_spec_for

PEER = Path(__file__).with_name("pufferlib_peer.py")


def pufferlib_peer(workload: str, seconds: float, num_envs: int) -> dict[str, float]:
    """PufferLib 3.0's rows for ``workload``, run in its own venv; {} with a note when absent."""
    python = Path(os.environ.get("PUFFERLIB_VENV") or peer_venvs.PUFFERLIB_VENV) / "bin" / "python"
    if not python.exists():
        print(f"note: PufferLib peer skipped: {python} not found (build it with bench_train_peers.py --setup)", flush=True)
        return {}
    cmd = [str(python), str(PEER), workload, "--seconds", str(seconds), "--num-envs", str(num_envs)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"note: PufferLib peer failed on {workload}: {tail}", flush=True)
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


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


def raw_parallel(make: Callable[[], gymnasium.Env], processes: int, seconds: float) -> float:
    """Summed steps/s of ``processes`` independent raw env loops: the cores' limit under this load."""
    import multiprocessing as mp

    with mp.get_context("fork").Pool(processes) as pool:
        return sum(pool.starmap(raw_single, [(make, seconds)] * processes))


def step_vector(venv, n: int, seconds: float) -> float:
    """Steps/s of a Gymnasium or SB3 vector env of ``n`` CartPole-like envs under fixed random actions."""
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


def gym_vector(kind: str, make: Callable[[], gymnasium.Env], n: int, seconds: float) -> float:
    cls = gymnasium.vector.SyncVectorEnv if kind == "sync" else gymnasium.vector.AsyncVectorEnv
    venv = cls([make] * n)
    venv.reset(seed=0)
    return step_vector(venv, n, seconds)


def sb3_vector(kind: str, make: Callable[[], gymnasium.Env], n: int, seconds: float) -> float:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    venv = (DummyVecEnv if kind == "dummy" else SubprocVecEnv)([make] * n)
    venv.reset()
    return step_vector(venv, n, seconds)


def make_cartpole() -> gymnasium.Env:
    return gymnasium.make("CartPole-v1")


def make_uneven() -> gymnasium.Env:
    return UnevenStepEnv(mean_step_s=1e-3)


def pb(env, seconds: float, **kwargs) -> float:
    return bench(env, seconds=seconds, **kwargs)["sps"]


def native_direct(num_envs: int, seconds: float, kernel: str = "c", wrapper: bool = True) -> float:
    """The CartPole block's own vec_step in a loop (no backend, one core); ``wrapper=False`` times
    the compiled kernel's step() alone (no Python checks, no Episodes): what bounds the block."""
    from pufferbox_classic.native import CartPoleNative

    block = CartPoleNative(num_envs, kernel=kernel)
    block.vec_reset(seed=0)
    actions = [np.random.default_rng(i).integers(0, 2, num_envs) for i in range(16)]
    step_fn = block.vec_step if wrapper else block.kernel.step
    t = [0]

    def step() -> int:
        t[0] += 1
        step_fn(actions[t[0] % 16])
        return num_envs

    return timed(step, seconds)


def run(seconds: float, workloads: list[str]) -> list[tuple[str, str, float]]:
    s = seconds
    rows: list[tuple[str, str, float]] = []

    def add(workload: str, name: str, fn: Callable[[], float]) -> None:
        if workload not in workloads:
            return
        value = fn()
        rows.append((workload, name, value))
        print(f"{workload:10s} {name:55s} {value:>14,.0f}", flush=True)

    def peers(workload: str, num_envs: int) -> None:
        if workload in workloads:
            for name, value in pufferlib_peer(workload, s, num_envs).items():
                add(workload, name, lambda value=value: value)

    w = "cartpole"
    add(w, "raw gymnasium CartPole-v1, single env loop", lambda: raw_single(make_cartpole, s))
    add(w, "Gymnasium SyncVectorEnv, 8 envs", lambda: gym_vector("sync", make_cartpole, 8, s))
    add(w, "Gymnasium AsyncVectorEnv, 2 envs", lambda: gym_vector("async", make_cartpole, 2, s))
    add(w, "SB3 DummyVecEnv, 8 envs", lambda: sb3_vector("dummy", make_cartpole, 8, s))
    add(w, "SB3 SubprocVecEnv, 2 envs", lambda: sb3_vector("subproc", make_cartpole, 2, s))
    add(w, "pufferbox serial, emulated, 8 envs", lambda: pb("cartpole", s, num_envs=8, native=False))
    add(
        w,
        "pufferbox multiprocessing, emulated, 16 envs / 2 workers",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=16, num_workers=2, native=False),
    )
    add(
        w,
        "pufferbox multiprocessing, emulated, 16 envs / 2 workers, spin_s=0 (always block)",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=16, num_workers=2, native=False, spin_s=0.0),
    )
    add(
        w,
        "pufferbox multiprocessing, emulated, 16 envs / 1 worker",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=16, num_workers=1, native=False),
    )
    add(
        w,
        "pufferbox multiprocessing, emulated, 32 envs / 2 workers",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=32, num_workers=2, native=False),
    )
    # main_envs: the main process steps its share while 1 worker steps the rest (2 processes, 2 cores).
    add(
        w,
        "pufferbox multiprocessing, emulated, 16 envs: main process 8 + 1 worker 8",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=16, num_workers=1, main_envs=8, native=False),
    )
    add(
        w,
        "pufferbox multiprocessing, emulated, 32 envs: main process 16 + 1 worker 16",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=32, num_workers=1, main_envs=16, native=False),
    )
    add(w, "pufferbox serial, native block (C kernel), 4096 envs", lambda: pb("cartpole", s, num_envs=4096))
    add(
        w,
        "pufferbox multiprocessing, native, 8192 envs / 2 workers",
        lambda: pb("cartpole", s, backend="multiprocessing", num_envs=8192, num_workers=2),
    )
    peers(w, 8)

    w = "uneven"  # 1 ms mean step, exponential (100% std); two cores: 2,000 steps/s at most
    uneven = env_spec_for("uneven", mean_step_s=1e-3)
    add(w, "raw single env loop", lambda: raw_single(make_uneven, s))
    add(
        w,
        "2 raw env loops in 2 processes, no IPC (the two-core limit at this load)",
        lambda: raw_parallel(make_uneven, 2, s),
    )
    add(w, "Gymnasium AsyncVectorEnv, 2 envs", lambda: gym_vector("async", make_uneven, 2, s))
    add(w, "SB3 SubprocVecEnv, 2 envs", lambda: sb3_vector("subproc", make_uneven, 2, s))
    add(w, "Gymnasium AsyncVectorEnv, 4 envs", lambda: gym_vector("async", make_uneven, 4, s))
    add(w, "SB3 SubprocVecEnv, 4 envs", lambda: sb3_vector("subproc", make_uneven, 4, s))
    add(
        w,
        "pufferbox multiprocessing, 2 envs / 2 workers (sync)",
        lambda: pb(uneven, s, backend="multiprocessing", num_envs=2, num_workers=2),
    )
    add(
        w,
        "pufferbox pool, 4 envs / 4 workers, batch 2",
        lambda: pb(uneven, s, backend="multiprocessing", num_envs=4, num_workers=4, batch_size=2),
    )
    add(
        w,
        "pufferbox pool, 4 envs / 4 workers, batch 2, zero-copy",
        lambda: pb(uneven, s, backend="multiprocessing", num_envs=4, num_workers=4, batch_size=2, zero_copy=True),
    )
    add(
        w,
        "pufferbox pool, 8 envs / 8 workers, batch 2",
        lambda: pb(uneven, s, backend="multiprocessing", num_envs=8, num_workers=8, batch_size=2),
    )
    peers(w, 2)

    w = "native"  # one core; PufferLib's C CartPole first, so "vs first row" is the ratio to it
    peers(w, 4096)
    add(w, "pufferbox CartPole block, C kernel, 4096 envs, direct", lambda: native_direct(4096, s))
    add(w, "pufferbox CartPole block, C kernel, 16384 envs, direct", lambda: native_direct(16384, s))
    add(
        w,
        "pufferbox C kernel's step() alone (no wrapper, no infos), 4096 envs",
        lambda: native_direct(4096, s, wrapper=False),
    )
    add(
        w,
        "pufferbox CartPole block, numpy reference kernel, 4096 envs, direct",
        lambda: native_direct(4096, s, kernel="numpy"),
    )
    add(
        w,
        "pufferbox CartPole block, numpy reference kernel, 16384 envs, direct",
        lambda: native_direct(16384, s, kernel="numpy"),
    )
    add(w, "pufferbox serial backend, native C kernel, 4096 envs", lambda: pb("cartpole", s, num_envs=4096))
    add(w, "pufferbox serial backend, native C kernel, 16384 envs", lambda: pb("cartpole", s, num_envs=16384))
    return rows


PEERS = {
    "cartpole": "Gymnasium 1.2 vector envs, SB3 VecEnvs, PufferLib 3.0",
    "uneven": "Gymnasium AsyncVectorEnv, SB3 SubprocVecEnv, PufferLib 3.0",
    "native": "PufferLib 3.0's C CartPole",
    "nethack": "Gymnasium vector envs, SB3 VecEnvs, PufferLib 3.0",
}


def loads_text(before: tuple, after: tuple) -> str:
    return f"{' / '.join(f'{x:.2f}' for x in before)} before, {' / '.join(f'{x:.2f}' for x in after)} after"


def publish_tables(
    rows: list[tuple[str, str, float]],
    command: str,
    load_before: tuple,
    load_after: tuple,
    write: bool,
    ratio: str,
    unit: str = "steps/s",
) -> None:
    """One table per workload (``results/vec_<workload>.json``), each row's ratio against its first row."""
    meta = {"command": command, "machine": machine(), "load": loads_text(load_before, load_after)}
    for workload in dict.fromkeys(r[0] for r in rows):
        group = [r for r in rows if r[0] == workload]
        base = group[0][2]
        table = [[name, f"{value:,.0f}", f"{value / base:.2f}x"] for _, name, value in group]
        columns = ["configuration", unit, ratio]
        publish(f"vec_{workload}", columns, table, {**meta, "peer": PEERS.get(workload, "")}, write)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per configuration")
    parser.add_argument(
        "--workloads", default="cartpole,uneven,native", help="comma-separated subset of cartpole, uneven, native"
    )
    parser.add_argument("--write", action="store_true", help="write the tables' JSON and re-render RESULTS.md")
    args = parser.parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = set(workloads) - {"cartpole", "uneven", "native"}
    if unknown or args.seconds <= 0:
        parser.error(f"--workloads takes cartpole, uneven, native (got {sorted(unknown)}); --seconds must be > 0")
    load_before = os.getloadavg()
    rows = run(args.seconds, workloads)
    command = " ".join([".venv/bin/python", *sys.argv])
    publish_tables(rows, command, load_before, os.getloadavg(), args.write, "vs first row")


if __name__ == "__main__":
    main()
