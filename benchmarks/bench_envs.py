"""Throughput of the environment plugins: the raw env, pufferbox's backends and peers, one run.

For NetHack, Breakout, LunarLander, BipedalWalker, MiniGrid DoorKey, Crafter, MuJoCo Hopper
and Humanoid, MiniHack Room-5x5, Procgen bigfish and two PettingZoo envs: a raw single-env loop
(random actions, reset on episode end), Gymnasium's vectorizers as peers (single-agent
envs), Procgen's own batched gym3 env, and pufferbox through ``pufferbox.throughput.bench``
(serial, multiprocessing, native). Multi-agent rows count agent steps. Writes its table to
benchmarks/results/env_plugins.json with the machine, the load and the command, and re-renders it in
RESULTS.md (``--no-write``: print only).

    .venv/bin/python benchmarks/bench_envs.py --seconds 1.5
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from results import load, machine, publish, timed

from pufferbox.registry import get_registry
from pufferbox.throughput import bench

COLUMNS = ["env", "configuration", "steps/s", "vs the env's first row"]


def raw_gymnasium(name: str, seconds: float) -> float:
    env = get_registry().get(name).make_raw()
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(64)]
    t = [0]

    def step() -> int:
        _, _, terminated, truncated, _ = env.step(actions[t[0] % 64])
        t[0] += 1
        if terminated or truncated:
            env.reset()
        return 1

    sps = timed(step, seconds)
    env.close()
    return sps


def raw_parallel(name: str, seconds: float) -> float:
    env = get_registry().get(name).make_raw()
    env.reset(seed=0)
    rng = np.random.default_rng(0)

    def step() -> int:
        if not env.agents:
            env.reset()
        actions = {a: int(rng.integers(env.action_space(a).n)) for a in env.agents}
        env.step(actions)
        return len(actions)

    sps = timed(step, seconds)
    env.close()
    return sps


def gymnasium_vector(name: str, num_envs: int, seconds: float, asynchronous: bool) -> float:
    spec = get_registry().get(name)
    fns = [spec.make_raw for _ in range(num_envs)]
    venv = gymnasium.vector.AsyncVectorEnv(fns) if asynchronous else gymnasium.vector.SyncVectorEnv(fns)
    venv.reset(seed=0)
    venv.action_space.seed(0)
    actions = [venv.action_space.sample() for _ in range(16)]
    t = [0]

    def step() -> int:
        venv.step(actions[t[0] % 16])
        t[0] += 1
        return num_envs

    sps = timed(step, seconds)
    venv.close()
    return sps


def procgen_gym3(game: str, num_envs: int, seconds: float) -> float:
    from procgen import ProcgenGym3Env

    env = ProcgenGym3Env(num=num_envs, env_name=game, distribution_mode="easy", rand_seed=0)
    actions = np.random.default_rng(0).integers(15, size=(16, num_envs)).astype(np.int32)
    t = [0]

    def step() -> int:
        env.act(actions[t[0] % 16])
        env.observe()
        t[0] += 1
        return num_envs

    sps = timed(step, seconds)
    env.close()
    return sps


def random_return(name: str, episodes: int, seed: int = 0) -> tuple[float, float]:
    """Mean and standard deviation of the episode return of uniformly random actions (a learning baseline)."""
    env = get_registry().get(name).make_raw()
    env.action_space.seed(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns)), float(np.std(returns))


def puffer(name: str, seconds: float, **kwargs: Any) -> float:
    return bench(name, seconds=seconds, **kwargs)["sps"]


def workloads(seconds: float) -> dict[str, list[tuple[str, Callable[[], float]]]]:
    s = seconds
    single = {
        "nethack": "NetHackScore-v0 (nle 1.3.0)",
        "breakout": "ALE Breakout-v5 + preprocessing",
        "lunarlander": "LunarLander-v3 (Box2D)",
        "bipedalwalker": "BipedalWalker-v3 (Box2D)",
        "minigrid/doorkey-5x5": "MiniGrid-DoorKey-5x5-v0 + mission bytes",
        "crafter": "Crafter (64x64 frames)",
        "mujoco/hopper": "Hopper-v5 (MuJoCo)",
        "mujoco/humanoid": "Humanoid-v5 (MuJoCo)",
        "minihack/room-5x5": "MiniHack-Room-5x5-v0 (nle 1.3.0)",
    }
    out: dict[str, list[tuple[str, Callable[[], float]]]] = {}
    for name, what in single.items():
        out[name] = [
            (f"raw {what}, single env loop", lambda n=name: raw_gymnasium(n, s)),
            ("Gymnasium SyncVectorEnv, 8 envs", lambda n=name: gymnasium_vector(n, 8, s, False)),
            ("Gymnasium AsyncVectorEnv, 2 envs (a process each)", lambda n=name: gymnasium_vector(n, 2, s, True)),
            ("pufferbox serial, 8 envs", lambda n=name: puffer(n, s, backend="serial", num_envs=8)),
            (
                "pufferbox multiprocessing, 8 envs / 2 workers",
                lambda n=name: puffer(n, s, backend="multiprocessing", num_envs=8, num_workers=2),
            ),
        ]
    # NetHack's vector envs default to the native block (nle cores stepped directly): label
    # those rows, and time the emulated gym env too.
    out["nethack"][3:] = [
        ("pufferbox serial, native nle block, 8 envs", lambda: puffer("nethack", s, backend="serial", num_envs=8)),
        (
            "pufferbox serial, emulated gym env, 8 envs",
            lambda: puffer("nethack", s, backend="serial", num_envs=8, native=False),
        ),
        (
            "pufferbox multiprocessing, native nle block, 8 envs / 2 workers",
            lambda: puffer("nethack", s, backend="multiprocessing", num_envs=8, num_workers=2),
        ),
    ]
    # Atari's vector envs default to the native block (ale-py's C++ vector env, one thread per core);
    # the Gymnasium path is vec.native=false. EnvPool's rows are benchmarks/bench_atari.py.
    out["breakout"][3:] = [
        (
            "pufferbox serial, native block (ale-py C++ threads), 8 envs",
            lambda: puffer("breakout", s, backend="serial", num_envs=8),
        ),
        (
            "pufferbox serial, Gymnasium path, 8 envs",
            lambda: puffer("breakout", s, backend="serial", num_envs=8, native=False),
        ),
        (
            "pufferbox multiprocessing, Gymnasium path, 8 envs / 2 workers",
            lambda: puffer("breakout", s, backend="multiprocessing", num_envs=8, num_workers=2, native=False),
        ),
    ]
    out["procgen/bigfish"] = [
        ("raw: pufferbox's one-env Gymnasium adapter, single env loop", lambda: raw_gymnasium("procgen/bigfish", s)),
        ("Gymnasium SyncVectorEnv over the adapter, 8 envs", lambda: gymnasium_vector("procgen/bigfish", 8, s, False)),
        ("procgen's own batched gym3 env, 64 envs (no copies, no infos)", lambda: procgen_gym3("bigfish", 64, s)),
        (
            "pufferbox serial, emulated adapters, 8 envs",
            lambda: puffer("procgen/bigfish", s, backend="serial", num_envs=8, native=False),
        ),
        (
            "pufferbox serial, native gym3 block, 64 envs",
            lambda: puffer("procgen/bigfish", s, backend="serial", num_envs=64),
        ),
        (
            "pufferbox multiprocessing, native, 128 envs / 2 workers",
            lambda: puffer("procgen/bigfish", s, backend="multiprocessing", num_envs=128, num_workers=2),
        ),
    ]
    for name in ("mpe/simple_spread", "knights_archers_zombies"):
        out[name] = [
            ("raw PettingZoo ParallelEnv loop (agent steps)", lambda n=name: raw_parallel(n, s)),
            ("pufferbox serial, 8 envs", lambda n=name: puffer(n, s, backend="serial", num_envs=8)),
            (
                "pufferbox multiprocessing, 8 envs / 2 workers",
                lambda n=name: puffer(n, s, backend="multiprocessing", num_envs=8, num_workers=2),
            ),
        ]
    return out


def table_rows(results: dict[str, list[tuple[str, float]]]) -> list[list[str]]:
    """One row per configuration, each env's ratios against its first row."""
    return [[env, label, f"{sps:,.0f}", f"{sps / rows[0][1]:.2f}x"] for env, rows in results.items() for label, sps in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="timing per configuration")
    parser.add_argument("--only", nargs="*", default=None, help="envs to run (default: all)")
    parser.add_argument("--no-write", action="store_true", help="print only: write no JSON, leave RESULTS.md alone")
    parser.add_argument(
        "--random-return",
        metavar="ENV",
        default=None,
        help="only print the mean episode return of random actions on ENV (baseline for curves)",
    )
    parser.add_argument("--episodes", type=int, default=50, help="episodes for --random-return")
    args = parser.parse_args()
    if args.random_return:
        mean, std = random_return(args.random_return, args.episodes)
        print(f"{args.random_return}: random actions, {args.episodes} episodes: return {mean:.2f} +- {std:.2f}")
        return
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    load_before = load()
    results: dict[str, list[tuple[str, float]]] = {}
    for env, rows in workloads(args.seconds).items():
        if args.only and env not in args.only:
            continue
        results[env] = []
        for label, run in rows:
            sps = run()
            print(f"{env:28s} {label:62s} {sps:12,.0f}", flush=True)
            results[env].append((label, sps))
    command = ".venv/bin/python benchmarks/bench_envs.py --seconds " + f"{args.seconds:g}"
    meta = {
        "command": command,
        "machine": f"{machine()}, other jobs sharing the cores",
        "load": f"{load_before} before, {load()} after",
        "peer": "Gymnasium SyncVectorEnv and AsyncVectorEnv",
    }
    publish("env_plugins", COLUMNS, table_rows(results), meta, not args.no_write and not args.only, align="llrr")


if __name__ == "__main__":
    main()
