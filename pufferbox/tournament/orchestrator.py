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
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from pufferbox.tournament.generator import TUNABLE, PodTask, propose, slice_length
from pufferbox.tournament.leaderboard import Entry, Leaderboard
from pufferbox.tournament.pod import Pod, SliceResult

__all__ = ["Settings", "Tournament", "TournamentError", "TournamentResult", "lagging", "run_tournament"]

POLL_SECONDS = 0.25  # how often the updater looks at the pods' progress
SCORE_OPPONENTS = ("self", "random")


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


def base_hyperparams(config: dict) -> dict:
    out = {}
    for dotted in TUNABLE:
        section, _, key = dotted.partition(".")
        if key in config.get(section, {}):
            out[dotted] = config[section][key]
    return out


def lagging(
    live: dict, best_score: float | None, below: float, min_episodes: int, trained: int = 0, best_trained: int = 0
) -> bool:
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


@dataclass
class Settings:
    """What a tournament was started with; stored on its board so ``--resume`` continues it as it was."""

    env: str
    pods: int
    total_steps: int | None
    hours: float | None
    slice_steps: int  # the longest slice
    first_slice_steps: int
    slice_growth: float
    truncate_below: float
    halving: bool
    eval_episodes: int
    capacity: int
    cpus_per_pod: float
    seed: int
    # An env with agent groups scores a checkpoint by one group's mean return ("tagger"), playing
    # its own checkpoint's other groups ("self") or uniform random actions there ("random").
    score_group: str | None = None
    score_opponent: str = "self"

    @classmethod
    def from_board(cls, stored: dict) -> Settings:
        # Boards written before the slice schedule existed trained fixed slices and never truncated;
        # before group scoring, every board scored the mean return over all agents.
        old = {
            "first_slice_steps": stored["slice_steps"],
            "slice_growth": 1.0,
            "truncate_below": 0.0,
            "halving": False,
            "score_opponent": "self",
        }
        return cls(**{f.name: stored.get(f.name, old.get(f.name)) for f in fields(cls)})


def new_settings(
    env: str,
    pods: int,
    config: dict,
    total_steps: int | None,
    hours: float | None,
    slice_steps: int | None,
    first_slice_steps: int | None,
    slice_growth: float,
    truncate_below: float,
    halving: bool,
    eval_episodes: int,
    capacity: int,
    cpus_per_pod: float | None,
    seed: int,
    score_group: str | None = None,
    score_opponent: str = "self",
) -> Settings:
    """Check a new tournament's settings and fill in the slice lengths left out (``score_group``: already
    resolved by :func:`score_group_of`)."""
    if (total_steps is None) == (hours is None):
        raise TournamentError("give exactly one budget: --total-steps T or --hours H")
    if pods < 1:
        raise TournamentError(f"--pods must be at least 1, got {pods}")
    if slice_growth < 1:
        raise TournamentError(f"--slice-growth must be at least 1, got {slice_growth}")
    if score_opponent not in SCORE_OPPONENTS:
        raise TournamentError(f"--score-opponent: {score_opponent!r} is not one of {', '.join(SCORE_OPPONENTS)}")
    if score_opponent == "random":
        truncate_below = 0.0  # training returns (against itself) do not compare with scores against random play
    update = config["train"]["num_steps"] * config["vec"]["num_envs"]
    if slice_steps is None:  # the longest slice: about four per pod, long enough to learn
        slice_steps = max(update, total_steps // (pods * 4)) if total_steps is not None else 50 * update
    if first_slice_steps is None:  # a few updates: enough to tell the first settings apart
        first_slice_steps = max(4 * update, slice_steps // 16)
    return Settings(
        env=env,
        pods=pods,
        total_steps=total_steps,
        hours=hours,
        slice_steps=slice_steps,
        first_slice_steps=min(first_slice_steps, slice_steps),
        slice_growth=slice_growth,
        truncate_below=truncate_below,
        halving=halving,
        eval_episodes=eval_episodes,
        capacity=capacity,
        cpus_per_pod=cpus_per_pod if cpus_per_pod is not None else 1.0,
        seed=seed,
        score_group=score_group,
        score_opponent=score_opponent,
    )


def score_group_of(spec: Any, config: dict, asked: str | None) -> str | None:
    """The group whose return scores ``spec``'s checkpoints: ``asked`` (checked against the env's groups),
    else the first learning group of an env with groups; None for one shared policy (every agent's return)."""
    from pufferbox.groups import GroupError, resolve_layout

    try:
        layout = resolve_layout(spec, config.get("env", {}), config.get("groups"))
    except GroupError as exc:
        raise TournamentError(str(exc)) from None
    if layout is None or len(layout.names) < 2:
        if asked is not None:
            raise TournamentError(
                f"--score-group {asked}: {spec.name} trains one shared policy (no agent groups); drop --score-group"
            )
        return None
    if asked is None:
        frozen = set(config.get("league", {}).get("frozen", []))
        return next((name for name in layout.names if name not in frozen), layout.names[0])
    if asked not in layout.names:
        raise TournamentError(f"--score-group: unknown group {asked!r}; {spec.name}'s groups are {layout.names}")
    return asked


def tournament_started(run_dir: Path) -> bool:
    """True if ``run_dir`` holds a tournament that got as far as recording its settings."""
    if not (run_dir / "leaderboard.sqlite").exists():
        return False
    board = Leaderboard.open_read_only(run_dir)
    try:
        return board.get_state("settings") is not None
    finally:
        board.close()


class Tournament:
    """The driver: a pool of pod actors, the board, and one loop of small steps.

    :meth:`run` repeats :meth:`schedule` (size the pool to the cluster, give idle slots a task
    from the generator, :meth:`dispatch` it) then :meth:`collect` (a finished slice: :meth:`commit`
    it to the board; a vanished pod: :meth:`lose` it), and while waiting :meth:`evaluate` the pods'
    progress (truncating laggards). ``progress`` (steps, slices, times) is saved on the board with
    every change, so a killed driver resumes from it.
    """

    def __init__(
        self,
        board: Leaderboard,
        settings: Settings,
        config: dict,
        run_dir: Path,
        resume: bool,
        ray_address: str | None = None,
        on_event: Callable[[dict], None] | None = None,
    ):
        from pufferbox.vector.ray import ensure_ray

        self.board, self.settings, self.config, self.run_dir = board, settings, config, run_dir
        self.resume, self.on_event = resume, on_event
        self.progress = {"truncated": 0, "eval_steps": 0, "lost_steps": 0, **board.get_state("progress")}
        self.hyper = base_hyperparams(config)
        # About one finished episode per env (and a few dozen at least) before a pod is judged.
        self.min_episodes = max(32, int(config["vec"]["num_envs"]))
        self.events: list[dict] = []
        self.start, self.wall_before = time.perf_counter(), self.progress["wall_time"]
        self.ray = ensure_ray(ray_address)
        # Threaded actors: the driver reads a pod's progress (and truncates it) while it trains.
        self.PodActor = self.ray.remote(max_concurrency=2)(Pod)
        self.slots: dict[int, Any] = {}  # slot -> actor
        self.slot_since: dict[int, float] = {}
        self.actor_names: dict[int, str] = {}
        self.opponents_sent: dict[int, set[int]] = {}  # slot -> board entries its actor's pool already holds
        self.busy: dict[Any, tuple[int, PodTask, float]] = {}  # ref -> (slot, task, submitted)
        self.live: dict[Any, dict] = {}  # ref -> the pod's last progress report
        self.asks: dict[Any, Any] = {}  # slice ref -> its pod's unanswered progress() call
        self.truncating: set[Any] = set()
        self.rng = random.Random(settings.seed * 1_000_003 + self.progress["slices"] + self.progress["lost"])

    @classmethod
    def open(
        cls,
        env: str,
        pods: int,
        run_dir: str | Path,
        resume: bool,
        overrides: list[str] | None,
        ray_address: str | None = None,
        on_event: Callable[[dict], None] | None = None,
        **budget: Any,
    ) -> Tournament:
        """A new tournament in ``run_dir``, or (``resume``) the one there; ``budget``: :func:`new_settings`'s."""
        from pufferbox.registry import get_registry
        from pufferbox.train.config import resolve_config

        run_dir = Path(run_dir)
        started = tournament_started(run_dir)
        if resume and not (run_dir / "leaderboard.sqlite").exists():
            raise TournamentError(f"--resume {run_dir}: no leaderboard.sqlite there; start a tournament without --resume")
        if resume and not started:
            raise TournamentError(
                f"--resume {run_dir}: the tournament there never started (its leaderboard.sqlite "
                "has no settings); start it again without --resume"
            )
        if not resume and started:
            raise TournamentError(
                f"{run_dir} already holds a tournament; pass --resume to continue it or pick a new --run-dir"
            )
        if resume:
            # Keep the newest agents' checkpoints even off the board: one lineage tip per pod can be continued.
            board = Leaderboard(run_dir, capacity=budget["capacity"], keep_recent=pods)
            settings = Settings.from_board(board.get_state("settings"))
            board.capacity, board.keep_recent = settings.capacity, settings.pods
            config = board.get_state("config")
        else:
            spec = get_registry().get(env)
            config = resolve_config(spec.training.config, overrides=list(overrides or []))
            # Slices are short: no LR annealing to zero inside one, no in-slice periodic checkpoints, no early stop.
            config["train"].update(anneal_lr=False, checkpoint_interval=0, stop_on_solve=False, total_steps=10**15)
            if config.get("league", {}).get("frozen"):  # the frozen groups' pool is the leaderboard (Pod.opponent_pool)
                config["league"]["snapshot_interval"] = 0
            budget["score_group"] = score_group_of(spec, config, budget.get("score_group"))
            settings = new_settings(spec.name, pods, config, **budget)
            # Only now, in one transaction: a start that failed above leaves no database to refuse the retry.
            board = Leaderboard(run_dir, capacity=budget["capacity"], keep_recent=pods)
            board.start(
                asdict(settings),
                config,
                {
                    "steps": 0,
                    "slices": 0,
                    "lost": 0,
                    "next_pod": 0,
                    "wall_time": 0.0,
                    "pod_time": 0.0,
                    "train_time": 0.0,
                    "eval_time": 0.0,
                },
            )
        return cls(board, settings, config, run_dir, resume, ray_address, on_event)

    # -- bookkeeping -------------------------------------------------------------------------
    def wall_time(self) -> float:
        return self.wall_before + time.perf_counter() - self.start

    def emit(self, kind: str, **data: Any) -> None:
        event = {"event": kind, "wall_time": round(self.wall_time(), 3), **data}
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def pool_size(self) -> int:
        cpus, s = self.ray.cluster_resources().get("CPU", 0.0), self.settings
        return max(1, min(s.pods, math.floor(cpus / s.cpus_per_pod + 1e-9) if s.cpus_per_pod > 0 else s.pods))

    def budget_open(self) -> bool:
        if self.settings.total_steps is not None:
            committed = sum(task.steps for _, task, _ in self.busy.values())
            return self.progress["steps"] + committed < self.settings.total_steps
        return self.wall_time() < self.settings.hours * 3600

    def in_flight_steps(self) -> int:
        return sum(self.live.get(ref, {}).get("steps", 0) for ref in self.busy)

    def count_pod_time(self) -> None:
        """Add the running slots' time so far, so a board saved mid-run never has train time > pod time."""
        now = time.perf_counter()
        for held in self.slot_since:
            self.progress["pod_time"] += now - self.slot_since[held]
            self.slot_since[held] = now

    def release(self, slot: int) -> None:
        actor = self.slots.pop(slot, None)
        self.opponents_sent.pop(slot, None)
        if slot in self.slot_since:
            self.progress["pod_time"] += time.perf_counter() - self.slot_since.pop(slot)
        if actor is not None:
            self.ray.kill(actor, no_restart=True)

    def forget(self, ref: Any) -> tuple[int, PodTask, float]:
        self.live.pop(ref, None)
        self.asks.pop(ref, None)
        self.truncating.discard(ref)
        return self.busy.pop(ref)

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> TournamentResult:
        s = self.settings
        self.emit(
            "start",
            env=s.env,
            pods=s.pods,
            resume=self.resume,
            steps=self.progress["steps"],
            slice_steps=s.slice_steps,
            first_slice_steps=s.first_slice_steps,
            slice_growth=s.slice_growth,
            **({"score_group": s.score_group, "score_opponent": s.score_opponent} if s.score_group else {}),
        )
        try:
            while self.schedule():
                ready, _ = self.ray.wait(list(self.busy), num_returns=1, timeout=POLL_SECONDS)
                if not ready:
                    self.evaluate()
                for ref in ready:
                    self.collect(ref)
        finally:
            for slot in list(self.slots):
                self.release(slot)
            self.progress["wall_time"] = round(self.wall_time(), 4)
            self.board.set_state("progress", self.progress)
        return self.result()

    def schedule(self) -> bool:
        """Size the pool to the cluster and give free slots tasks while the budget lasts; False once
        nothing is in flight (the tournament is over)."""
        target = self.pool_size()
        for slot in sorted(self.slots):  # a shrunk cluster: retire idle slots beyond the pool size
            if len(self.slots) > target and all(s != slot for s, _, _ in self.busy.values()):
                self.release(slot)
        s = self.settings
        while len(self.busy) < target and self.budget_open():
            # The first `pods` tasks found the population: one new lineage each, so the first
            # (short) slices compare that many different settings before exploiting any.
            next_pod = self.progress["next_pod"]
            task = propose(self.board, self.hyper, pod=next_pod, rng=self.rng, fresh=next_pod < s.pods)
            if s.halving and len(self.busy) >= max(1, math.ceil(s.pods / s.slice_growth**task.generation)):
                break  # successive halving: deeper generations train fewer branches at once
            task.steps = slice_length(task.generation, s.first_slice_steps, s.slice_steps, s.slice_growth)
            self.progress["next_pod"] += 1
            self.dispatch(task)
        return bool(self.busy)

    def dispatch(self, task: PodTask) -> None:
        """Send ``task`` to the lowest free slot, starting a pod actor there if it has none."""
        settings, taken = self.settings, {b for b, _, _ in self.busy.values()}
        slot = next(s for s in range(len(self.busy) + len(self.slots) + 1) if s not in taken)
        if slot not in self.slots:
            self.actor_names[slot] = f"pufferbox-pod-{uuid.uuid4().hex[:12]}"
            self.slots[slot] = self.PodActor.options(num_cpus=settings.cpus_per_pod, name=self.actor_names[slot]).remote(
                settings.env, self.config, str(self.run_dir), slot, settings.score_group, settings.score_opponent
            )
            self.slot_since[slot] = time.perf_counter()
        if self.config.get("league", {}).get("frozen"):  # the pod keeps its pool: send only the entries it lacks
            sent = self.opponents_sent.setdefault(slot, set())
            task.opponents = {e.id: Path(str(e.checkpoint)).read_bytes() for e in self.board.entries() if e.id not in sent}
            sent.update(task.opponents)
        ref = self.slots[slot].run_slice.remote(task, task.steps, self.settings.eval_episodes)
        self.busy[ref] = (slot, task, time.perf_counter())
        self.emit(
            "slice_started",
            pod=task.pod,
            slot=slot,
            actor=self.actor_names[slot],
            parent=task.parent,
            generation=task.generation,
            steps=task.steps,
            hyperparams=task.hyperparams,
            perturbed=task.meta.get("perturbed", {}),
        )

    def poll_progress(self, refs: list, timeout: float) -> None:
        """Refresh ``live`` for the slices ``refs``, waiting at most ``timeout`` s for the answers
        (a pod still starting answers later; its last report stands meanwhile)."""
        from ray.exceptions import RayActorError, RayTaskError

        for ref in refs:
            if ref not in self.asks and self.busy[ref][0] in self.slots:
                self.asks[ref] = self.slots[self.busy[ref][0]].progress.remote()
        pending = {ask: ref for ref, ask in self.asks.items() if ref in refs}
        if not pending:
            return
        answered, _ = self.ray.wait(list(pending), num_returns=len(pending), timeout=timeout)
        for ask in answered:
            ref = pending[ask]
            del self.asks[ref]
            try:
                report = self.ray.get(ask)
            except (RayActorError, RayTaskError):
                continue
            if report.get("pod") == self.busy[ref][1].pod:
                self.live[ref] = report

    def evaluate(self) -> None:
        """Read the pods' progress and truncate those clearly behind the board's best."""
        self.poll_progress(list(self.busy), timeout=0)
        best, below = self.board.best(), self.settings.truncate_below
        if best is None or below <= 0:
            return
        for ref in [ref for ref in self.busy if ref not in self.truncating]:
            report = self.live.get(ref)
            slot, task, _ = self.busy[ref]
            if report and lagging(
                report,
                best.score,
                below,
                self.min_episodes,
                trained=task.parent_steps + report["steps"],
                best_trained=best.steps,
            ):
                self.truncating.add(ref)
                self.slots[slot].truncate.remote(
                    task.pod,
                    f"training return {report['mean_return']:.4g} after "
                    f"{report['steps']} steps; board best {best.score:.4g}",
                )

    def collect(self, ref: Any) -> None:
        """A finished slice: count its steps and commit it, or record it as truncated or lost."""
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

        slot, task, _ = self.busy[ref]
        try:
            result: SliceResult = self.ray.get(ref, timeout=60)
        except RayTaskError as exc:  # the pod's own code failed: a bug to report, not a lost node
            raise TournamentError(f"pod {task.pod} failed: {str(exc).strip().splitlines()[-1]}") from exc
        except (RayActorError, GetTimeoutError) as exc:
            return self.lose(ref, type(exc).__name__)
        self.forget(ref)
        progress = self.progress
        progress["steps"] += result.steps
        progress["slices"] += 1
        progress["train_time"] += result.train_time
        progress["eval_time"] += result.eval_time
        progress["eval_steps"] += result.eval_steps
        progress["wall_time"] = round(self.wall_time(), 4)
        if result.truncated:
            progress["truncated"] += 1
            self.board.set_state("progress", progress)
            self.emit(
                "slice_truncated",
                pod=task.pod,
                slot=slot,
                steps=progress["steps"],
                slice_steps=result.steps,
                reason=result.truncated,
            )
            return
        self.commit(slot, task, result)

    def lose(self, ref: Any, reason: str) -> None:
        """The pod vanished (node gone, actor killed): count the steps it was last seen at, free its slot."""
        lost_steps = self.live.get(ref, {}).get("steps", 0)
        slot, task, _ = self.forget(ref)
        self.progress["lost"] += 1
        self.progress["steps"] += lost_steps
        self.progress["lost_steps"] += lost_steps
        self.release(slot)
        self.board.set_state("progress", self.progress)
        self.emit("slice_lost", pod=task.pod, slot=slot, reason=reason, steps=self.progress["steps"])

    def commit(self, slot: int, task: PodTask, result: SliceResult) -> None:
        """Insert an evaluated slice into the board (with the steps every pod has taken by now)."""
        self.poll_progress(list(self.busy), timeout=1.0)  # the steps the other pods have taken by now count too
        self.count_pod_time()
        progress = self.progress
        rank = self.board.insert(
            Entry(
                pod=task.pod,
                score=result.score,
                score_std=result.score_std,
                episodes=result.episodes,
                steps=result.lineage_steps,
                hyperparams=task.hyperparams,
                parent=task.parent,
                generation=task.generation,
                checkpoint=result.checkpoint,
            ),
            total_steps=progress["steps"] + self.in_flight_steps(),
            wall_time=progress["wall_time"],
            eval_steps=progress["eval_steps"],
            state={"progress": progress},
        )
        self.emit(
            "slice_done",
            pod=task.pod,
            slot=slot,
            score=round(result.score, 3),
            rank=rank,
            steps=progress["steps"],
            slice_steps=result.steps,
            train_time=round(result.train_time, 3),
            eval_time=round(result.eval_time, 3),
            setup_time=round(result.setup_time + result.load_time, 3),
            node=result.node,
            backend=result.backend,
        )

    def result(self) -> TournamentResult:
        progress, best = self.progress, self.board.best()
        pod_time = progress["pod_time"]
        result = TournamentResult(
            run_dir=str(self.run_dir),
            total_steps=progress["steps"],
            slices=progress["slices"],
            lost_slices=progress["lost"],
            wall_time=progress["wall_time"],
            best_score=best.score if best else None,
            best_entry=best.id if best else None,
            pod_time=round(pod_time, 3),
            train_time=round(progress["train_time"], 3),
            eval_time=round(progress["eval_time"], 3),
            overhead=round(1.0 - progress["train_time"] / pod_time, 4) if pod_time > 0 else 0.0,
            truncated_slices=progress["truncated"],
            eval_steps=progress["eval_steps"],
            events=self.events,
        )
        self.emit("done", **result.summary())
        self.board.close()
        return result


def run_tournament(
    env: str,
    pods: int = 4,
    *,
    run_dir: str | Path,
    total_steps: int | None = None,
    hours: float | None = None,
    slice_steps: int | None = None,
    first_slice_steps: int | None = None,
    slice_growth: float = 2.0,
    truncate_below: float = 0.5,
    halving: bool = False,
    eval_episodes: int = 10,
    capacity: int = 8,
    cpus_per_pod: float | None = None,
    seed: int = 0,
    ray_address: str | None = None,
    overrides: list[str] | None = None,
    resume: bool = False,
    on_event: Callable[[dict], None] | None = None,
    score_group: str | None = None,
    score_opponent: str = "self",
) -> TournamentResult:
    """Run (or, with ``resume``, continue) a tournament; returns when the step or time budget is spent.

    ``slice_steps`` is the longest slice; generation ``g`` trains
    ``first_slice_steps * slice_growth**g`` steps, capped there (``slice_growth=1``: fixed slices).
    ``truncate_below``: truncate a pod whose training returns fall below
    ``best - truncate_below * |best|`` of the board (0: never truncate). ``halving``: start a
    generation-``g`` slice only while fewer than ``ceil(pods / slice_growth**g)`` slices run
    (slots left idle: fewer env steps per result, less throughput). ``score_group``: the agent group
    whose mean return scores a checkpoint of an env with groups (default: its first learning group),
    against the checkpoint's own other groups (``score_opponent="self"``) or random actions (``"random"``,
    which turns truncation off: training returns are against itself).
    """
    return Tournament.open(
        env,
        pods,
        run_dir,
        resume,
        overrides,
        ray_address,
        on_event,
        total_steps=total_steps,
        hours=hours,
        slice_steps=slice_steps,
        first_slice_steps=first_slice_steps,
        slice_growth=slice_growth,
        truncate_below=truncate_below,
        halving=halving,
        eval_episodes=eval_episodes,
        capacity=capacity,
        cpus_per_pod=cpus_per_pod,
        seed=seed,
        score_group=score_group,
        score_opponent=score_opponent,
    ).run()
