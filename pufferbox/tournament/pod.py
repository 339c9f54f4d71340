"""A pod: one full pufferbox training (its own backend and envs) run slice by slice.

The orchestrator wraps :class:`Pod` as a threaded Ray actor (``max_concurrency=2``): one
thread trains a slice while the driver calls :meth:`Pod.progress` (steps and training
returns so far: the early signal) and, for a pod clearly behind the leaderboard,
:meth:`Pod.truncate`, which ends the slice at the next update without an evaluation.

Each slice starts from the weights (and optimizer moments) of the task's parent
checkpoint, or from scratch, trains with the task's hyperparameters for the task's
number of steps, writes a checkpoint and evaluates it (the updater's evaluation runs
inside the pod, in parallel with other pods). Every phase is timed so the driver can
report how much pod time went to anything but training.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pufferbox.tournament.generator import PodTask
from pufferbox.train import retune
from pufferbox.train.config import RunConfig

KEEP_TRAINERS = 3  # trainers (envs + rollout buffers) kept per pod, one per rollout length in use


@dataclass
class SliceResult:
    """What a pod reports after one slice (a truncated slice has no checkpoint and no score)."""

    task: PodTask
    checkpoint: bytes  # the checkpoint file's bytes, shipped through Ray's object store
    steps: int  # steps trained in this slice
    lineage_steps: int  # steps trained by the agent's whole lineage
    score: float
    score_std: float
    episodes: int
    setup_time: float
    load_time: float
    train_time: float
    eval_time: float
    node: str = ""
    backend: str = ""  # the vector backend the pod's trainer used (``ray`` spreads envs over the cluster)
    metrics: dict = field(default_factory=dict)
    truncated: str = ""  # why the driver stopped the slice early ("" if it ran to the end)
    eval_steps: int = 0  # env steps the evaluation took (about: episodes x mean length)
    train_return: float | None = None  # mean return of the training episodes that ended in this slice

    @property
    def busy_time(self) -> float:
        return self.setup_time + self.load_time + self.train_time + self.eval_time


def apply_hyperparams(config: RunConfig, hyperparams: Mapping[str, Any]) -> RunConfig:
    """``config`` with the generator's ``{"section.key": value}`` applied (checked)."""
    sections: dict[str, dict[str, Any]] = {}
    for dotted, value in hyperparams.items():
        section, _, key = dotted.partition(".")
        sections.setdefault(section, {})[key] = value
    return config.updated(sections, "tournament hyperparameters")


class Pod:
    """Trains slices of one env; keeps its trainers (envs, model) alive between slices.

    A trainer's rollout buffers are sized by its rollout length (``train.num_steps``), which
    the generator perturbs, so the pod keeps one trainer per length in use (a few at most).
    """

    def __init__(
        self,
        env: str,
        config: RunConfig | Mapping[str, Any],
        run_dir: str,
        pod_slot: int,
        score_group: str | None = None,
        opponent: str = "self",
        plugin: str | None = None,
    ):
        self.env = env
        self.config = RunConfig.of(config)
        self.score_group, self.opponent = score_group, opponent  # see TournamentSettings.score_group
        self.plugin = plugin  # the distribution whose env this is (another plugin may offer the name)
        self.dir = Path(run_dir) / "pods" / f"slot-{pod_slot}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.trainers: OrderedDict[int, Any] = OrderedDict()  # num_steps -> Trainer, least recently used first
        self.current: int | None = None  # the pod id of the task in training
        self.live: dict = {"pod": None, "steps": 0, "episodes": 0, "mean_return": None}
        self.stop_reason = ""

    # -- called by the driver while a slice trains (the actor's second thread) -------------
    def progress(self) -> dict:
        """Steps trained in the current slice and the mean return of its finished training episodes."""
        return dict(self.live)

    def truncate(self, pod: int, reason: str) -> bool:
        """End task ``pod``'s slice after the update in progress; False if that slice is not running."""
        if self.current != pod:
            return False
        self.stop_reason = reason
        return True

    # -- the slice ---------------------------------------------------------------------
    def spec(self) -> Any:
        """The env's spec: the recorded plugin's offer of the name, whatever this node's registry prefers."""
        from pufferbox.registry import get_registry

        return get_registry().get(self.env, plugin=self.plugin) if self.plugin else get_registry().get(self.env)

    def trainer_for(self, config: RunConfig) -> Any:
        from pufferbox.train.trainer import Trainer

        num_steps = config.train.num_steps
        if num_steps not in self.trainers:
            if len(self.trainers) >= KEEP_TRAINERS:
                _, old = self.trainers.popitem(last=False)
                old.close()
            self.trainers[num_steps] = Trainer(self.spec(), config, run_dir=str(self.dir))
        self.trainers.move_to_end(num_steps)
        return self.trainers[num_steps]

    def run_slice(self, task: PodTask, steps: int, eval_episodes: int) -> SliceResult:
        from pufferbox.train.checkpoint import load_checkpoint

        t0 = time.perf_counter()
        self.current, self.stop_reason = task.pod, ""
        self.live = {"pod": task.pod, "steps": 0, "episodes": 0, "mean_return": None}
        steps = task.steps or steps
        config = apply_hyperparams(self.config, task.hyperparams).updated({"train": {"seed": task.seed}}, "the task's seed")
        trainer = self.trainer_for(config)
        retune.set_hyperparameters(trainer, config.train)
        t1 = time.perf_counter()
        if task.parent_checkpoint:
            parent_file = self.dir / "parent.pt"
            parent_file.write_bytes(task.parent_checkpoint)
            retune.load_weights(trainer, load_checkpoint(parent_file, map_location=trainer.device))
        else:  # a new lineage: fresh weights from the task's seed, fresh optimizer moments
            retune.load_weights(trainer, None, seed=task.seed)
        pool = self.opponent_pool(task.opponents)  # the entries this pod lacked: the driver sends no others
        if any(pool.glob("*/snap-*.pt")):
            retune.use_opponent_pool(trainer, pool)
        # Envs keep running across slices: resetting them would cut every episode at the slice
        # boundary, so short slices would never train on late-episode states. Only the rollout
        # (collected by the previous weights) and recurrent state start afresh; the actions still
        # pending from the last slice move the envs one step that no rollout records.
        unrecorded = retune.restart_rollout(trainer)
        t2 = time.perf_counter()
        before = trainer.global_step - unrecorded
        metrics, train_return, stopped = self.train_steps(trainer, task.pod, before, steps)
        trained = trainer.global_step - before
        task.parent_checkpoint, task.opponents = None, {}  # do not send weights back
        common = dict(
            task=task,
            steps=trained,
            lineage_steps=task.parent_steps + trained,
            setup_time=t1 - t0,
            load_time=t2 - t1,
            node=os.uname().nodename,
            backend=trainer.venv.backend,
            metrics=metrics,
            train_return=train_return,
        )
        if stopped:  # a loser: no checkpoint, no evaluation, only its steps are reported
            result = SliceResult(
                checkpoint=b"",
                score=float("nan"),
                score_std=float("nan"),
                episodes=0,
                train_time=time.perf_counter() - t2,
                eval_time=0.0,
                truncated=stopped,
                **common,
            )
            self.current = None
            return result
        checkpoint = trainer.save_checkpoint(str(self.dir / f"task-{task.pod}"))
        t3 = time.perf_counter()
        evaluation = self.evaluate(checkpoint, eval_episodes, task.seed + 1)
        weights = Path(checkpoint).read_bytes()
        shutil.rmtree(self.dir / f"task-{task.pod}", ignore_errors=True)  # scratch: the board keeps its own copy
        t4 = time.perf_counter()
        self.current = None
        return SliceResult(
            checkpoint=weights,
            score=evaluation["mean_return"],
            score_std=evaluation["std_return"],
            episodes=evaluation["episodes"],
            train_time=t3 - t2,
            eval_time=t4 - t3,
            eval_steps=round(evaluation["episodes"] * evaluation["mean_length"]),
            **common,
        )

    def opponent_pool(self, opponents: dict[int, bytes]) -> Path:
        """The frozen groups' pool of a slice, from the board's checkpoints: for each frozen group, the
        pool source's policy (``[league] pool_source``, else the group's own) of each entry sent, as
        ``league-pool/<source>/snap-<entry id>.pt``. Entries already there are kept (their results too)."""
        from pufferbox.train.checkpoint import checkpoint_from_bytes
        from pufferbox.train.groups import Pool

        league = self.config.league
        sources = sorted({league.pool_source or name for name in league.frozen})
        root = self.dir / "league-pool"
        for entry, blob in opponents.items():
            pools = [Pool(root, source) for source in sources]
            if all((pool.dir / f"snap-{entry:08d}.pt").exists() for pool in pools):
                continue
            model = checkpoint_from_bytes(blob, f"leaderboard entry {entry}")["model"]
            for source, pool in zip(sources, pools):
                prefix = f"groups.{source}."
                pool.add(entry, {k[len(prefix) :]: v for k, v in model.items() if k.startswith(prefix)})
        return root

    def evaluate(self, checkpoint: str, episodes: int, seed: int) -> dict[str, Any]:
        """The slice's score: the mean episode return, or with a score group that group's mean return
        (over its agents) with the checkpoint's own policies on the other groups, or uniform actions there."""
        from pufferbox.train.evaluate import evaluate
        from pufferbox.train.league import RANDOM, play_match

        if self.score_group is None:
            return evaluate(self.env, checkpoint, episodes=episodes, seed=seed)
        opponent = checkpoint if self.opponent == "self" else RANDOM
        match = play_match(checkpoint, opponent, episodes=episodes, side=self.score_group, seed=seed)
        scores = np.array([game[self.score_group] for game in match.returns])
        return {
            "mean_return": float(scores.mean()),
            "std_return": float(scores.std()),
            "episodes": len(scores),
            "mean_length": match.steps / max(1, len(scores)),
        }

    def training_return(self, metrics: dict) -> float | None:
        """What the driver compares with the board while a slice trains: the score group's return when
        it plays its own checkpoint (as in training), else the run's; None when the two do not compare."""
        if self.score_group is None:
            return metrics["episode_return"] if metrics["episodes"] else None
        if self.opponent != "self":
            return None
        return metrics.get(f"{self.score_group}/episode_return")

    def train_steps(self, trainer: Any, pod: int, before: int, steps: int) -> tuple[dict, float | None, str]:
        """Train ``steps`` more env steps (or until the driver stops the pod); returns the last update's
        metrics, the mean training return and why the slice stopped early ("" when it ran whole), keeping
        ``live`` current for the driver's progress reads."""
        target = trainer.global_step + steps
        metrics: dict = {}
        episodes, return_sum = 0, 0.0
        while trainer.global_step < target and not self.stop_reason:
            metrics = trainer.train_update()
            mean = self.training_return(metrics)
            if metrics["episodes"] and mean is not None:
                episodes += metrics["episodes"]
                return_sum += mean * metrics["episodes"]
            self.live = {
                "pod": pod,
                "steps": trainer.global_step - before,
                "episodes": episodes,
                "mean_return": return_sum / episodes if episodes else None,
            }
        # a stop that arrives during the slice's last update stops nothing: the slice ran whole and is
        # evaluated, not reported as truncated with every step trained
        stopped = self.stop_reason if trainer.global_step < target else ""
        return metrics, (return_sum / episodes if episodes else None), stopped

    def close(self) -> None:
        for trainer in self.trainers.values():
            trainer.close()
        self.trainers.clear()
