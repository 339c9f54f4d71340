"""The tournament orchestrator: a training pool of pods on Ray, a leaderboard, a generator, an updater.

The scheme of ElegantRL-podracers, on Ray rather than anything home-made:

* the **training pool** is a set of :class:`~pufferbox.tournament.pod.Pod` Ray actors, each a
  full pufferbox training run that trains one slice of steps at a time;
* the **generator** (:func:`~pufferbox.tournament.generator.propose`) seeds each new slice
  from the leaderboard: copy a strong agent, perturb its hyperparameters;
* the **updater** takes a finished slice's evaluation and inserts it into the
  **leaderboard** (:class:`~pufferbox.tournament.leaderboard.Leaderboard`, SQLite + checkpoint
  files under the run directory).

Elastic: before every scheduling decision the pool size is recomputed from the CPUs
Ray reports, so a cluster that grows gets more pods and one that shrinks loses the
pods on departed nodes (their in-flight slices are lost and rescheduled) without a
restart. Durable: everything the driver needs lives in the run directory; a driver
killed at any moment loses at most the slices in flight, and ``resume=True`` continues.

Example:
    >>> result = run_tournament("cartpole", pods=4, total_steps=400_000, run_dir="runs/t")  # doctest: +SKIP
    >>> result.best_score                                                                    # doctest: +SKIP
"""

from __future__ import annotations

import math
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from pufferbox.tournament.generator import TUNABLE, PodTask, propose
from pufferbox.tournament.leaderboard import Entry, Leaderboard
from pufferbox.tournament.pod import Pod, SliceResult

__all__ = ["TournamentError", "TournamentResult", "run_tournament"]


class TournamentError(RuntimeError):
    """The tournament cannot run as asked (bad settings, a resume mismatch, a pod's code failing)."""


@dataclass
class TournamentResult:
    run_dir: str
    total_steps: int
    slices: int
    lost_slices: int
    wall_time: float
    best_score: float | None
    best_entry: int | None
    pod_time: float  # seconds of pod slots held, summed over slots
    train_time: float  # seconds pods spent training
    eval_time: float
    overhead: float  # 1 - train_time / pod_time: waiting, setup, evaluation, checkpoint transfer
    events: list[dict] = field(default_factory=list, repr=False)

    def summary(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "events"}


SETTINGS_KEYS = ("env", "pods", "total_steps", "hours", "slice_steps", "eval_episodes", "capacity", "cpus_per_pod",
                 "seed")


def base_hyperparams(config: dict) -> dict:
    out = {}
    for dotted in TUNABLE:
        section, _, key = dotted.partition(".")
        if key in config.get(section, {}):
            out[dotted] = config[section][key]
    return out


def run_tournament(env: str, pods: int = 4, *, run_dir: str | Path, total_steps: int | None = None,
                   hours: float | None = None, slice_steps: int | None = None, eval_episodes: int = 10,
                   capacity: int = 8, cpus_per_pod: float | None = None, seed: int = 0,
                   ray_address: str | None = None, overrides: list[str] | None = None, resume: bool = False,
                   on_event: Callable[[dict], None] | None = None) -> TournamentResult:
    """Run (or, with ``resume``, continue) a tournament; returns when the step or time budget is spent."""
    from pufferbox.registry import get_registry
    from pufferbox.train.config import resolve_config
    from pufferbox.vector.ray import ensure_ray

    run_dir = Path(run_dir)
    board_exists = (run_dir / "leaderboard.sqlite").exists()
    if resume and not board_exists:
        raise TournamentError(f"--resume {run_dir}: no leaderboard.sqlite there; start a tournament without --resume")
    if not resume and board_exists:
        raise TournamentError(f"{run_dir} already holds a tournament; pass --resume to continue it or pick a new --run-dir")
    board = Leaderboard(run_dir, capacity=capacity)
    if resume:
        settings = board.get_state("settings")
        env = settings["env"]
        pods, total_steps, hours = settings["pods"], settings["total_steps"], settings["hours"]
        slice_steps, eval_episodes = settings["slice_steps"], settings["eval_episodes"]
        capacity, cpus_per_pod, seed = settings["capacity"], settings["cpus_per_pod"], settings["seed"]
        board.capacity = capacity
        config = board.get_state("config")
    else:
        if (total_steps is None) == (hours is None):
            raise TournamentError("give exactly one budget: --total-steps T or --hours H")
        if pods < 1:
            raise TournamentError(f"--pods must be at least 1, got {pods}")
        spec = get_registry().get(env)
        env = spec.name
        config = resolve_config(spec.defaults, overrides=list(overrides or []))
        # Slices are short: no LR annealing to zero inside one, no in-slice periodic checkpoints, no early stop.
        config["train"].update(anneal_lr=False, checkpoint_interval=0, stop_on_solve=False, total_steps=10**15)
        if slice_steps is None:  # about four slices per pod: short enough to exploit, long enough to learn
            update = config["train"]["num_steps"] * config["vec"]["num_envs"]
            slice_steps = max(update, total_steps // (pods * 4)) if total_steps is not None else 50 * update
        cpus_per_pod = cpus_per_pod if cpus_per_pod is not None else 1.0
        settings = {"env": env, "pods": pods, "total_steps": total_steps, "hours": hours, "slice_steps": slice_steps,
                    "eval_episodes": eval_episodes, "capacity": capacity, "cpus_per_pod": cpus_per_pod, "seed": seed}
        board.set_state("settings", settings)
        board.set_state("config", config)
        board.set_state("progress", {"steps": 0, "slices": 0, "lost": 0, "next_pod": 0, "wall_time": 0.0,
                                     "pod_time": 0.0, "train_time": 0.0, "eval_time": 0.0})
    progress = board.get_state("progress")
    hyper = base_hyperparams(config)
    events: list[dict] = []

    def emit(kind: str, **data: Any) -> None:
        event = {"event": kind, "wall_time": round(wall_time(), 3), **data}
        events.append(event)
        if on_event is not None:
            on_event(event)

    start, wall_before = time.perf_counter(), progress["wall_time"]

    def wall_time() -> float:
        return wall_before + time.perf_counter() - start

    ray = ensure_ray(ray_address)
    from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

    PodActor = ray.remote(Pod)
    slots: dict[int, Any] = {}  # slot -> actor
    slot_since: dict[int, float] = {}
    actor_names: dict[int, str] = {}
    busy: dict[Any, tuple[int, PodTask, float]] = {}  # ref -> (slot, task, submitted)
    rng = random.Random(seed * 1_000_003 + progress["slices"] + progress["lost"])

    def pool_size() -> int:
        cpus = ray.cluster_resources().get("CPU", 0.0)
        return max(1, min(pods, int(math.floor(cpus / cpus_per_pod + 1e-9)) if cpus_per_pod > 0 else pods))

    def budget_open(in_flight: int) -> bool:
        if total_steps is not None:
            return progress["steps"] + in_flight * slice_steps < total_steps
        return wall_time() < hours * 3600

    def release(slot: int) -> None:
        actor = slots.pop(slot, None)
        if slot in slot_since:
            progress["pod_time"] += time.perf_counter() - slot_since.pop(slot)
        if actor is not None:
            ray.kill(actor, no_restart=True)

    emit("start", env=env, pods=pods, resume=resume, steps=progress["steps"], slice_steps=slice_steps)
    try:
        while True:
            target = pool_size()
            for slot in sorted(slots):  # a shrunk cluster: retire idle slots beyond the pool size
                if len(slots) > target and all(s != slot for s, _, _ in busy.values()):
                    release(slot)
            while len(busy) < target and budget_open(len(busy)):
                slot = next(s for s in range(len(busy) + len(slots) + 1) if all(b != s for b, _, _ in busy.values()))
                if slot not in slots:
                    actor_names[slot] = f"pufferbox-pod-{uuid.uuid4().hex[:12]}"
                    slots[slot] = PodActor.options(num_cpus=cpus_per_pod, name=actor_names[slot]).remote(
                        env, config, str(run_dir), slot)
                    slot_since[slot] = time.perf_counter()
                task = propose(board, hyper, pod=progress["next_pod"], rng=rng)
                progress["next_pod"] += 1
                busy[slots[slot].run_slice.remote(task, slice_steps, eval_episodes)] = (slot, task, time.perf_counter())
                emit("slice_started", pod=task.pod, slot=slot, actor=actor_names[slot], parent=task.parent,
                     generation=task.generation, hyperparams=task.hyperparams)
            if not busy:
                break
            ready, _ = ray.wait(list(busy), num_returns=1, timeout=1.0)
            for ref in ready:
                slot, task, submitted = busy.pop(ref)
                try:
                    result: SliceResult = ray.get(ref, timeout=60)
                except RayTaskError as exc:  # the pod's own code failed: a bug to report, not a lost node
                    raise TournamentError(f"pod {task.pod} failed: {str(exc).strip().splitlines()[-1]}") from exc
                except (RayActorError, GetTimeoutError) as exc:
                    progress["lost"] += 1
                    release(slot)
                    board.set_state("progress", progress)
                    emit("slice_lost", pod=task.pod, slot=slot, reason=type(exc).__name__)
                    continue
                progress["steps"] += result.steps
                progress["slices"] += 1
                progress["train_time"] += result.train_time
                progress["eval_time"] += result.eval_time
                progress["wall_time"] = round(wall_time(), 4)
                rank = board.insert(
                    Entry(pod=task.pod, score=result.score, score_std=result.score_std, episodes=result.episodes,
                          steps=result.lineage_steps, hyperparams=task.hyperparams, parent=task.parent,
                          generation=task.generation, checkpoint=result.checkpoint),
                    total_steps=progress["steps"], wall_time=progress["wall_time"], state={"progress": progress})
                emit("slice_done", pod=task.pod, slot=slot, score=round(result.score, 3), rank=rank,
                     steps=progress["steps"], train_time=round(result.train_time, 3),
                     eval_time=round(result.eval_time, 3), setup_time=round(result.setup_time + result.load_time, 3),
                     node=result.node, backend=result.backend)
    finally:
        for slot in list(slots):
            release(slot)
        progress["wall_time"] = round(wall_time(), 4)
        board.set_state("progress", progress)
    best = board.best()
    pod_time = progress["pod_time"]
    result = TournamentResult(
        run_dir=str(run_dir), total_steps=progress["steps"], slices=progress["slices"], lost_slices=progress["lost"],
        wall_time=progress["wall_time"], best_score=best.score if best else None, best_entry=best.id if best else None,
        pod_time=round(pod_time, 3), train_time=round(progress["train_time"], 3),
        eval_time=round(progress["eval_time"], 3),
        overhead=round(1.0 - progress["train_time"] / pod_time, 4) if pod_time > 0 else 0.0, events=events)
    emit("done", **result.summary())
    board.close()
    return result
