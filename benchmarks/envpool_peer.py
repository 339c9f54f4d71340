"""EnvPool 0.8.4's Atari as a stepping peer; runs in the CleanRL peer venv and prints JSON steps/s.

EnvPool needs gym 0.23 (its 0.8 API), so it cannot share pufferbox's venv: ``benchmarks/bench_atari.py``
runs this file with the ``cleanrl`` peer venv's python (``benchmarks/peer_venvs.py``). It prints steps/s
and steps per CPU-second of its process (all threads: this moves less than wall time on a shared
machine). It imports nothing from pufferbox. The env is ``Breakout-v5`` with ALE v5's sticky actions
(``repeat_action_probability=0.25``, pufferbox's preprocessing; EnvPool's own default is 0) and
EnvPool's defaults otherwise: 30 no-op starts, frame skip 4 with a max-pool, grayscale 84x84, a
4-frame stack, FIRE at reset.

    /tmp/pufferbox-peers/cleanrl/bin/python benchmarks/envpool_peer.py --num-envs 8 --threads 2 --seconds 3
"""

from __future__ import annotations

import argparse
import json
import time

import envpool
import numpy as np


def steps_per_second(game: str, num_envs: int, threads: int, seconds: float) -> tuple[float, float]:
    """(steps per second, steps per CPU second of this process's threads)"""
    env = envpool.make(game, env_type="gym", num_envs=num_envs, num_threads=threads, seed=0, repeat_action_probability=0.25)
    env.reset()
    actions = np.random.default_rng(0).integers(0, env.action_space.n, (64, num_envs))
    env.step(actions[0])  # warm-up
    steps, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        env.step(actions[steps % 64])
        steps += 1
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    env.close()
    return steps * num_envs / wall, steps * num_envs / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="Breakout-v5")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    sps, per_cpu = steps_per_second(args.game, args.num_envs, args.threads, args.seconds)
    print(json.dumps({"sps": sps, "per_cpu_s": per_cpu}))


if __name__ == "__main__":
    main()
