"""Scaling on one host: training on a multi-node Ray cluster simulated here.

The cluster is ``ray.cluster_utils.Cluster``: a head that runs no actors (0 CPUs: the driver, rank 0, is
there) and 1, 2, 4 nodes of ``--cpus-per-node`` CPUs each, every node a raylet of its own. Three tables:

* rollout workers: PPO on the 1 ms busy-wait env (``pufferbox.vector.testenvs`` ``uneven``: CPU-bound
  stepping, a small MLP) with ``--backend ray``, one rollout actor per node CPU (the backend spreads them
  evenly over the nodes), 2 envs each; beside it the machine's own limit, the same workers as local
  processes (``--backend multiprocessing``); ideal = workers x 1,000 steps/s, capped by the host's cores;
* learners: ``pufferbox train cartpole --learners N --ray-address`` with N = nodes (rank 0 in the driver,
  ranks 1..N-1 as actors spread over the nodes), beside N local learner processes and one learner;
* one lost node: the rollout-worker run on 2 nodes, one removed mid-run: the steps lost (the ray backend
  replaces the node's actor and collects its segment again) against that node's in-flight rollout, and what
  the update that lost it took against the others.

Each measurement trains ``--seconds`` after a warm-up update; steps/s are agent steps trained per second.
``--write`` writes benchmarks/results/scaling_rollouts.json (the lost node as its note) and
scaling_learners.json, and re-renders their tables in RESULTS.md.

    .venv/bin/python benchmarks/bench_scaling.py --nodes 1,2,4 --seconds 20 --write
    .venv/bin/python benchmarks/bench_scaling.py --nodes 1,2 --seconds 3 --sections rollouts   # smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

from results import load, machine, publish

ROLLOUT_COLUMNS = [
    "nodes",
    "rollout actors",
    "steps/s, Ray cluster",
    "% of ideal",
    "% of host limit",
    "local procs",
    "Ray / local",
]
LEARNER_COLUMNS = ["learners", "Ray nodes", "steps/s", "vs one learner"]
STEP_S = 1e-3  # the uneven env's mean step time
ENVS_PER_WORKER, HORIZON = 2, 64


@contextlib.contextmanager
def cluster(nodes: int, cpus: int) -> Iterator[Any]:
    """A head without CPUs and ``nodes`` nodes of ``cpus`` CPUs; ``RAY_ADDRESS`` points at it meanwhile."""
    import ray
    from ray.cluster_utils import Cluster

    made = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        for _ in range(nodes):
            made.add_node(num_cpus=cpus)
        made.wait_for_nodes()
        os.environ["RAY_ADDRESS"] = made.address
        yield made
    finally:
        os.environ.pop("RAY_ADDRESS", None)
        ray.shutdown()
        made.shutdown()


def rollout_trainer(backend: str, workers: int, callbacks: list | None = None) -> Any:
    from pufferbox.train.trainer import Trainer
    from pufferbox.vector.testenvs import env_spec_for

    config = {
        "vec": {"backend": backend, "num_envs": ENVS_PER_WORKER * workers, "num_workers": workers},
        "train": {"num_steps": HORIZON, "torch_threads": 1, "num_minibatches": 2, "update_epochs": 2, "total_steps": 10**12},
        "policy": {"hidden_size": 32},
    }
    return Trainer(env_spec_for("uneven", mean_step_s=STEP_S), config, callbacks=callbacks)


def trained_sps(trainer: Any, seconds: float) -> float:
    """Agent steps/s over whole updates for ``seconds``, after one warm-up update."""
    trainer.train_update()
    start_step, start = trainer.global_step, time.perf_counter()
    while time.perf_counter() - start < seconds:
        trainer.train_update()
    return (trainer.global_step - start_step) / (time.perf_counter() - start)


def rollout_rows(nodes: list[int], cpus: int, seconds: float) -> list[list]:
    rows = []
    for n in nodes:
        workers = n * cpus
        with cluster(n, cpus):
            trainer = rollout_trainer("ray", workers)
            try:
                on_ray = trained_sps(trainer, seconds)
            finally:
                trainer.close()
        trainer = rollout_trainer("multiprocessing", workers)
        try:
            local = trained_sps(trainer, seconds)
        finally:
            trainer.close()
        ideal = workers / STEP_S
        limit = min(workers, os.cpu_count() or 1) / STEP_S
        rows.append(
            [n, workers, f"{on_ray:,.0f}", f"{on_ray / ideal:.0%}", f"{on_ray / limit:.0%}", f"{local:,.0f}"]
            + [f"{on_ray / local:.2f}x"]
        )
        print(*rows[-1], sep=" | ", flush=True)
    return rows


def train_cli_sps(args: list[str], seconds: float) -> float:
    """Steps/s that ``pufferbox train cartpole ARGS`` reports (training time only), about ``seconds`` long."""
    steps = str(int(9_000 * seconds) // 4096 * 4096 or 4096)
    cmd = [sys.executable, "-m", "pufferbox", "train", "cartpole", "--total-steps", steps, "--no-tensorboard"]
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as folder:
        cmd += ["--set", "train.torch_threads=1", "--run-dir", os.path.join(folder, "run"), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    match = re.search(r"\(([\d,]+) steps/s\)", done.stdout)
    if done.returncode or not match:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stdout[-800:]}{done.stderr[-1500:]}")
    return float(match.group(1).replace(",", ""))


def learner_rows(nodes: list[int], cpus: int, seconds: float) -> list[list]:
    one = train_cli_sps(["--learners", "1"], seconds)
    rows = [["1 learner, this process", "-", f"{one:,.0f}", "1.00x"]]
    print(*rows[-1], sep=" | ", flush=True)
    for n in nodes:
        if n == 1:
            continue
        with cluster(n - 1, cpus) as made:
            on_ray = train_cli_sps(["--learners", str(n), "--ray-address", made.address], seconds)
        local = train_cli_sps(["--learners", str(n)], seconds)
        rows.append([f"{n} learners: rank 0 here, {n - 1} on Ray nodes", n - 1, f"{on_ray:,.0f}", f"{on_ray / one:.2f}x"])
        rows.append([f"{n} learners: local processes (this machine's limit)", "-", f"{local:,.0f}", f"{local / one:.2f}x"])
        print(*rows[-2:], sep="\n", flush=True)
    return rows


def lost_node(cpus: int, updates: int) -> str:
    """Train on 2 nodes, remove one mid-update; the lost steps against that node's in-flight rollout."""
    history: list[dict] = []
    with cluster(2, cpus) as made:
        trainer = rollout_trainer("ray", 2 * cpus, callbacks=[history.append])
        try:
            trainer.train_steps(2 * 2 * cpus * ENVS_PER_WORKER * HORIZON)  # warm-up updates
            victim = next(iter(made.worker_nodes))
            update_s = history[-1]["wall_time"] - history[-2]["wall_time"]
            threading.Timer(update_s / 3, lambda: made.remove_node(victim, allow_graceful=False)).start()
            before = len(history)
            trainer.train_steps(updates * 2 * cpus * ENVS_PER_WORKER * HORIZON)
        finally:
            trainer.close()
    times = [b["wall_time"] - a["wall_time"] for a, b in itertools.pairwise(history)]
    hit = next(i for i, m in enumerate(history) if m.get("lost_steps", 0) > 0)
    in_flight = cpus * ENVS_PER_WORKER * HORIZON  # the removed node's actors' segments
    others = [t for i, t in enumerate(times) if i + 1 != hit]
    return (
        f"2 nodes x {cpus} CPU, {2 * cpus} rollout actors of {ENVS_PER_WORKER} envs x {HORIZON} steps; one node "
        f"removed {update_s / 3:.2f} s into update {before + 1}: update {history[hit]['update']} lost "
        f"**{history[hit]['lost_steps']:,.0f} steps** (the node's in-flight rollout: {in_flight:,}), replaced "
        f"{history[hit].get('actors_replaced', 0):.0f} actor(s) and took {times[hit - 1]:.2f} s against a median "
        f"{statistics.median(others):.2f} s for the others; the run went on to update {history[-1]['update']} "
        f"(lost steps after it: {sum(m.get('lost_steps', 0) for m in history[hit + 1 :]):.0f})."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="1,2,4", help="node counts (comma-separated)")
    parser.add_argument("--cpus-per-node", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=20.0, help="training time per measurement")
    parser.add_argument("--sections", default="rollouts,learners,lost", help="rollouts, learners, lost")
    parser.add_argument("--write", action="store_true", help="write the tables' JSON and re-render RESULTS.md")
    args = parser.parse_args()
    nodes, sections = [int(n) for n in args.nodes.split(",")], args.sections.split(",")
    before = load()
    rollouts = rollout_rows(nodes, args.cpus_per_node, args.seconds) if "rollouts" in sections else []
    learners = learner_rows(nodes, args.cpus_per_node, args.seconds) if "learners" in sections else []
    lost = [lost_node(args.cpus_per_node, 4)] if "lost" in sections else []
    command = f".venv/bin/python benchmarks/bench_scaling.py --nodes {args.nodes} --seconds {args.seconds:g} --write"
    meta = {
        "command": command,
        "machine": f"{machine()} (a Ray head without CPUs plus {args.cpus_per_node}-CPU nodes)",
        "load": f"{before} before, {load()} after",
        "peer": "the same workers as local processes",
    }
    if rollouts:
        publish("scaling_rollouts", ROLLOUT_COLUMNS, rollouts, meta, args.write, align="rrrrrrr", notes=lost)
    elif lost:
        print(lost[0])
    if learners:
        publish("scaling_learners", LEARNER_COLUMNS, learners, {**meta, "peer": "one learner"}, args.write)


if __name__ == "__main__":
    main()
