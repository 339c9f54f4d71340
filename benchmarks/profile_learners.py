"""Where data-parallel learners' update time goes (issue 41 item 3's question: why 2 learners reach ~0.5x).

``bench_learners.py``'s setup (a family's default policy and batch, one torch thread per process, the
PPO update alone on a fixed batch), with each learner's collectives timed: the gradients' all-reduces
overlap backward, so what counts is the time left waiting for them after backward; before every other
all-reduce a barrier measures the *wait* for the slower learner, then the all-reduce itself; the
compute is what remains. Also the payload per all-reduce and the process's threads during the update
(gloo adds its own). Modes: 1 learner on the whole batch, N synced learners, N independent ones.
The warm-up update is not counted.

    .venv/bin/python benchmarks/profile_learners.py breakout --updates 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import psutil
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_learners

from pufferbox.train import distributed, learner


def profiled_rank(rank: int, size: int, sync: bool, address: str, name: str, updates: int, out: str) -> None:
    """:func:`bench_learners.learner_rank` with its collectives and updates timed; writes ``out.RANK.json``.

    The gradients' all-reduces run while backward does (:class:`distributed.GradientBuckets`): what they
    cost the learner is the time in ``finish`` (waiting for the last buckets, and for the slower learner).
    The other collectives (sample counts, moments, statistics) are timed with a barrier before each.
    """
    stats = {"wait": 0.0, "reduce": 0.0, "exposed": 0.0, "calls": 0, "steps": 0, "bytes": 0, "threads": 0}
    stats |= {"counting": False, "seen": False}
    all_reduce, finish, update = distributed.Team.all_reduce, distributed.GradientBuckets.finish, learner.Learner.update

    def timed_all_reduce(self, tensor):
        start = time.perf_counter()
        torch.distributed.barrier()  # the wait for the slower learner
        reached = time.perf_counter()
        result = all_reduce(self, tensor)
        if stats["counting"]:
            stats["wait"] += reached - start
            stats["reduce"] += time.perf_counter() - reached
            stats["calls"] += 1
        return result

    def timed_finish(self):
        start = time.perf_counter()
        result = finish(self)
        if stats["counting"]:
            stats["exposed"] += time.perf_counter() - start
            stats["steps"] += 1
            stats["bytes"] = sum(f.numel() * f.element_size() for f in self.flats)
        return result

    def counted_update(self, *args, **kwargs):
        stats["counting"], stats["seen"] = stats["seen"], True  # the first (warm-up) update is not counted
        stats["threads"] = max(stats["threads"], psutil.Process().num_threads())
        return update(self, *args, **kwargs)

    distributed.Team.all_reduce, learner.Learner.update = timed_all_reduce, counted_update
    distributed.GradientBuckets.finish = timed_finish
    bench_learners.learner_rank(rank, size, sync, address, name, updates, out)
    stats["seconds"] = float(Path(f"{out}.{rank}").read_text())
    Path(f"{out}.{rank}.json").write_text(json.dumps(stats))


def measure(size: int, sync: bool, name: str, updates: int) -> list[dict]:
    context, address = torch.multiprocessing.get_context("spawn"), distributed.free_address()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "seconds")
        procs = [
            context.Process(target=profiled_rank, args=(rank, size, sync, address, name, updates, out))
            for rank in range(size)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join()
            if proc.exitcode != 0:
                raise SystemExit(f"a learner process exited with {proc.exitcode}")
        return [json.loads(Path(f"{out}.{rank}.json").read_text()) for rank in range(size)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("family", help="breakout, nethack, procgen or cartpole-wide")
    parser.add_argument("--learners", type=int, default=2)
    parser.add_argument("--updates", type=int, default=3, help="timed updates per measurement")
    args = parser.parse_args()
    n = args.learners
    print(f"load before: {os.getloadavg()}")
    for mode, size, sync in (("1 learner", 1, False), (f"{n} synced", n, True), (f"{n} independent", n, False)):
        for rank, s in enumerate(measure(size, sync, args.family, args.updates)):
            per = args.updates
            compute = s["seconds"] - (s["wait"] + s["reduce"] + s["exposed"]) / per
            print(
                f"{mode:>15} rank {rank}: {s['seconds']:.3f} s/update = compute {compute:.3f} + gradients' "
                f"all-reduce not hidden by backward {s['exposed'] / per:.3f} ({s['steps'] / per:.0f} steps of "
                f"{s['bytes'] / 1e6:.1f} MB) + other collectives: wait {s['wait'] / per:.3f} + all-reduce "
                f"{s['reduce'] / per:.3f} ({s['calls'] / per:.0f}); {s['threads']} threads",
                flush=True,
            )
        print(f"load: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
