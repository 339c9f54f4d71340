"""PufferLib 3.0 as a benchmark peer; runs in PufferLib's own venv and prints JSON {name: steps/s}.

PufferLib needs gymnasium<=0.29.1, so it cannot share pufferbox's venv:
``benchmarks/bench_vectorization.py`` and ``benchmarks/bench_nethack.py`` run this file
with ``$PUFFERLIB_VENV/bin/python`` (default the venv ``bench_train_peers.py --setup`` builds under
``/tmp/pufferbox-peers``). It imports nothing from pufferbox: the uneven-step env is re-declared here
with the same distribution as ``pufferbox.vector.testenvs.UnevenStepEnv``.

    /tmp/pufferbox-peers/pufferlib/bin/python benchmarks/pufferlib_peer.py cartpole --seconds 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np


class UnevenStepEnv(gymnasium.Env):
    """Busy-waits an exponential time per step (mean ``mean_step_s``, std = mean)."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (4,), dtype=np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, mean_step_s: float = 1e-3, episode_length: int = 100):
        self.mean_step_s, self.episode_length, self.t = mean_step_s, episode_length, 0

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        end = time.perf_counter() + self.np_random.exponential(self.mean_step_s)
        while time.perf_counter() < end:
            pass
        self.t += 1
        return np.zeros(4, dtype=np.float32), 1.0, False, self.t >= self.episode_length, {}


class SeededNetHack(gymnasium.Wrapper):
    """Seeds nle's game RNGs from ``reset(seed=...)`` exactly as the pufferbox plugin does."""

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if seed is not None:
            core, disp = np.random.SeedSequence(seed).generate_state(2, np.uint64).tolist()
            self.env.unwrapped.seed(core=core, disp=disp, reseed=False)
        return self.env.reset()


def make_nethack() -> gymnasium.Env:
    """NetHackScore-v0 as bench_nethack.py steps it; imports nle where it runs (Ray's workers too)."""
    import nle  # noqa: F401 - registers NetHackScore-v0

    keys = ("glyphs", "blstats", "message")
    return SeededNetHack(gymnasium.make("NetHackScore-v0", observation_keys=keys, max_episode_steps=5000))


def timed_vecenv(vecenv: Any, seconds: float, table: np.ndarray | None = None) -> float:
    """Agent steps/s over send/recv with pre-drawn actions (as pufferbox.throughput does).

    ``table`` (rows of per-env actions) replays the exact actions bench_nethack.py uses.
    """
    vecenv.async_reset(seed=0)
    obs = vecenv.recv()[0]
    if table is None:
        table = np.random.default_rng(0).integers(0, vecenv.single_action_space.n, (16, len(obs)))
    steps, start, timing = 0, time.perf_counter(), False
    while True:
        vecenv.send(table[steps % len(table)])
        obs = vecenv.recv()[0]
        steps += 1
        now = time.perf_counter()
        if not timing and now - start >= 0.2:
            timing, steps, start = True, 0, now
        elif timing and now - start >= seconds:
            break
    rate = steps * len(obs) / (time.perf_counter() - start)
    vecenv.close()
    return rate


def emulated(make: Callable[[], gymnasium.Env]) -> Callable[..., Any]:
    import pufferlib.emulation

    def creator(buf: Any = None, seed: int = 0) -> Any:
        return pufferlib.emulation.GymnasiumPufferEnv(env_creator=make, buf=buf, seed=seed)

    return creator


def vector(make: Callable[[], gymnasium.Env], backend: str, num_envs: int, **kwargs: Any) -> Any:
    import pufferlib.vector

    return pufferlib.vector.make(emulated(make), backend=getattr(pufferlib.vector, backend), num_envs=num_envs, **kwargs)


def native_cartpole(num_envs: int, seconds: float) -> float:
    """PufferLib's C CartPole called directly, one process (what it reports as native speed)."""
    from pufferlib.ocean.cartpole.cartpole import Cartpole

    env = Cartpole(num_envs=num_envs)
    env.reset(seed=0)
    actions = [np.random.default_rng(i).integers(0, 2, num_envs) for i in range(16)]
    for i in range(20):
        env.step(actions[i % 16])
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(actions[steps % 16])
        steps += 1
    return steps * num_envs / (time.perf_counter() - start)


def run(workload: str, seconds: float, n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    if workload == "cartpole":
        make = lambda: gymnasium.make("CartPole-v1")
        out[f"PufferLib 3.0 Serial, {n} envs"] = timed_vecenv(vector(make, "Serial", n), seconds)
        out[f"PufferLib 3.0 Multiprocessing, {2 * n} envs / 2 workers"] = timed_vecenv(
            vector(make, "Multiprocessing", 2 * n, num_workers=2), seconds
        )
    elif workload == "uneven":
        make = UnevenStepEnv
        out["PufferLib 3.0 Multiprocessing, 2 envs / 2 workers (sync)"] = timed_vecenv(
            vector(make, "Multiprocessing", 2, num_workers=2), seconds
        )
        out["PufferLib 3.0 pool, 4 envs / 4 workers, batch 2"] = timed_vecenv(
            vector(make, "Multiprocessing", 4, num_workers=4, batch_size=2, overwork=True), seconds
        )
    elif workload == "native":
        for envs in (4096, 16384):
            out[f"PufferLib 3.0 C CartPole, {envs} envs, one process"] = native_cartpole(envs, seconds)
    elif workload == "nethack":
        make = make_nethack
        table = np.random.default_rng(0).integers(0, 23, (1024, n))
        out[f"PufferLib 3.0 Serial, {n} envs"] = timed_vecenv(vector(make, "Serial", n), seconds, table)
        out[f"PufferLib 3.0 Multiprocessing, {n} envs / 2 workers"] = timed_vecenv(
            vector(make, "Multiprocessing", n, num_workers=2), seconds, table
        )
    elif workload == "uneven-ray":  # bench_ray.py: PufferLib's Ray backend next to pufferbox's
        out["PufferLib 3.0 Ray, 4 envs / 4 workers, batch 2"] = timed_vecenv(
            vector(UnevenStepEnv, "Ray", 4, num_workers=4, batch_size=2), seconds
        )
    elif workload == "nethack-ray":
        make = make_nethack
        table = np.random.default_rng(0).integers(0, 23, (1024, n))
        out[f"PufferLib 3.0 Ray, {n} envs / 2 workers"] = timed_vecenv(vector(make, "Ray", n, num_workers=2), seconds, table)
    else:
        raise SystemExit(
            f"unknown workload {workload!r}: choose cartpole, uneven, native, nethack, uneven-ray or nethack-ray"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=["cartpole", "uneven", "native", "nethack", "uneven-ray", "nethack-ray"])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--num-envs", type=int, default=8)
    args = parser.parse_args()
    import pufferlib

    print(f"pufferlib {pufferlib.__version__}, gymnasium {gymnasium.__version__}", file=sys.stderr)
    print(json.dumps(run(args.workload, args.seconds, args.num_envs)))


if __name__ == "__main__":
    main()
