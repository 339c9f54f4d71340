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
    >>> settings = TournamentSettings("cartpole", pods=4, total_steps=400_000)
    >>> result = run_tournament(settings, run_dir="runs/t")  # doctest: +SKIP
    >>> result.best_score                                                                    # doctest: +SKIP
"""

from __future__ import annotations

import math
import random
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pufferbox.tournament.generator import TUNABLE, PodTask, propose, slice_length
from pufferbox.tournament.leaderboard import Entry, Leaderboard
from pufferbox.tournament.pod import Pod, SliceResult
from pufferbox.tournament.settings import TournamentError, TournamentSettings
from pufferbox.tournament.state import Progress, Slot
from pufferbox.train.config import RunConfig

__all__ = [
    "Tournament",
    "TournamentError",
    "TournamentResult",
    "TournamentSettings",
    "lagging",
    "run_tournament",
]

POLL_SECONDS = 0.25  # how often the updater looks at the pods' progress


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
    stop_signal: int | None = None  # SIGINT/SIGTERM that stopped the driver after the slices in flight

    def summary(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "events"}


def base_hyperparams(config: RunConfig) -> dict[str, Any]:
    """The tunable settings' values in ``config``, by their ``section.key`` names (the generator's)."""
    out = {}
    for dotted in TUNABLE:
        section, _, key = dotted.partition(".")
        out[dotted] = getattr(getattr(config, section), key)
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


def score_group_of(spec: Any, config: RunConfig, asked: str | None) -> str | None:
    """The group whose return scores ``spec``'s checkpoints: ``asked`` (checked against the env's groups),
    else the first learning group of an env with groups; None for one shared policy (every agent's return)."""
    from pufferbox.group_layout import GroupError, resolve_layout

    try:
        layout = resolve_layout(spec, config.env, config.groups)
    except GroupError as exc:
        raise TournamentError(str(exc)) from None
    if layout is None or len(layout.names) < 2:
        if asked is not None:
            raise TournamentError(
                f"--score-group {asked}: {spec.name} trains one shared policy (no agent groups); drop --score-group"
            )
        return None
    if asked is None:
        frozen = set(config.league.frozen)
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
    """The driver: a pool of pod actors (:class:`~pufferbox.tournament.state.Slot`), the board, and one
    loop of small steps.

    :meth:`run` repeats :meth:`schedule` (size the pool to the cluster, give idle slots a task
    from the generator, :meth:`dispatch` it) then :meth:`collect` (a finished slice: :meth:`commit`
    it to the board; a vanished pod: :meth:`lose` it), and while waiting :meth:`evaluate` the pods'
    progress (truncating laggards). ``progress`` (steps, slices, times) is saved on the board with
    every change, so a killed driver resumes from it.
    """

    def __init__(
        self,
        board: Leaderboard,
        settings: TournamentSettings,
        config: RunConfig,
        run_dir: Path,
        resume: bool,
        on_event: Callable[[dict], None] | None = None,
    ):
        from pufferbox.vector.ray import ensure_ray

        self.board, self.settings, self.config, self.run_dir = board, settings, config, run_dir
        self.resume, self.on_event = resume, on_event
        self.stop_signal: int | None = None  # set by StopSignals: the driver stops after the slices in flight
        self.progress = Progress.from_board(board.get_state("progress"))
        self.hyper = base_hyperparams(config)
        # About one finished episode per env (and a few dozen at least) before a pod is judged.
        self.min_episodes = max(32, config.vec.num_envs)
        self.events: list[dict] = []
        self.start, self.wall_before = time.perf_counter(), self.progress.wall_time
        self.ray = ensure_ray(config.vec.ray_address or None)  # "": $RAY_ADDRESS, else a local Ray
        # Threaded actors: the driver reads a pod's progress (and truncates it) while it trains.
        self.PodActor = self.ray.remote(max_concurrency=2)(Pod)
        self.slots: dict[int, Slot] = {}  # slot index -> its pod actor and the slice it trains
        self.rng = random.Random(settings.seed * 1_000_003 + self.progress.slices + self.progress.lost)

    @classmethod
    def open(
        cls,
        settings: TournamentSettings,
        run_dir: str | Path,
        resume: bool,
        overrides: list[str] | None = None,
        ray_address: str | None = None,
        on_event: Callable[[dict], None] | None = None,
    ) -> Tournament:
        """A new tournament in ``run_dir``, or (``resume``) the one there, continued with its recorded settings;
        ``ray_address`` (``--ray-address``; None: ``$RAY_ADDRESS``, else a local Ray) becomes the pods' config's
        ``vec.ray_address`` after the board records that config: this command's cluster, never a recorded one."""
        run_dir = Path(run_dir)
        check_run_dir(run_dir, resume)
        if resume:
            board, settings, config = reopen(run_dir, settings)
        else:
            settings, config = first_settings(settings, overrides)
            # Only now, in one transaction: a start that failed above leaves no database to refuse the retry.
            board = Leaderboard(run_dir, capacity=settings.capacity, keep_recent=settings.pods)
            board.start(settings.as_dict(), config.to_dict(), Progress().as_dict())
        if ray_address is not None or resume:  # a new tournament's --set vec.ray_address stays where no flag is given
            config = config.updated({"vec": {"ray_address": ray_address or ""}}, "--ray-address")
        return cls(board, settings, config, run_dir, resume, on_event)

    # -- bookkeeping -------------------------------------------------------------------------
    def wall_time(self) -> float:
        return self.wall_before + time.perf_counter() - self.start

    def emit(self, kind: str, **data: Any) -> None:
        event = {"event": kind, "wall_time": round(self.wall_time(), 3), **data}
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def save_progress(self) -> None:
        self.board.set_state("progress", self.progress.as_dict())

    def pool_size(self) -> int:
        cpus, s = self.ray.cluster_resources().get("CPU", 0.0), self.settings
        return max(1, min(s.pods, math.floor(cpus / s.cpus_per_pod + 1e-9) if s.cpus_per_pod > 0 else s.pods))

    def running(self) -> dict[Any, Slot]:
        """The slots training a slice, by the slice's Ray reference."""
        return {slot.running.ref: slot for slot in self.slots.values() if slot.running is not None}

    def budget_open(self) -> bool:
        if self.stop_signal is not None:  # SIGINT/SIGTERM: no new slice; those in flight finish
            return False
        if self.settings.total_steps is not None:
            committed = sum(slot.running.task.steps for slot in self.running().values() if slot.running)
            return self.progress.steps + committed < self.settings.total_steps
        return self.wall_time() < (self.settings.hours or 0.0) * 3600

    def in_flight_steps(self) -> int:
        return sum(slot.running.steps for slot in self.running().values() if slot.running)

    def count_pod_time(self) -> None:
        """Add the running slots' time so far, so a board saved mid-run never has train time > pod time."""
        now = time.perf_counter()
        for slot in self.slots.values():
            self.progress.pod_time += now - slot.since
            slot.since = now

    def release(self, index: int) -> None:
        """Give slot ``index``'s pod back to the cluster (its time counted)."""
        slot = self.slots.pop(index, None)
        if slot is not None:
            self.progress.pod_time += time.perf_counter() - slot.since
            self.ray.kill(slot.actor, no_restart=True)

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> TournamentResult:
        s = self.settings
        self.emit(
            "start",
            env=s.env,
            pods=s.pods,
            resume=self.resume,
            steps=self.progress.steps,
            slice_steps=s.slice_steps,
            first_slice_steps=s.first_slice_steps,
            slice_growth=s.slice_growth,
            **({"score_group": s.score_group, "score_opponent": s.score_opponent} if s.score_group else {}),
        )
        try:
            with StopSignals(self):
                self.loop()
        finally:
            for index in list(self.slots):
                self.release(index)
            self.progress.wall_time = round(self.wall_time(), 4)
            self.save_progress()
        return self.result()

    def loop(self) -> None:
        """Schedule, wait, collect, until nothing is in flight."""
        while self.schedule():
            ready, _ = self.ray.wait(list(self.running()), num_returns=1, timeout=POLL_SECONDS)
            if not ready:
                self.evaluate()
            for ref in ready:
                self.collect(self.running()[ref])

    def schedule(self) -> bool:
        """Size the pool to the cluster and give free slots tasks while the budget lasts; False once
        nothing is in flight (the tournament is over)."""
        target = self.pool_size()
        for index in sorted(self.slots):  # a shrunk cluster: retire idle slots beyond the pool size
            if len(self.slots) > target and self.slots[index].running is None:
                self.release(index)
        s = self.settings
        while len(self.running()) < target and self.budget_open():
            # The first `pods` tasks found the population: one new lineage each, so the first
            # (short) slices compare that many different settings before exploiting any.
            next_pod = self.progress.next_pod
            task = propose(self.board, self.hyper, pod=next_pod, rng=self.rng, fresh=next_pod < s.pods)
            if s.halving and len(self.running()) >= max(1, math.ceil(s.pods / s.slice_growth**task.generation)):
                break  # successive halving: deeper generations train fewer branches at once
            first, longest = s.first_slice_steps, s.slice_steps
            assert first is not None and longest is not None, "TournamentSettings.resolved() fills them in"
            task.steps = slice_length(task.generation, first, longest, s.slice_growth)
            self.progress.next_pod += 1
            self.dispatch(task)
        return bool(self.running())

    def free_slot(self) -> Slot:
        """The lowest slot index not training, starting a pod actor there if it has none."""
        s, busy = self.settings, {slot.index for slot in self.running().values()}
        index = next(i for i in range(len(self.slots) + 1) if i not in busy)
        if index not in self.slots:
            name = f"pufferbox-pod-{uuid.uuid4().hex[:12]}"
            actor = self.PodActor.options(num_cpus=s.cpus_per_pod, name=name).remote(
                s.env, self.config, str(self.run_dir), index, s.score_group, s.score_opponent, s.plugin
            )
            self.slots[index] = Slot(index, actor, name, since=time.perf_counter())
        return self.slots[index]

    def dispatch(self, task: PodTask) -> None:
        """Send ``task`` to the lowest free slot."""
        slot = self.free_slot()
        if self.config.league.frozen:  # the pod keeps its pool: send only the entries it lacks
            sent = slot.opponents_sent
            task.opponents = {e.id: Path(str(e.checkpoint)).read_bytes() for e in self.board.entries() if e.id not in sent}
            sent.update(task.opponents)
        ref = slot.actor.run_slice.remote(task, task.steps, self.settings.eval_episodes)
        slot.start(ref, task, time.perf_counter())
        self.emit(
            "slice_started",
            pod=task.pod,
            slot=slot.index,
            actor=slot.name,
            parent=task.parent,
            generation=task.generation,
            steps=task.steps,
            hyperparams=task.hyperparams,
            perturbed=task.meta.get("perturbed", {}),
        )

    def poll_progress(self, timeout: float) -> None:
        """Refresh the training slots' progress reports, waiting at most ``timeout`` s for the answers
        (a pod still starting answers later; its last report stands meanwhile)."""
        from ray.exceptions import RayActorError, RayTaskError

        pending = {}
        for slot in self.running().values():
            assert slot.running is not None
            if slot.running.ask is None:
                slot.running.ask = slot.actor.progress.remote()
            pending[slot.running.ask] = slot.running
        if not pending:
            return
        answered, _ = self.ray.wait(list(pending), num_returns=len(pending), timeout=timeout)
        for ask in answered:
            running = pending[ask]
            running.ask = None
            try:
                report = self.ray.get(ask)
            except (RayActorError, RayTaskError):
                continue
            if report.get("pod") == running.task.pod:
                running.report = report

    def evaluate(self) -> None:
        """Read the pods' progress and truncate those clearly behind the board's best."""
        from pufferbox.tournament.state import SlotState

        self.poll_progress(timeout=0)
        best, below = self.board.best(), self.settings.truncate_below
        if best is None or below <= 0:
            return
        for slot in [slot for slot in self.running().values() if slot.state is SlotState.TRAINING]:
            running = slot.running
            assert running is not None
            report = running.report
            trained = running.task.parent_steps + running.steps
            if report and lagging(report, best.score, below, self.min_episodes, trained, best_trained=best.steps):
                slot.truncate()
                slot.actor.truncate.remote(
                    running.task.pod,
                    f"training return {report['mean_return']:.4g} after {report['steps']} steps; "
                    f"board best {best.score:.4g}",
                )

    def collect(self, slot: Slot) -> None:
        """A finished slice: count its steps and commit it, or record it as truncated or lost."""
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

        assert slot.running is not None
        task = slot.running.task
        try:
            result: SliceResult = self.ray.get(slot.running.ref, timeout=60)
        except RayTaskError as exc:  # the pod's own code failed: a bug to report, not a lost node
            raise TournamentError(f"pod {task.pod} failed: {str(exc).strip().splitlines()[-1]}") from exc
        except (RayActorError, GetTimeoutError) as exc:
            return self.lose(slot, type(exc).__name__)
        slot.finish()
        progress = self.progress
        progress.steps += result.steps
        progress.slices += 1
        progress.train_time += result.train_time
        progress.eval_time += result.eval_time
        progress.eval_steps += result.eval_steps
        progress.wall_time = round(self.wall_time(), 4)
        if result.truncated:
            progress.truncated += 1
            self.save_progress()
            self.emit(
                "slice_truncated",
                pod=task.pod,
                slot=slot.index,
                steps=progress.steps,
                slice_steps=result.steps,
                reason=result.truncated,
            )
            return
        self.commit(slot.index, task, result)

    def lose(self, slot: Slot, reason: str) -> None:
        """The pod vanished (node gone, actor killed): count the steps it was last seen at, free its slot."""
        running = slot.finish()
        self.progress.lost += 1
        self.progress.steps += running.steps
        self.progress.lost_steps += running.steps
        self.release(slot.index)
        self.save_progress()
        self.emit("slice_lost", pod=running.task.pod, slot=slot.index, reason=reason, steps=self.progress.steps)

    def commit(self, index: int, task: PodTask, result: SliceResult) -> None:
        """Insert an evaluated slice into the board (with the steps every pod has taken by now)."""
        self.poll_progress(timeout=1.0)  # the steps the other pods have taken by now count too
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
            total_steps=progress.steps + self.in_flight_steps(),
            wall_time=progress.wall_time,
            eval_steps=progress.eval_steps,
            state={"progress": progress.as_dict()},
        )
        self.emit(
            "slice_done",
            pod=task.pod,
            slot=index,
            score=round(result.score, 3),
            rank=rank,
            steps=progress.steps,
            slice_steps=result.steps,
            train_time=round(result.train_time, 3),
            eval_time=round(result.eval_time, 3),
            setup_time=round(result.setup_time + result.load_time, 3),
            node=result.node,
            backend=result.backend,
        )

    def result(self) -> TournamentResult:
        progress, best = self.progress, self.board.best()
        pod_time = progress.pod_time
        result = TournamentResult(
            run_dir=str(self.run_dir),
            total_steps=progress.steps,
            slices=progress.slices,
            lost_slices=progress.lost,
            wall_time=progress.wall_time,
            best_score=best.score if best else None,
            best_entry=best.id if best else None,
            pod_time=round(pod_time, 3),
            train_time=round(progress.train_time, 3),
            eval_time=round(progress.eval_time, 3),
            overhead=round(1.0 - progress.train_time / pod_time, 4) if pod_time > 0 else 0.0,
            truncated_slices=progress.truncated,
            eval_steps=progress.eval_steps,
            events=self.events,
            stop_signal=self.stop_signal,
        )
        self.emit("done", **result.summary())
        self.board.close()
        return result


def check_run_dir(run_dir: Path, resume: bool) -> None:
    """Refuse a resume of no tournament, and a new tournament where one already is."""
    started = tournament_started(run_dir)
    if resume and not (run_dir / "leaderboard.sqlite").exists():
        raise TournamentError(f"--resume {run_dir}: no leaderboard.sqlite there; start a tournament without --resume")
    if resume and not started:
        raise TournamentError(
            f"--resume {run_dir}: the tournament there never started (its leaderboard.sqlite "
            "has no settings); start it again without --resume"
        )
    if not resume and started:
        raise TournamentError(f"{run_dir} already holds a tournament; pass --resume to continue it or pick a new --run-dir")


def reopen(run_dir: Path, asked: TournamentSettings) -> tuple[Leaderboard, TournamentSettings, RunConfig]:
    """The board, recorded settings and config of the tournament in ``run_dir``; ``asked.plugin`` (``--plugin``
    on a resume), if given, must be the plugin the tournament trains."""
    board = Leaderboard(run_dir, capacity=asked.capacity, keep_recent=asked.pods)
    settings = TournamentSettings.from_board(board.get_state("settings"))
    # Keep the newest agents' checkpoints even off the board: one lineage tip per pod can be continued.
    board.capacity, board.keep_recent = settings.capacity, settings.pods
    try:
        check_same_plugin(run_dir, settings, asked.plugin)
        budget = new_budget(settings, asked)
        if budget is not settings:  # --total-steps or --hours on a resume: the new budget, recorded
            budget.check()
            board.set_state("settings", budget.as_dict())
            settings = budget
    except BaseException:
        board.close()
        raise
    return board, settings, RunConfig.from_dict(board.get_state("config"), f"{run_dir}'s recorded config")


def new_budget(settings: TournamentSettings, asked: TournamentSettings) -> TournamentSettings:
    """The recorded settings with the budget a resume asks for (``--total-steps`` or ``--hours``), if any:
    continuing a finished tournament for longer is what a new budget on ``--resume`` means."""
    if asked.total_steps is not None and asked.total_steps != settings.total_steps:
        return replace(settings, total_steps=asked.total_steps, hours=None)
    if asked.hours is not None and asked.hours != settings.hours:
        return replace(settings, hours=asked.hours, total_steps=None)
    return settings


def check_same_plugin(run_dir: Path, settings: TournamentSettings, asked: str | None) -> None:
    """Refuse ``--plugin`` on a resume when it names another plugin than the one the tournament trains
    (a board from before the record trains the name's holder)."""
    if asked is None:
        return
    from pufferbox.registry import get_registry

    registry, env = get_registry(), str(settings.env)
    chosen = registry.get(env, plugin=asked).meta.distribution
    recorded = settings.plugin or registry.get(env).meta.distribution
    if chosen != recorded:
        raise TournamentError(
            f"--resume {run_dir}: this tournament trains {env} from {recorded}, not from {asked}; "
            "drop --plugin to continue it"
        )


def first_settings(asked: TournamentSettings, overrides: list[str] | None) -> tuple[TournamentSettings, RunConfig]:
    """A new tournament's settings (checked, filled in, its env's plugin recorded) and its pods' config."""
    from pufferbox.registry import get_registry
    from pufferbox.train.config import resolve_run_config

    asked.check()  # before the registry: a bad flag is refused without importing any plugin
    registry = get_registry()
    spec = registry.get(asked.env or "", plugin=asked.plugin) if asked.plugin else registry.get(asked.env or "")
    config = resolve_run_config(spec.training.config, overrides=list(overrides or []))
    config = slice_config(config)
    settings = asked.resolved(
        config.train.num_steps * config.vec.num_envs,
        env=spec.name,
        score_group=score_group_of(spec, config, asked.score_group),
        plugin=spec.meta.distribution,
    )
    return settings, config


def slice_config(config: RunConfig) -> RunConfig:
    """``config`` for short slices: no LR annealing to zero inside one, no in-slice periodic checkpoints,
    no early stop; with frozen groups no snapshots (their pool is the leaderboard: :meth:`Pod.opponent_pool`)."""
    sliced = {"anneal_lr": False, "checkpoint_interval": 0, "stop_on_solve": False, "total_steps": 10**15}
    league = {"snapshot_interval": 0} if config.league.frozen else {}
    return config.updated({"train": sliced, "league": league}, "tournament slices")


class StopSignals:
    """SIGINT or SIGTERM to the driver (docker stop, Slurm, Ctrl-C): one line, no new slice; the slices in
    flight finish and are recorded, then the driver returns (the CLI exits 143 after SIGTERM). A second
    signal interrupts at once. Installed over Ray's own handler, which ends the driver with a crash dump."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, tournament: Tournament):
        self.tournament = tournament
        self.previous: dict[int, Any] = {}

    def handler(self, signum: int, frame: Any) -> None:
        if self.tournament.stop_signal is not None:
            raise KeyboardInterrupt
        self.tournament.stop_signal = signum
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(f"\n{name}: the tournament stops after the slices in flight (again to abort)", flush=True)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self.previous = {signum: signal.signal(signum, self.handler) for signum in self.SIGNALS}
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)


def run_tournament(
    settings: TournamentSettings,
    *,
    run_dir: str | Path,
    overrides: list[str] | None = None,
    ray_address: str | None = None,
    resume: bool = False,
    on_event: Callable[[dict], None] | None = None,
) -> TournamentResult:
    """Run (or, with ``resume``, continue with its recorded settings) a tournament; returns when the step
    or time budget is spent.

    ``settings.slice_steps`` is the longest slice; generation ``g`` trains
    ``first_slice_steps * slice_growth**g`` steps, capped there (``slice_growth=1``: fixed slices).
    ``truncate_below``: truncate a pod whose training returns fall below
    ``best - truncate_below * |best|`` of the board (0: never truncate). ``halving``: start a
    generation-``g`` slice only while fewer than ``ceil(pods / slice_growth**g)`` slices run
    (slots left idle: fewer env steps per result, less throughput). ``score_group``: the agent group
    whose mean return scores a checkpoint of an env with groups (default: its first learning group),
    against the checkpoint's own other groups (``score_opponent="self"``) or random actions (``"random"``,
    which turns truncation off: training returns are against itself). ``overrides``: ``--set``'s.
    """
    return Tournament.open(settings, run_dir, resume, overrides, ray_address, on_event).run()
