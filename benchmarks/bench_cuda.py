"""GPU benchmarks of the kernel envs (GPU only): env steps/s for Tag, continuous Tag and CUDA CartPole.

    python benchmarks/bench_cuda.py            # prints a Markdown table for benchmarks/RESULTS.md

Env steps/s = num_envs * steps / seconds (WarpDrive's measure). CartPole is also compared with
Gymnasium CartPole-v1 on one CPU core in the same run.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def bench(name: str, num_envs: int, steps: int, **kwargs) -> float:
    import torch

    from pufferbox.cuda.runtime import KernelEnv
    from pufferbox.registry import get_registry

    spec = get_registry().get(name)
    env = KernelEnv(spec.build.cuda, num_envs=num_envs, env_kwargs={**spec.build.kwargs, **kwargs})
    actions = env.tensor("actions")
    for _ in range(10):
        actions.random_(0, env.num_actions)
        env.step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        actions.random_(0, env.num_actions)
        env.step()
    torch.cuda.synchronize()
    return num_envs * steps / (time.perf_counter() - start)


def gym_cartpole(steps: int = 100_000) -> float:
    import gymnasium

    env = gymnasium.make("CartPole-v1")
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    return steps / (time.perf_counter() - start)


def main() -> int:
    import argparse

    from pufferbox.cuda.device import gpu_unavailable_reason

    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help works without a GPU

    reason = gpu_unavailable_reason()
    if reason is not None:
        print(f"bench_cuda.py needs a GPU: {reason}. Run it on a GPU machine (pip install -e .[cuda]).", file=sys.stderr)
        return 2
    import torch

    rows = [
        ("tag", 2000, 1000, {"num_taggers": 1, "num_runners": 4}),
        ("tag", 2000, 50, {"num_taggers": 10, "num_runners": 990, "k_nearest": 5}),
        ("tag_continuous", 2000, 1000, {"num_taggers": 1, "num_runners": 4}),
        ("tag_continuous", 2000, 200, {"num_taggers": 5, "num_runners": 40, "k_nearest": 5}),
        ("cuda_cartpole", 100_000, 1000, {}),
    ]
    print(f"GPU: {torch.cuda.get_device_name()}\n\n| env | envs x agents | env steps/s |\n|---|---|---|")
    for name, envs, steps, kw in rows:
        agents = kw.get("num_taggers", 0) + kw.get("num_runners", 0) or 1
        print(f"| {name} {kw} | {envs} x {agents} | {bench(name, envs, steps, **kw):,.0f} |")
    cpu = gym_cartpole()
    gpu = bench("cuda_cartpole", 100_000, 1000)
    print(f"\nCUDA CartPole / gymnasium CartPole-v1 (1 CPU core, {cpu:,.0f} steps/s): {gpu / cpu:,.0f}x")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
