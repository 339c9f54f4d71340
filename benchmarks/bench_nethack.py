"""NetHack throughput: raw nle against pufferbox serial/multiprocessing and peer vectorizers.

nle's step time depends on the game state (a prompt, a fight and a dead end differ by
several times), so every configuration plays the *same games*: env ``i`` is seeded with
``i`` the way the plugin seeds nle, and at step ``t`` takes ``ACTIONS[t % 1024, i]``
from one table. The flattening overhead is then pufferbox serial against the plugin's raw
env (``glyphs``, ``blstats``, ``message``) stepped in a plain loop, with the same number
of envs; nle writes those leaves straight into pufferbox's rows (the plugin's
``pufferbox_bind_observation_buffers``), and a third row, the plugin env with that hook
hidden, shows what the copies cost. A fourth, the plugin's native block
(``pufferbox_nethack.native``: the nle cores stepped without the gym env's Python, bit for
bit with it), shows what pufferbox gives over the raw env. The four are timed alternately
``--repeats`` times and the medians kept. Multiprocessing rows run emulated envs and the
native block, the latter also with ``main_envs`` (the main process steps a share of the
envs itself, so two processes use the two cores) when the backend has that option.
Peers: Gymnasium SyncVectorEnv/AsyncVectorEnv, SB3 DummyVecEnv/SubprocVecEnv, PufferLib
3.0 when its venv exists (``benchmarks/pufferlib_peer.py``; skipped with a note
otherwise). ``--write`` writes the table to
benchmarks/results/vec_nethack.json and re-renders it in RESULTS.md.

    .venv/bin/python benchmarks/bench_nethack.py --seconds 3 --write
    .venv/bin/python benchmarks/bench_nethack.py --cpu-time   # single-process ratios on a busy machine
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_vectorization import publish_tables, pufferlib_peer

TABLE_ROWS = 1024
NUM_ACTIONS = 23  # NetHackScore-v0's action space


def action_table(num_envs: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, NUM_ACTIONS, (TABLE_ROWS, num_envs))


def make_plugin_env() -> Any:
    from pufferbox_nethack.plugin import make_nethack

    return make_nethack("score")


def make_copying_env(**kwargs: Any) -> Any:
    """The plugin env with its zero-copy hook hidden: the emulator copies the three leaves each step."""
    env = make_plugin_env()
    env.pufferbox_bind_observation_buffers = None  # the emulator binds only when this is callable
    return env


CLOCK = time.perf_counter  # --cpu-time: time.process_time, steps per CPU-second of this process


def timed(step: Callable[[int], int], seconds: float) -> float:
    """Calls ``step(t)`` (returning env steps done) for ``seconds`` after a 0.2 s warm-up; steps/s."""
    t, start, timing = 0, CLOCK(), False
    steps = 0
    while True:
        steps += step(t)
        t += 1
        now = CLOCK()
        if not timing and now - start >= 0.2:
            timing, steps, start = True, 0, now
        elif timing and now - start >= seconds:
            return steps / (now - start)


def raw_loop(num_envs: int, seconds: float, first: int = 0) -> float:
    """The plugin's raw envs ``first..first+num_envs-1`` stepped one after another in a plain loop."""
    envs = [make_plugin_env() for _ in range(num_envs)]
    for i, env in enumerate(envs):
        env.reset(seed=first + i)
    table = action_table(first + num_envs)[:, first:].tolist()

    def step(t: int) -> int:
        for env, action in zip(envs, table[t % TABLE_ROWS]):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        return num_envs

    try:
        return timed(step, seconds)
    finally:
        for env in envs:
            env.close()


def raw_parallel(num_envs: int, seconds: float) -> float:
    """Two raw loops of half the envs each in two processes, no IPC: the two-core ceiling now."""
    import multiprocessing as mp

    half = num_envs // 2
    with mp.get_context("fork").Pool(2) as pool:
        return sum(pool.starmap(raw_loop, [(half, seconds, 0), (half, seconds, half)]))


def pufferbox_loop(num_envs: int, seconds: float, copying: bool = False, native: bool = False, **kwargs: Any) -> float:
    """Emulated envs unless ``native`` (the plugin's native block); ``kwargs`` go to the backend."""
    import pufferbox.vector as vector
    from pufferbox import EnvBuild, EnvSpec

    table = action_table(num_envs)
    rows = [np.ascontiguousarray(row) for row in table]  # sync batches: no indexing in the loop
    env = EnvSpec(name="nethack-copying", build=EnvBuild(binding=make_copying_env)) if copying else "nethack"
    with vector.make(env, num_envs=num_envs, native=native, **kwargs) as venv:
        venv.async_reset(seed=0)
        env_ids = venv.recv()[5]
        pool = venv.batch_envs != num_envs

        def step(t: int) -> int:
            nonlocal env_ids
            venv.send(table[t % TABLE_ROWS, env_ids] if pool else rows[t % TABLE_ROWS])
            env_ids = venv.recv()[5]
            return len(env_ids)

        return timed(step, seconds)


def has_main_envs() -> bool:
    """Whether this checkout's multiprocessing backend lets the main process step envs too."""
    import inspect

    from pufferbox.vector.multiprocessing import MultiprocessingVectorEnv

    return "main_envs" in inspect.signature(MultiprocessingVectorEnv.__init__).parameters


def peer_loop(kind: str, num_envs: int, seconds: float) -> float:
    table = action_table(num_envs)
    if kind.startswith("sb3"):
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        venv = (DummyVecEnv if kind == "sb3-dummy" else SubprocVecEnv)([make_plugin_env] * num_envs)
        venv.seed(0)
        venv.reset()
    else:
        import gymnasium

        cls = gymnasium.vector.SyncVectorEnv if kind == "gym-sync" else gymnasium.vector.AsyncVectorEnv
        venv = cls([make_plugin_env] * num_envs)
        venv.reset(seed=0)

    def step(t: int) -> int:
        venv.step(table[t % TABLE_ROWS])
        return num_envs

    try:
        return timed(step, seconds)
    finally:
        venv.close()


def run(seconds: float, n: int, repeats: int, peers: bool = True, parallel: bool = True) -> list[tuple[str, float]]:
    rows: list[tuple[str, float]] = []

    def add(name: str, value: float) -> None:
        rows.append((name, value))
        print(f"{name:66s} {value:>10,.0f}", flush=True)

    # Alternate the rows whose ratios are the flattening overhead; medians damp the other jobs' noise.
    for envs in (1, n):
        raw, serial, native, copying = [], [], [], []
        for _ in range(repeats):
            raw.append(raw_loop(envs, seconds))
            serial.append(pufferbox_loop(envs, seconds))
            native.append(pufferbox_loop(envs, seconds, native=True))
            copying.append(pufferbox_loop(envs, seconds, copying=True))
        plural = "s" * (envs > 1)
        add(f"raw nle, plugin env, {envs} env{plural} in a loop (median of {repeats})", statistics.median(raw))
        add(f"pufferbox serial, {envs} env{plural}, nle writes the rows (median of {repeats})", statistics.median(serial))
        add(f"pufferbox serial, native nle block, {envs} env{plural} (median of {repeats})", statistics.median(native))
        add(
            f"pufferbox serial, {envs} env{plural}, leaves copied (hook hidden; median of {repeats})",
            statistics.median(copying),
        )
    if not parallel:
        return rows
    add(f"{n} raw envs split over 2 processes, no IPC (the two-core ceiling at this load)", raw_parallel(n, seconds))
    add(
        f"pufferbox multiprocessing, {n} envs / 2 workers",
        pufferbox_loop(n, seconds, backend="multiprocessing", num_workers=2),
    )
    add(
        f"pufferbox multiprocessing, {n} envs / 2 workers, spin_s=0 (always block)",
        pufferbox_loop(n, seconds, backend="multiprocessing", num_workers=2, spin_s=0.0),
    )
    add(
        f"pufferbox multiprocessing, {2 * n} envs / 2 workers",
        pufferbox_loop(2 * n, seconds, backend="multiprocessing", num_workers=2),
    )
    add(
        f"pufferbox pool, {2 * n} envs / 4 workers, batch {n}",
        pufferbox_loop(2 * n, seconds, backend="multiprocessing", num_workers=4, batch_size=n),
    )
    for per_worker in (1, 2, 4):
        add(
            f"pufferbox multiprocessing, native nle block, {2 * per_worker} envs / 2 workers",
            pufferbox_loop(2 * per_worker, seconds, native=True, backend="multiprocessing", num_workers=2),
        )
    if has_main_envs():
        for share in (1, 2, 4):
            add(
                f"pufferbox multiprocessing, native nle block, {2 * share} envs: {share} in the main process + 1 worker",
                pufferbox_loop(2 * share, seconds, native=True, backend="multiprocessing", num_workers=1, main_envs=share),
            )
        add(
            f"pufferbox multiprocessing, {n} envs: {n // 2} in the main process + 1 worker",
            pufferbox_loop(n, seconds, backend="multiprocessing", num_workers=1, main_envs=n // 2),
        )
    if not peers:
        return rows
    add(f"Gymnasium SyncVectorEnv, {n} envs", peer_loop("gym-sync", n, seconds))
    add(f"Gymnasium AsyncVectorEnv, {n} envs", peer_loop("gym-async", n, seconds))
    add(f"SB3 DummyVecEnv, {n} envs", peer_loop("sb3-dummy", n, seconds))
    add(f"SB3 SubprocVecEnv, {n} envs", peer_loop("sb3-subproc", n, seconds))
    for name, value in pufferlib_peer("nethack", seconds, n).items():
        add(name, value)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="timing per configuration")
    parser.add_argument("--num-envs", type=int, default=8, help="envs per vectorized configuration")
    parser.add_argument("--repeats", type=int, default=3, help="alternations of the raw/serial pair")
    parser.add_argument("--skip-peers", action="store_true", help="pufferbox and raw rows only (a quick look)")
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="single-process rows only, timed in CPU seconds of this process: a loaded "
        "machine's ratios (wall-clock rows then mostly measure the other jobs)",
    )
    parser.add_argument("--write", action="store_true", help="write the tables' JSON and re-render RESULTS.md")
    args = parser.parse_args()
    if args.seconds <= 0 or args.num_envs < 2 or args.num_envs % 2 or args.repeats < 1:
        parser.error("--seconds must be positive, --num-envs an even number >= 2, --repeats >= 1")
    load_before = os.getloadavg()
    start = time.perf_counter()
    if args.write and (args.skip_peers or args.cpu_time):
        parser.error("--write needs the whole wall-clock table: drop --skip-peers and --cpu-time")
    if args.cpu_time:
        global CLOCK
        CLOCK = time.process_time
    rows = run(args.seconds, args.num_envs, args.repeats, peers=not args.skip_peers, parallel=not args.cpu_time)
    unit = "steps per CPU-second" if CLOCK is time.process_time else "steps/s"
    command = " ".join([".venv/bin/python", *sys.argv])
    table = [("nethack", name, value) for name, value in rows]
    publish_tables(table, command, load_before, os.getloadavg(), args.write, "vs raw 1 env", unit)
    print(f"(took {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
