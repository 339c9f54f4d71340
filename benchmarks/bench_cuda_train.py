"""End-to-end PPO throughput on the GPU (GPU only): discrete Tag, 2000 envs x 5 agents, ``--backend cuda``.

    python benchmarks/bench_cuda_train.py                      # on a GPU machine
    python benchmarks/bench_cuda_train.py --updates 120 --plot benchmarks/tag-rate-cuda.png

Trains ``tag`` with the Trainer exactly as ``pufferbox train tag --backend cuda`` does: rollout,
categorical sampling (the sampler kernel), GAE and the PPO update all on the GPU. Reported:

* training throughput over the timed updates (after ``--warmup`` updates, CUDA synchronized at
  both ends): *env steps/s* = ``num_envs * steps / s`` (WarpDrive's measure; the issue's target is
  >= 1.3M) and *agent steps/s* = env steps/s x agents per env (what ``global_step`` counts);
* the peer in the same run: the CPU reference on ``--backend serial`` (64 envs, one core), the ratio;
* the taggers' tag rate (tags per env and step) per update, plotted against env steps (``--plot``).

Prints the table RESULTS.md shows (``--write``: also benchmarks/results/gpu_tag_ppo.json, re-rendered in
RESULTS.md). On a machine without a GPU it exits 2 with
one line; ``--host`` runs the same code on the host kernel simulator at toy size (a smoke test of
this script, its numbers mean nothing).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def train(env: str, overrides: list[str], updates: int, warmup: int, sync: bool) -> dict:
    """``warmup`` + ``updates`` PPO updates; the timed updates' throughput and every update's metrics."""
    import torch

    from pufferbox.registry import get_registry
    from pufferbox.train.config import resolve_config
    from pufferbox.train.trainer import Trainer

    cfg = resolve_config(get_registry().get(env).training.config, overrides=["train.checkpoint_interval=0", *overrides])
    batch = cfg["vec"]["num_envs"] * cfg["train"]["num_steps"]
    trainer = Trainer(env, cfg)
    # anneal the learning rate over exactly the updates this run makes
    trainer.total_updates = warmup + updates
    for _ in range(warmup):
        trainer.train_update()
    if sync:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(updates):
        trainer.train_update()
    if sync:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    out = {
        "env_sps": updates * batch / seconds,
        "agent_sps": updates * batch * trainer.agents_per_env / seconds,
        "seconds": seconds,
        "history": trainer.history,
        "agents_per_env": trainer.agents_per_env,
        "phase_time": dict(trainer.phase_time),
    }
    trainer.close()
    return out


def plot(history: list[dict], agents_per_env: int, path: str, title: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [m["global_step"] / agents_per_env for m in history]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, [m["tag_rate"] for m in history], marker=".")
    ax.set_xlabel("env steps")
    ax.set_ylabel("tag rate (tags per env and step)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def publish_table(args: argparse.Namespace, where: str, num_envs: int, ours: dict, peer: dict | None, tags: list) -> None:
    """The RESULTS.md table: the GPU run, the CPU reference, the target and the tag rate as notes."""
    import torch
    from results import load, machine, publish

    label = "pufferbox --backend cuda" + (f" ({' '.join(args.overrides)})" if args.overrides else "")
    phases = " / ".join(f"{v:.1f}" for v in ours["phase_time"].values())
    rows = [
        [label, f"{num_envs} x {ours['agents_per_env']}", f"{ours['env_sps']:,.0f}", f"{ours['agent_sps']:,.0f}", phases]
    ]
    if peer is not None:
        rows.append(
            ["pufferbox --backend serial (CPU reference, 1 core)", f"64 x {peer['agents_per_env']}"]
            + [f"{peer['env_sps']:,.0f}", f"{peer['agent_sps']:,.0f}", ""]
        )
    target = "met" if ours["env_sps"] >= 1.3e6 else "not met"
    notes = [
        f"{args.updates} timed updates in {ours['seconds']:.1f} s; >= 1.3M env steps/s: {target}. Tag rate (tags per env "
        f"and step), first 3 vs last 3 updates: {tags[0]:.4f} -> {tags[1]:.4f}; plot: {tags[2]}."
    ]
    meta = {
        "command": f"python benchmarks/bench_cuda_train.py {' '.join(sys.argv[1:])}".strip(),
        "machine": f"{where}, torch {torch.__version__}, {machine()}",
        "load": load(),
        "peer": "the CPU reference (`--backend serial`, 1 core); WarpDrive's published figure (>= 1.3M env steps/s)",
    }
    columns = ["trainer", "envs x agents", "env steps/s", "agent steps/s", " / ".join(ours["phase_time"]) + " s"]
    publish("gpu_tag_ppo", columns, rows, meta, args.write, align="llrrl", notes=notes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=60, help="timed PPO updates (num_envs x 128 env steps each)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed updates first (kernel compile, cuBLAS)")
    parser.add_argument("--plot", default="benchmarks/tag-rate-cuda.png", help="tag-rate PNG")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--skip-peer", action="store_true", help="skip the CPU-reference (serial backend) run")
    parser.add_argument("--write", action="store_true", help="write the table's JSON and re-render RESULTS.md")
    parser.add_argument(
        "--host",
        action="store_true",
        help="smoke-test this script on the host kernel simulator (toy sizes; numbers mean nothing)",
    )
    args = parser.parse_args()

    from pufferbox.cuda.device import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None and not args.host:
        print(
            f"bench_cuda_train.py needs a GPU ({reason}); run it on a GPU machine, "
            f"or `pufferbox train tag --backend serial` to train the CPU reference",
            file=sys.stderr,
        )
        return 2
    import torch

    device = ["vec.device=host"] if args.host else []
    num_envs = min(args.num_envs, 16) if args.host else args.num_envs
    ours = train(
        "tag",
        ["vec.backend=cuda", *device, f"vec.num_envs={num_envs}", *args.overrides],
        args.updates,
        args.warmup,
        sync=not args.host,
    )
    peer = (
        None
        if args.skip_peer
        else train("tag", ["vec.backend=serial", "vec.num_envs=64", "train.num_steps=32", *args.overrides], 2, 1, sync=False)
    )

    rates = [m["tag_rate"] for m in ours["history"]]
    where = "host simulator (smoke test)" if args.host else torch.cuda.get_device_name()
    png = plot(
        ours["history"],
        ours["agents_per_env"],
        args.plot,
        f"Tag {num_envs} envs x {ours['agents_per_env']} agents, PPO on {where}",
    )
    first, last = sum(rates[:3]) / len(rates[:3]), sum(rates[-3:]) / len(rates[-3:])
    publish_table(args, where, num_envs, ours, peer, [first, last, png])
    return 0


if __name__ == "__main__":
    sys.exit(main())
