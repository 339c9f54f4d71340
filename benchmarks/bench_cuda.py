"""GPU benchmarks of the kernel envs (GPU only): env steps/s for Tag, continuous Tag and CUDA CartPole.

    python benchmarks/bench_cuda.py            # prints Markdown tables for benchmarks/RESULTS.md
    python benchmarks/bench_cuda.py --part table --write   # the first into benchmarks/results/gpu_kernels.json

The second table sweeps threads per block: the block size of CUDA CartPole (one thread per env)
and the cap on threads per block of 45-agent Tag (below 45 one env spans several blocks).
``--part kernels`` times each kernel of a step with CUDA events (where a step's time goes), and
the launch path: PyCUDA's prepared calls against its per-call argument inspection.

Env steps/s = num_envs * steps / seconds (WarpDrive's measure). CartPole is also compared with
Gymnasium CartPole-v1 on one CPU core in the same run.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def make(name: str, num_envs: int, **kwargs):
    from pufferbox.cuda.runtime import KernelEnv
    from pufferbox.registry import get_registry

    spec = get_registry().get(name)
    return KernelEnv(spec.build.cuda, num_envs=num_envs, env_kwargs={**spec.build.kwargs, **kwargs})


def bench(name: str, num_envs: int, steps: int, **kwargs) -> float:
    return time_steps(make(name, num_envs, **kwargs), steps)


def time_steps(env, steps: int) -> float:
    """Env steps/s of ``steps`` random-action steps after 10 untimed ones."""
    import torch

    num_envs = env.num_envs
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

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])  # --help works without a GPU
    parser.add_argument(
        "--part", choices=("all", "table", "sweep", "kernels"), default="all", help="tables to print (all: table + sweep)"
    )
    parser.add_argument("--write", action="store_true", help="write the env table's JSON and re-render RESULTS.md")
    args = parser.parse_args()

    reason = gpu_unavailable_reason()
    if reason is not None:
        print(f"bench_cuda.py needs a GPU: {reason}. Run it on a GPU machine (pip install -e .[cuda]).", file=sys.stderr)
        return 2
    import torch

    print(f"GPU: {torch.cuda.get_device_name()}")
    if args.part in ("all", "table"):
        table(args.write)
    if args.part in ("all", "sweep"):
        sweep()
    if args.part == "kernels":
        kernels()
    return 0


def si(x: float) -> str:
    """Three significant digits with k, M or G: 20.4M, 531k, 2.15G."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:#.3g}".rstrip(".") + unit
    return f"{x:#.3g}".rstrip(".")


def table(write: bool = False) -> None:
    import torch
    from results import load, machine, publish

    rows = [
        ("tag", "tag", 2000, 1000, {"num_taggers": 1, "num_runners": 4}),
        (
            "tag, k_nearest 5, through the cell index",
            "tag",
            2000,
            50,
            {"num_taggers": 10, "num_runners": 990, "k_nearest": 5},
        ),
        (
            "tag, k_nearest 5, full scan (`cell_capacity=0`)",
            "tag",
            2000,
            50,
            {"num_taggers": 10, "num_runners": 990, "k_nearest": 5, "cell_capacity": 0},
        ),
        ("tag_continuous", "tag_continuous", 2000, 1000, {"num_taggers": 1, "num_runners": 4}),
        ("tag_continuous, k_nearest 5", "tag_continuous", 2000, 200, {"num_taggers": 5, "num_runners": 40, "k_nearest": 5}),
        ("cuda_cartpole", "cuda_cartpole", 100_000, 1000, {}),
    ]
    out = []
    for label, name, envs, steps, kw in rows:
        agents = kw.get("num_taggers", 0) + kw.get("num_runners", 0) or 1
        out.append([label, f"{envs} x {agents}", si(bench(name, envs, steps, **kw))])
        print(" | ".join(out[-1]), flush=True)
    cpu = gym_cartpole()
    gpu = bench("cuda_cartpole", 100_000, 1000)
    note = (
        f"CUDA CartPole / Gymnasium CartPole-v1 on one CPU core of the same machine ({cpu:,.0f} steps/s): {gpu / cpu:,.0f}x."
    )
    meta = {
        "command": "python benchmarks/bench_cuda.py --part table" + (" --write" if write else ""),
        "machine": f"{torch.cuda.get_device_name()}, {machine()}",
        "load": load(),
        "peer": "Gymnasium CartPole-v1 on one CPU core; WarpDrive's published Tag figure (A100: 9.8M)",
    }
    publish("gpu_kernels", ["env", "envs x agents", "env steps/s"], out, meta, write, align="llr", notes=[note])


def sweep() -> None:
    """Threads per block: one env of each kind, only its launch geometry changes between rows."""
    cartpole, tag = make("cuda_cartpole", 100_000), make("tag", 2000, num_taggers=5, num_runners=40, k_nearest=5)
    print("\n| threads per block | cuda_cartpole 100000 x 1 (env_block) | tag 2000 x 45 (max_block) |\n|---|---|---|")
    for threads in (8, 16, 32, 64, 128, 256, 512, 1024):
        cartpole.set_block_size(env_block=threads)
        tag.set_block_size(max_block=threads)
        print(f"| {threads} | {time_steps(cartpole, 1000):,.0f} | {time_steps(tag, 200):,.0f} |")


def kernels(steps: int = 20) -> None:
    """GPU milliseconds per step of each kernel (CUDA events around every launch), then the launch path."""
    import pycuda.driver as drv

    thousand = {"num_taggers": 10, "num_runners": 990, "k_nearest": 5}
    for name, envs, kw in [("tag", 500, thousand), ("tag", 500, {**thousand, "cell_capacity": 0}), ("tag", 2000, {})]:
        env = make(name, envs, **kw)
        time_steps(env, 5)
        functions, launch, spans = env.functions, env.functions.launch, []

        def timed(kernel, grid, block, args, functions=functions, launch=launch, spans=spans):
            functions.context.push()
            try:
                start, end = drv.Event(), drv.Event()
                start.record()
                launch(kernel, grid, block, args)
                end.record()
                spans.append((kernel, start, end))
            finally:
                functions.context.pop()

        functions.launch = timed
        actions = env.tensor("actions")
        for _ in range(steps):
            actions.random_(0, env.num_actions)
            env.step()
        spans[-1][2].synchronize()
        total: dict[str, float] = {}
        for kernel, start, end in spans:
            total[kernel] = total.get(kernel, 0.0) + end.time_since(start) / steps
        print(f"\n{name} {kw}, {envs} envs: GPU ms per step by kernel (launches timed one by one)")
        print("| kernel | ms per step | share |\n|---|---|---|")
        for kernel, ms in sorted(total.items(), key=lambda item: -item[1]):
            print(f"| {kernel} | {ms:.3f} | {ms / sum(total.values()):.0%} |")
        functions.launch = launch
    print("\n| env | envs x agents | prepared calls | per-call arguments |\n|---|---|---|---|")
    for name, envs, kw in [("tag", 2000, {}), ("tag_continuous", 2000, {}), ("cuda_cartpole", 100_000, {})]:
        env = make(name, envs, **kw)
        rates = []
        for prepared in (True, False):
            env.functions.prepared = prepared
            rates.append(time_steps(env, 1000))
        print(f"| {name} | {envs} x {env.num_agents} | {rates[0]:,.0f} | {rates[1]:,.0f} |")


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
