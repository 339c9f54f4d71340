"""Ray scaling: Ray vs multiprocessing on one machine, and a simulated cluster growing 1 -> 2 -> 3 nodes.

One machine (random actions, no model): NetHack and the 1 ms uneven-step env
(``pufferbox.vector.testenvs``) on the multiprocessing backend (its best configs from
bench_vectorization/bench_nethack), the Ray send/recv backend (one Ray call per actor per step)
and Ray remote rollouts (:mod:`pufferbox.vector.ray_rollout`: K steps per call, K chosen so a call
carries >= 10 ms), plus PufferLib 3.0's ``pufferlib.vector.Ray`` when its venv exists
(``benchmarks/pufferlib_peer.py``; skipped with a note otherwise).

Cluster (``ray.cluster_utils.Cluster``: several raylets on this machine, each ``--cpus-per-node``
CPUs): remote rollouts of the 1 ms env with one actor per node CPU, 1, 2 then 3 nodes; ideal =
actors x 1,000 steps/s (one 1 ms step at a time per actor), capped by this machine's cores.
``--write`` writes benchmarks/results/ray_uneven.json, ray_nethack.json and ray_cluster.json and
re-renders their tables in RESULTS.md.

    .venv/bin/python benchmarks/bench_ray.py --seconds 5 --write
    .venv/bin/python benchmarks/bench_ray.py --seconds 0.5 --sections cluster   # smoke run

``--sections learn`` trains CartPole on remote rollouts and on the serial backend at equal budgets
(24,576 steps, seeds 1-3) and prints the mean return of the first 3 and last 8 updates' episodes:
remote rollouts must learn as the host's do (the test suite checks only the mechanism).

    .venv/bin/python benchmarks/bench_ray.py --sections learn
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench_vectorization import pufferlib_peer
from results import load, machine, publish

from pufferbox.registry import get_registry
from pufferbox.throughput import bench
from pufferbox.vector.base import EnvFactory
from pufferbox.vector.testenvs import env_spec_for

MEAN_STEP_S = 1e-3


def rollout_sps(
    spec: Any, num_envs: int, num_workers: int, seconds: float, batch_size: int | None = None, native: bool = False
) -> tuple[float, int]:
    """Agent steps/s of remote rollouts (random actions, K auto) and the K they settled on."""
    from pufferbox.vector.ray_rollout import RayRollouts

    with RayRollouts(
        EnvFactory(spec, use_native=native), num_envs=num_envs, num_workers=num_workers, batch_size=batch_size
    ) as r:
        r.reset(seed=0)
        r.submit_idle()
        r.wait(r.num_workers)  # measures the step time: K from here on
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            r.submit_idle(depth=2)  # each actor starts its next call while the driver takes this one
            steps += sum(res.steps for res in r.wait()) * r.rows_per_worker
        return steps / (time.perf_counter() - start), r.auto_steps()


def one_machine(seconds: float, nethack_envs: int) -> list[tuple[str, str, float]]:
    rows: list[tuple[str, str, float]] = []

    def add(workload: str, name: str, fn: Callable[[], float]) -> None:
        try:
            value = fn()
        except Exception as exc:  # an env family not installed: say so, keep going
            print(f"note: {workload} / {name} skipped: {type(exc).__name__}: {exc}", flush=True)
            return
        rows.append((workload, name, value))
        print(f"{workload:8s} {name:66s} {value:>10,.0f}", flush=True)

    def rollouts(workload: str, spec: Any, envs: int, workers: int, **kw: Any) -> None:
        holder: dict[str, int] = {}

        def run() -> float:
            sps, holder["k"] = rollout_sps(spec, envs, workers, seconds, **kw)
            return sps

        batch = f", batch {kw['batch_size']}" if kw.get("batch_size") else ""
        add(workload, f"Ray remote rollouts, {envs} envs / {workers} actors{batch} (K auto)", run)
        if rows and rows[-1][0] == workload and "k" in holder:
            rows[-1] = (workload, rows[-1][1].replace("K auto", f"K={holder['k']}"), rows[-1][2])

    cores = os.cpu_count() or 1
    uneven = env_spec_for("uneven", mean_step_s=MEAN_STEP_S)
    w = "uneven"
    add(
        w,
        "multiprocessing pool, 4 envs / 4 workers, batch 2 (best)",
        lambda: bench(uneven, backend="multiprocessing", num_envs=4, num_workers=4, batch_size=2, seconds=seconds)["sps"],
    )
    add(
        w,
        "multiprocessing, 2 envs / 2 workers (sync)",
        lambda: bench(uneven, backend="multiprocessing", num_envs=2, num_workers=2, seconds=seconds)["sps"],
    )
    add(
        w,
        "Ray send/recv, 4 envs / 4 actors, batch 2",
        lambda: bench(uneven, backend="ray", num_envs=4, num_workers=4, batch_size=2, seconds=seconds)["sps"],
    )
    rollouts(w, uneven, cores, cores)
    rollouts(w, uneven, 2 * cores, 2 * cores, batch_size=cores)
    for name, value in pufferlib_peer("uneven-ray", seconds, 4).items():
        add(w, name, lambda value=value: value)

    w = "nethack"
    n = nethack_envs
    nethack = get_registry().get("nethack")
    add(
        w,
        f"multiprocessing, {n} envs / 2 workers",
        lambda: bench(nethack, backend="multiprocessing", num_envs=n, num_workers=2, seconds=seconds, native=False)["sps"],
    )
    add(
        w,
        f"multiprocessing pool, {2 * n} envs / 4 workers, batch {n}",
        lambda: bench(
            nethack, backend="multiprocessing", num_envs=2 * n, num_workers=4, batch_size=n, seconds=seconds, native=False
        )["sps"],
    )
    add(
        w,
        f"Ray send/recv, {n} envs / 2 actors",
        lambda: bench(nethack, backend="ray", num_envs=n, num_workers=2, seconds=seconds, native=False)["sps"],
    )
    rollouts(w, nethack, n, cores)
    rollouts(w, nethack, 2 * n, 2 * cores, batch_size=n)
    for name, value in pufferlib_peer("nethack-ray", seconds, n).items():
        add(w, name, lambda value=value: value)
    return rows


def cluster_scaling(seconds: float, cpus_per_node: int, max_nodes: int) -> list[tuple[int, int, float, float, float]]:
    """``(nodes, cpus, steps/s, % of ideal, % of machine limit)`` as the simulated cluster grows."""
    import ray
    from ray.cluster_utils import Cluster

    from pufferbox.vector.ray import ensure_ray

    os.environ["RAY_AUTH_MODE"] = "disabled"
    root = tempfile.mkdtemp(prefix="pbbr-", dir="/tmp")  # private; short (Unix socket paths <= 107 bytes)
    os.mkdir(os.path.join(root, "ray"))
    os.environ["RAY_TMPDIR"] = root
    head = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": cpus_per_node, "include_dashboard": False, "temp_dir": os.path.join(root, "s")},
    )
    out = []
    try:
        ensure_ray(address=head.address)
        uneven = env_spec_for("uneven", mean_step_s=MEAN_STEP_S)
        per_step = 1.0 / MEAN_STEP_S
        for nodes in range(1, max_nodes + 1):
            if nodes > 1:
                head.add_node(num_cpus=cpus_per_node)
                head.wait_for_nodes()
            cpus = nodes * cpus_per_node
            sps, _ = rollout_sps(uneven, 2 * cpus, cpus, seconds)
            ideal, limit = cpus * per_step, min(cpus, os.cpu_count() or 1) * per_step
            out.append((nodes, cpus, sps, 100 * sps / ideal, 100 * sps / limit))
            print(
                f"cluster  {nodes} node(s) x {cpus_per_node} CPU: {sps:>10,.0f} steps/s "
                f"({out[-1][3]:.0f}% of ideal, {out[-1][4]:.0f}% of the machine's limit)",
                flush=True,
            )
    finally:
        ray.shutdown()
        head.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    return out


def publish_tables(machine_rows: list, cluster_rows: list, command: str, cpus_per_node: int, write: bool) -> None:
    meta = {"command": command, "machine": machine(), "load": load()}
    peer = "PufferLib 3.0 Ray backend"
    for workload in dict.fromkeys(r[0] for r in machine_rows):
        group = [r for r in machine_rows if r[0] == workload]
        rows = [[name, f"{value:,.0f}", f"{value / group[0][2]:.2f}x"] for _, name, value in group]
        columns = ["configuration", "steps/s", "vs first row"]
        publish(f"ray_{workload}", columns, rows, {**meta, "peer": peer}, write)
    if cluster_rows:
        columns = ["nodes", "CPUs", "steps/s", "% of ideal (CPUs x 1,000)", "% of this machine's limit"]
        rows = [[n, c, f"{s:,.0f}", f"{p:.0f}%", f"{m:.0f}%"] for n, c, s, p, m in cluster_rows]
        cluster = f"{meta['machine']} (a simulated cluster, {cpus_per_node} CPU(s) per node, one actor per CPU)"
        publish("ray_cluster", columns, rows, {**meta, "machine": cluster}, write, align="rrrrr")


def learning(seeds: tuple[int, ...] = (1, 2, 3), total_steps: int = 24_576) -> None:
    """CartPole's return on Ray remote rollouts vs the serial backend, equal budgets and seeds."""
    import numpy as np

    from pufferbox.train.config import resolve_run_config
    from pufferbox.train.trainer import Trainer

    for backend in ("ray", "serial"):
        for seed in seeds:
            overrides = [f"vec.backend={backend}", "vec.num_envs=8", "vec.native=false", "train.num_steps=32"]
            overrides += [f"train.total_steps={total_steps}", "train.learning_rate=1e-3", f"train.seed={seed}"]
            overrides += ["vec.num_workers=2"] if backend == "ray" else []
            trainer = Trainer("cartpole", resolve_run_config(overrides=overrides))
            try:
                history = trainer.train().history
            finally:
                trainer.close()
            returns = [h["episode_return"] for h in history if h["episode_return"] is not None]
            early, late = float(np.mean(returns[:3])), float(np.mean(returns[-8:]))
            lost = sum(h.get("lost_steps", 0) for h in history)
            print(f"{backend:6s} seed {seed}: first 3 updates {early:6.1f}, last 8 {late:6.1f}, lost steps {lost}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="timing per configuration")
    parser.add_argument("--sections", default="machine,cluster", help="comma-separated: machine, cluster, learn")
    parser.add_argument("--cpus-per-node", type=int, default=1)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--nethack-envs", type=int, default=8)
    parser.add_argument("--write", action="store_true", help="write the tables' JSON and re-render RESULTS.md")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    if sections - {"machine", "cluster", "learn"} or args.seconds <= 0 or args.cpus_per_node < 1 or args.nodes < 1:
        parser.error("--sections takes machine, cluster, learn; --seconds, --cpus-per-node and --nodes must be positive")
    if "learn" in sections:
        learning()
    # The cluster first: one process joins one Ray at a time, and the local one stays up until exit.
    cluster_rows = cluster_scaling(args.seconds, args.cpus_per_node, args.nodes) if "cluster" in sections else []
    machine_rows = one_machine(args.seconds, args.nethack_envs) if "machine" in sections else []
    command = " ".join([".venv/bin/python", *sys.argv])
    publish_tables(machine_rows, cluster_rows, command, args.cpus_per_node, args.write)


if __name__ == "__main__":
    main()
