"""The tournament orchestrator: a training pool of pods on Ray, a leaderboard, a generator, an updater.

The scheme of ElegantRL-podracers, on Ray rather than anything home-made:

* the **training pool** is a set of :class:`~pufferbox.tournament.pod.Pod` Ray actors, each a
  full pufferbox training run that trains one slice of steps at a time;
* the **generator** (:func:`~pufferbox.tournament.generator.propose`) seeds each new slice
  from the leaderboard: copy a strong agent, perturb its hyperparameters; slices start
  short and grow with the agent's generation (:func:`~pufferbox.tournament.generator.slice_length`),
  so exploit/explore starts after a few updates and good lineages then train longer; with
  ``halving`` (successive halving), generation ``g`` has at most ``ceil(pods / growth**g)``
  slices in flight, so deep generations spend steps on the leading lineage, not on branches;
* the **updater** takes a finished slice's evaluation and inserts it into the
  **leaderboard** (:class:`~pufferbox.tournament.leaderboard.Leaderboard`, SQLite + checkpoint
  files under the run directory). While slices train it polls each pod's progress and
  truncates a pod whose training returns are clearly behind the board's best
  (:func:`lagging`): its steps are counted, it is not evaluated, its slot gets a new task.

Step accounting: ``total_steps`` counts every step a pod trained: finished slices,
truncated ones, and lost ones (up to their last progress report). The board's best
history records, at each insertion, the steps taken so far including the slices still
in flight, so "steps until the best reached X" is never flattered by unfinished work.

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

from pufferbox.tournament.generator import TUNABLE, PodTask, propose, slice_length
from pufferbox.tournament.leaderboard import Entry, Leaderboard
from pufferbox.tournament.pod import Pod, SliceResult

__all__ = ["TournamentError", "TournamentResult", "lagging", "run_tournament"]

POLL_SECONDS = 0.25  # how often the updater looks at the pods' progress


class TournamentError(RuntimeError):
    """The tournament cannot run as asked (bad settings, a resume mismatch, a pod's code failing)."""


@dataclass
class TournamentResult:
    run_dir: str
    total_steps: int  # every step pods trained: finished, truncated and lost slices
    slices: int  # slices that ended (evaluated or truncated)
    lost_slices: int
    wall_time: float
    best_score: float | None
    best_entry: int | None
    pod_time: float  # seconds of pod slots held, summed over slots
    train_time: float  # seconds pods spent training
    eval_time: float
    overhead: float  # 1 - train_time / pod_time: waiting, setup, evaluation, checkpoint transfer
    truncated_slices: int = 0
    eval_steps: int = 0  # env steps spent evaluating (not part of total_steps)
    events: list[dict] = field(default_factory=list, repr=False)

    def summary(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "events"}


SETTINGS_KEYS = ("env", "pods", "total_steps", "hours", "slice_steps", "first_slice_steps", "slice_growth",
                 "truncate_below", "halving", "eval_episodes", "capacity", "cpus_per_pod", "seed")


def base_hyperparams(config: dict) -> dict:
    out = {}
    for dotted in TUNABLE:
        section, _, key = dotted.partition(".")
        if key in config.get(section, {}):
            out[dotted] = config[section][key]
    return out


def lagging(live: dict, best_score: float | None, below: float, min_episodes: int, trained: int = 0,
            best_trained: int = 0) -> bool:
    """Whether a training pod is clearly behind the board: its agent has trained at least as long as
    the best one (``trained`` >= ``best_trained``, lineage steps), and the mean return of at least
    ``min_episodes`` training episodes it finished this slice is below ``best - below * |best|``.

    Only finished episodes count, and enough of them that the few shortest ones do not decide;
    a pod whose episodes are still running (long, i.e. good, episodes) is never judged behind,
    nor is a young agent compared with one that trained longer.

    >>> lagging({"episodes": 80, "mean_return": 30.0}, best_score=200.0, below=0.5, min_episodes=64)
    True
    >>> lagging({"episodes": 80, "mean_return": 150.0}, best_score=200.0, below=0.5, min_episodes=64)
    False
    >>> lagging({"episodes": 80, "mean_return": 30.0}, 200.0, 0.5, 64, trained=4_000, best_trained=9_000)
    False
    """
    if best_score is None or below <= 0 or live.get("mean_return") is None or live["episodes"] < min_episodes:
        return False
    return trained >= best_trained and live["mean_return"] < best_score - below * abs(best_score)


def tournament_started(run_dir: Path) -> bool:
    """True if ``run_dir`` holds a tournament that got as far as recording its settings."""
    if not (run_dir / "leaderboard.sqlite").exists():
        return False
    board = Leaderboard.open_read_only(run_dir)
    try:
        return board.get_state("settings") is not None
    finally:
        board.close()


def run_tournament(env: str, pods: int = 4, *, run_dir: str | Path, total_steps: int | None = None,
                   hours: float | None = None, slice_steps: int | None = None, first_slice_steps: int | None = None,
                   slice_growth: float = 2.0, truncate_below: float = 0.5, halving: bool = False,
                   eval_episodes: int = 10,
                   capacity: int = 8, cpus_per_pod: float | None = None, seed: int = 0,
                   ray_address: str | None = None, overrides: list[str] | None = None, resume: bool = False,
                   on_event: Callable[[dict], None] | None = None) -> TournamentResult:
    """Run (or, with ``resume``, continue) a tournament; returns when the step or time budget is spent.

    ``slice_steps`` is the longest slice; generation ``g`` trains
    ``first_slice_steps * slice_growth**g`` steps, capped there (``slice_growth=1``: fixed slices).
    ``truncate_below``: truncate a pod whose training returns fall below
    ``best - truncate_below * |best|`` of the board (0: never truncate). ``halving``: start a
    generation-``g`` slice only while fewer than ``ceil(pods / slice_growth**g)`` slices run
    (slots left idle: fewer env steps per result, less throughput).
    """
    from pufferbox.registry import get_registry
    from pufferbox.train.config import resolve_config
    from pufferbox.vector.ray import ensure_ray

    run_dir = Path(run_dir)
    started = tournament_started(run_dir)
    if resume and not (run_dir / "leaderboard.sqlite").exists():
        raise TournamentError(f"--resume {run_dir}: no leaderboard.sqlite there; start a tournament without --resume")
    if resume and not started:
        raise TournamentError(f"--resume {run_dir}: the tournament there never started (its leaderboard.sqlite has "
                              f"no settings); start it again without --resume")
    if not resume and started:
        raise TournamentError(f"{run_dir} already holds a tournament; pass --resume to continue it or pick a new --run-dir")
    if resume:
        # Keep the newest agents' checkpoints even off the board: one lineage tip per pod can be continued.
        board = Leaderboard(run_dir, capacity=capacity, keep_recent=pods)
        settings = board.get_state("settings")
        env = settings["env"]
        pods, total_steps, hours = settings["pods"], settings["total_steps"], settings["hours"]
        slice_steps, eval_episodes = settings["slice_steps"], settings["eval_episodes"]
        # Boards written before the slice schedule existed trained fixed slices and never truncated.
        first_slice_steps = settings.get("first_slice_steps", slice_steps)
        slice_growth, truncate_below = settings.get("slice_growth", 1.0), settings.get("truncate_below", 0.0)
        halving = settings.get("halving", False)
        capacity, cpus_per_pod, seed = settings["capacity"], settings["cpus_per_pod"], settings["seed"]
        board.capacity, board.keep_recent = capacity, pods
        config = board.get_state("config")
    else:
        if (total_steps is None) == (hours is None):
            raise TournamentError("give exactly one budget: --total-steps T or --hours H")
        if pods < 1:
            raise TournamentError(f"--pods must be at least 1, got {pods}")
        if slice_growth < 1:
            raise TournamentError(f"--slice-growth must be at least 1, got {slice_growth}")
        spec = get_registry().get(env)
        env = spec.name
        config = resolve_config(spec.defaults, overrides=list(overrides or []))
        # Slices are short: no LR annealing to zero inside one, no in-slice periodic checkpoints, no early stop.
        config["train"].update(anneal_lr=False, checkpoint_interval=0, stop_on_solve=False, total_steps=10**15)
        update = config["train"]["num_steps"] * config["vec"]["num_envs"]
        if slice_steps is None:  # the longest slice: about four per pod, long enough to learn
            slice_steps = max(update, total_steps // (pods * 4)) if total_steps is not None else 50 * update
        if first_slice_steps is None:  # a few updates: enough to tell the first settings apart
            first_slice_steps = max(4 * update, slice_steps // 16)
        first_slice_steps = min(first_slice_steps, slice_steps)
        cpus_per_pod = cpus_per_pod if cpus_per_pod is not None else 1.0
        settings = {"env": env, "pods": pods, "total_steps": total_steps, "hours": hours, "slice_steps": slice_steps,
                    "first_slice_steps": first_slice_steps, "slice_growth": slice_growth,
                    "truncate_below": truncate_below, "halving": halving, "eval_episodes": eval_episodes,
                    "capacity": capacity, "cpus_per_pod": cpus_per_pod, "seed": seed}
        board = Leaderboard(run_dir, capacity=capacity, keep_recent=pods)  # only now: a failed start writes nothing
        board.start(settings, config, {"steps": 0, "slices": 0, "lost": 0, "next_pod": 0, "wall_time": 0.0,
                                       "pod_time": 0.0, "train_time": 0.0, "eval_time": 0.0})
    progress = {"truncated": 0, "eval_steps": 0, "lost_steps": 0, **board.get_state("progress")}
    hyper = base_hyperparams(config)
    # About one finished episode per env (and a few dozen at least) before a pod is judged.
    min_episodes = max(32, int(config["vec"]["num_envs"]))
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

    # Threaded actors: the driver reads a pod's progress (and truncates it) while it trains.
    PodActor = ray.remote(max_concurrency=2)(Pod)
    slots: dict[int, Any] = {}  # slot -> actor
    slot_since: dict[int, float] = {}
    actor_names: dict[int, str] = {}
    busy: dict[Any, tuple[int, PodTask, float]] = {}  # ref -> (slot, task, submitted)
    live: dict[Any, dict] = {}  # ref -> the pod's last progress report
    truncating: set[Any] = set()
    rng = random.Random(seed * 1_000_003 + progress["slices"] + progress["lost"])

    def pool_size() -> int:
        cpus = ray.cluster_resources().get("CPU", 0.0)
        return max(1, min(pods, int(math.floor(cpus / cpus_per_pod + 1e-9)) if cpus_per_pod > 0 else pods))

    def budget_open() -> bool:
        if total_steps is not None:
            return progress["steps"] + sum(task.steps for _, task, _ in busy.values()) < total_steps
        return wall_time() < hours * 3600

    def count_pod_time() -> None:  # while slots run, so a board saved mid-run never has train > pod time
        now = time.perf_counter()
        for held in slot_since:
            progress["pod_time"] += now - slot_since[held]
            slot_since[held] = now

    def release(slot: int) -> None:
        actor = slots.pop(slot, None)
        if slot in slot_since:
            progress["pod_time"] += time.perf_counter() - slot_since.pop(slot)
        if actor is not None:
            ray.kill(actor, no_restart=True)

    asks: dict[Any, Any] = {}  # slice ref -> its pod's unanswered progress() call

    def poll_progress(refs: list, timeout: float) -> None:
        """Refresh ``live`` for the slices ``refs``, waiting at most ``timeout`` s for the answers
        (a pod still starting answers later; its last report stands meanwhile)."""
        for ref in refs:
            if ref not in asks and busy[ref][0] in slots:
                asks[ref] = slots[busy[ref][0]].progress.remote()
        pending = {ask: ref for ref, ask in asks.items() if ref in refs}
        if not pending:
            return
        answered, _ = ray.wait(list(pending), num_returns=len(pending), timeout=timeout)
        for ask in answered:
            ref = pending[ask]
            del asks[ref]
            try:
                report = ray.get(ask)
            except (RayActorError, RayTaskError):
                continue
            if report.get("pod") == busy[ref][1].pod:
                live[ref] = report

    def in_flight_steps() -> int:
        return sum(live.get(ref, {}).get("steps", 0) for ref in busy)

    def truncate_laggards() -> None:
        best = board.best()
        if best is None or truncate_below <= 0:
            return
        for ref in [ref for ref in busy if ref not in truncating]:
            report = live.get(ref)
            slot, task, _ = busy[ref]
            if report and lagging(report, best.score, truncate_below, min_episodes,
                                  trained=task.parent_steps + report["steps"], best_trained=best.steps):
                truncating.add(ref)
                slots[slot].truncate.remote(task.pod, f"training return {report['mean_return']:.4g} after "
                                                      f"{report['steps']} steps; board best {best.score:.4g}")

    emit("start", env=env, pods=pods, resume=resume, steps=progress["steps"], slice_steps=slice_steps,
         first_slice_steps=first_slice_steps, slice_growth=slice_growth)
    try:
        while True:
            target = pool_size()
            for slot in sorted(slots):  # a shrunk cluster: retire idle slots beyond the pool size
                if len(slots) > target and all(s != slot for s, _, _ in busy.values()):
                    release(slot)
            while len(busy) < target and budget_open():
                slot = next(s for s in range(len(busy) + len(slots) + 1) if all(b != s for b, _, _ in busy.values()))
                if slot not in slots:
                    actor_names[slot] = f"pufferbox-pod-{uuid.uuid4().hex[:12]}"
                    slots[slot] = PodActor.options(num_cpus=cpus_per_pod, name=actor_names[slot]).remote(
                        env, config, str(run_dir), slot)
                    slot_since[slot] = time.perf_counter()
                # The first `pods` tasks found the population: one new lineage each, so the first
                # (short) slices compare that many different settings before exploiting any.
                task = propose(board, hyper, pod=progress["next_pod"], rng=rng, fresh=progress["next_pod"] < pods)
                if halving and len(busy) >= max(1, math.ceil(pods / slice_growth ** task.generation)):
                    break  # successive halving: deeper generations train fewer branches at once
                task.steps = slice_length(task.generation, first_slice_steps, slice_steps, slice_growth)
                progress["next_pod"] += 1
                busy[slots[slot].run_slice.remote(task, task.steps, eval_episodes)] = (slot, task, time.perf_counter())
                emit("slice_started", pod=task.pod, slot=slot, actor=actor_names[slot], parent=task.parent,
                     generation=task.generation, steps=task.steps, hyperparams=task.hyperparams,
                     perturbed=task.meta.get("perturbed", {}))
            if not busy:
                break
            ready, _ = ray.wait(list(busy), num_returns=1, timeout=POLL_SECONDS)
            if not ready:
                poll_progress(list(busy), timeout=0)
                truncate_laggards()
                continue
            for ref in ready:
                slot, task, submitted = busy[ref]
                try:
                    result: SliceResult = ray.get(ref, timeout=60)
                except RayTaskError as exc:  # the pod's own code failed: a bug to report, not a lost node
                    raise TournamentError(f"pod {task.pod} failed: {str(exc).strip().splitlines()[-1]}") from exc
                except (RayActorError, GetTimeoutError) as exc:
                    lost_steps = live.get(ref, {}).get("steps", 0)  # trained before the pod vanished, as last seen
                    del busy[ref]
                    live.pop(ref, None)
                    asks.pop(ref, None)
                    progress["lost"] += 1
                    progress["steps"] += lost_steps
                    progress["lost_steps"] += lost_steps
                    release(slot)
                    board.set_state("progress", progress)
                    emit("slice_lost", pod=task.pod, slot=slot, reason=type(exc).__name__, steps=progress["steps"])
                    continue
                del busy[ref]
                live.pop(ref, None)
                asks.pop(ref, None)
                truncating.discard(ref)
                progress["steps"] += result.steps
                progress["slices"] += 1
                progress["train_time"] += result.train_time
                progress["eval_time"] += result.eval_time
                progress["eval_steps"] += result.eval_steps
                progress["wall_time"] = round(wall_time(), 4)
                if result.truncated:
                    progress["truncated"] += 1
                    board.set_state("progress", progress)
                    emit("slice_truncated", pod=task.pod, slot=slot, steps=progress["steps"],
                         slice_steps=result.steps, reason=result.truncated)
                    continue
                poll_progress(list(busy), timeout=1.0)  # the steps the other pods have taken by now count too
                count_pod_time()
                rank = board.insert(
                    Entry(pod=task.pod, score=result.score, score_std=result.score_std, episodes=result.episodes,
                          steps=result.lineage_steps, hyperparams=task.hyperparams, parent=task.parent,
                          generation=task.generation, checkpoint=result.checkpoint),
                    total_steps=progress["steps"] + in_flight_steps(), wall_time=progress["wall_time"],
                    eval_steps=progress["eval_steps"], state={"progress": progress})
                emit("slice_done", pod=task.pod, slot=slot, score=round(result.score, 3), rank=rank,
                     steps=progress["steps"], slice_steps=result.steps, train_time=round(result.train_time, 3),
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
        overhead=round(1.0 - progress["train_time"] / pod_time, 4) if pod_time > 0 else 0.0,
        truncated_slices=progress["truncated"], eval_steps=progress["eval_steps"], events=events)
    emit("done", **result.summary())
    board.close()
    return result
