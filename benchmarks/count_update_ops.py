"""Count the torch operations one PPO update issues (torch.profiler on the CPU), per update and per minibatch.

On a GPU each operation is at least one kernel launch (and autograd's backward adds its own), so at a
GPU-sized batch the count, not the arithmetic, sets the update's time. An operation here is an ``aten::``
call that no other ``aten::`` call issued: what Python, autograd's engine or an optimizer dispatched, each
a launch or more on a device. View-only operations (``view``, ``t``, ``expand``, ``as_strided``, ...:
no kernel) are counted apart.

    python benchmarks/count_update_ops.py                          # Ocean Pong's shapes, 2,048 x 64, 8 x 2
    python benchmarks/count_update_ops.py --rows 2048 --horizon 64 --minibatches 8 --epochs 2 --json out.json
    python benchmarks/count_update_ops.py [--sync-free] --record after   # into benchmarks/results/update_ops.json

``--record REVISION`` keeps the run in ``benchmarks/results/update_ops.json`` under that revision's name (the
table compares the first revision recorded, "before (<commit>)", with the last, for each path) and
re-renders its table in RESULTS.md.

The batch is random (rewards, actions), the agent the MLP policy Ocean Pong trains (8 floats, 3 actions).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import gymnasium
import numpy as np
import torch

from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.config import TrainConfig
from pufferbox.train.learner import Learner
from pufferbox.train.policies import Agent, MLPEncoder

VIEWS = {
    "aten::view",
    "aten::_unsafe_view",
    "aten::t",
    "aten::transpose",
    "aten::expand",
    "aten::as_strided",
    "aten::reshape",
    "aten::slice",
    "aten::select",
    "aten::unsqueeze",
    "aten::squeeze",
    "aten::alias",
    "aten::detach",
    "aten::detach_",
    "aten::lift_fresh",
    "aten::split",
    "aten::split_with_sizes",
    "aten::unbind",
    "aten::chunk",
    "aten::narrow",
    "aten::permute",
    "aten::flatten",
    "aten::expand_as",
    "aten::view_as",
    "aten::result_type",
    "aten::is_nonzero",
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::resize_",
    "aten::to (no copy)",
}


def top_level_ops(prof: torch.profiler.profile) -> collections.Counter:
    """``aten::`` events that no other ``aten::`` event encloses, counted by name."""
    counts: collections.Counter = collections.Counter()
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        parent, nested = event.cpu_parent, False
        while parent is not None:
            if parent.name.startswith("aten::"):
                nested = True
                break
            parent = parent.cpu_parent
        if nested:
            continue
        if event.name == "aten::to" and not any(child.name == "aten::_to_copy" for child in event.cpu_children):
            counts["aten::to (no copy)"] += 1  # a tensor already of that type and device: returned as is
        else:
            counts[event.name] += 1
    return counts


def pong_agent(hidden: int = 128, seed: int = 0) -> Agent:
    obs_spec = ObservationSpec(gymnasium.spaces.Box(-2, 2, (8,), np.float32))
    act_spec = ActionSpec(gymnasium.spaces.Discrete(3))
    torch.manual_seed(seed)
    return Agent(MLPEncoder(obs_spec, act_spec, hidden_size=hidden), act_spec)


def random_batch(rows: int, horizon: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    width = (rows, horizon + 1)
    return {
        "obs": torch.randn(*width, 8, generator=g),
        "actions": torch.randint(0, 3, width, generator=g),
        "logprobs": torch.full(width, -1.0986),
        "values": torch.randn(width, generator=g) * 0.1,
        "rewards": (torch.rand(width, generator=g) < 0.02).float() - (torch.rand(width, generator=g) < 0.02).float(),
        "starts": torch.rand(width, generator=g) < 0.002,
        "masks": torch.ones(width, dtype=torch.bool),
    }


def count(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    chosen = {"optimizer": args.optimizer} if args.optimizer != "adam" else {}  # (revisions before the key)
    hp = TrainConfig(num_minibatches=args.minibatches, update_epochs=args.epochs, learning_rate=1e-3, **chosen)
    learner = Learner(pong_agent(args.hidden), hp, compile=args.compile)
    learner.sync_free = args.sync_free
    batch = random_batch(args.rows, args.horizon)
    learner.update(batch)  # warm-up (and compile)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        learner.update(batch)
        seconds = time.perf_counter() - start
    ops = top_level_ops(prof)
    views = sum(n for name, n in ops.items() if name in VIEWS)
    total = sum(ops.values())
    steps = args.minibatches * args.epochs
    return {
        "rows": args.rows,
        "horizon": args.horizon,
        "minibatches": args.minibatches,
        "epochs": args.epochs,
        "optimizer": args.optimizer,
        "compile": args.compile,
        "sync_free": args.sync_free,
        "ops_per_update": total - views,
        "view_ops_per_update": views,
        "ops_per_minibatch": (total - views) / steps,
        "seconds_per_update": seconds,
        "top": [[name, n] for name, n in ops.most_common(args.top) if name not in VIEWS],
    }


RESULTS_JSON = Path(__file__).resolve().parent / "results" / "update_ops.json"
PATHS = {False: "CPU (host reads allowed)", True: "accelerator (`sync_free`: NaN guard on the device)"}


def table_rows(runs: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Columns and rows: per path, the first recorded revision against the last, and how many fewer ops."""
    revisions = list(dict.fromkeys(r["revision"] for r in runs))
    first, last = revisions[0], revisions[-1]
    rows = []
    for sync_free, name in PATHS.items():
        by = {r["revision"]: r for r in runs if r["sync_free"] == sync_free}
        if first not in by or last not in by:
            continue
        cells = [f"{by[v]['ops_per_update']:,} ({by[v]['ops_per_minibatch']:.1f} per minibatch)" for v in (first, last)]
        rows.append([name, *cells, f"{by[first]['ops_per_update'] / by[last]['ops_per_update']:.2f}x"])
    return ["path", first, last, "fewer"], rows


def record(result: dict, revision: str, path: Path = RESULTS_JSON) -> None:
    """Keep ``result`` as ``revision``'s run of its path in the results JSON; rewrite the table, re-render."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import results

    data = json.loads(path.read_text()) if path.exists() else {"runs": []}
    runs = [r for r in data["runs"] if (r["revision"], r["sync_free"]) != (revision, result["sync_free"])]
    data["runs"] = [*runs, {**result, "revision": revision}]
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    columns, rows = table_rows(data["runs"])
    meta = {**data.get("meta", {}), "date": results.today(), "machine": f"{results.machine()}, torch {torch.__version__}"}
    results.write_table(path.stem, columns, rows, meta, align="lrrr")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--horizon", type=int, default=64)
    parser.add_argument("--minibatches", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--sync-free", action="store_true", help="the accelerator's path (no host reads in the epochs)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument("--record", metavar="REVISION", help="keep it in benchmarks/results/update_ops.json")
    args = parser.parse_args(argv)
    result = count(args)
    print(
        f"{args.rows} x {args.horizon} rows, {args.minibatches} minibatches x {args.epochs} epochs "
        f"({args.optimizer}{', compiled' if args.compile else ''}{', sync-free' if args.sync_free else ''}): "
        f"{result['ops_per_update']:,} ops per update ({result['ops_per_minibatch']:.1f} per minibatch), "
        f"{result['view_ops_per_update']:,} view ops, {result['seconds_per_update']:.2f} s"
    )
    for name, n in result["top"]:
        print(f"  {n:6d} {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.record:
        record(result, args.record)


if __name__ == "__main__":
    main(sys.argv[1:])
