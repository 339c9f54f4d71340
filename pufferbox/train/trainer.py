"""PPO over any pufferbox vector backend: the loop that wires a Collector, a Learner and checkpoints.

The parts come from :func:`~pufferbox.train.assembly.assemble` (envs, device, policy, learner,
collector, normalizer, built and checked once). Each update: the :mod:`~pufferbox.train.collector`
fills a batch of full segments (on the host, or on the kernels' device for ``--backend cuda``), the
:class:`~pufferbox.train.learner.Learner` runs GAE and the clipped PPO epochs on it, and this module
counts steps, tracks finished episodes (solve detection), writes checkpoints and sends each update's
metrics to callbacks.
With ``train.overlap`` the collector is an :class:`~pufferbox.train.overlap.OverlapCollector`
(the next rollout is collected while the learner updates) and lagged batches get V-trace targets.

Episodes are never cut by checkpoints: the envs are reset (seeded from ``(seed, update)``) when the
trainer is built and when it loads a checkpoint, never during a run. What a resume reproduces: the
checkpoint's weights, optimizer moments, counters, RNG states, scoreboard and normalizer statistics,
then fresh episodes from envs seeded from ``(seed, update)``; so two resumes of one checkpoint train
identically on the serial backend (overlapped too: a resume starts a fresh double buffer), while the
episodes that were in progress at the checkpoint start over (the uninterrupted run kept them).
Kernel envs (``--backend cuda``) are seeded once, when built, so a resumed cuda run does not replay exactly.

Example:
    >>> from pufferbox.train.config import resolve_run_config
    >>> cfg = resolve_run_config(overrides=["train.total_steps=1024", "vec.num_envs=4", "train.num_steps=32"])
    >>> trainer = Trainer("cartpole", cfg)            # doctest: +SKIP
    >>> trainer.train_steps(1024)[-1]["global_step"]  # doctest: +SKIP
    1024
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from pufferbox.episodes import Episodes
from pufferbox.registry import EnvSpec, get_registry
from pufferbox.train import snapshot
from pufferbox.train.assembly import assemble
from pufferbox.train.checkpoint import load_checkpoint, save_checkpoint
from pufferbox.train.collector import Collected, NonFiniteInput
from pufferbox.train.config import RunConfig, TrainConfig
from pufferbox.train.distributed import JOIN_S, Solo, Team
from pufferbox.train.groups import GroupLearner
from pufferbox.train.learner import Learner
from pufferbox.train.nonfinite import NonFiniteError, check_updates, check_weights, input_error
from pufferbox.train.overlap import vtrace_targets

__all__ = ["Trainer", "TrainResult", "Scoreboard", "NonFiniteError", "UpdateAbandoned"]  # NonFiniteError: train.nonfinite


class UpdateAbandoned(BaseException):
    """Raised into a rollout (by :class:`~pufferbox.train.runner.stop_on_signals` when a stop signal's grace
    runs out, e.g. a worker hangs): the update in progress is dropped, :meth:`Trainer.abandon_update` puts
    back what its rollout changed, and the run stops at the last completed update. A BaseException, so
    that no ``except Exception`` on the way (a worker error handler) swallows it."""


@dataclass
class TrainResult:
    """What a finished (or stopped) run reports."""

    env: str
    run_dir: str | None
    global_step: int
    updates: int
    wall_time: float
    sps: float
    episode_return: float | None  # mean over the last ``solve_window`` episodes
    solved_return: float | None
    solved_at_step: int | None
    solved_at_time: float | None
    checkpoint: str | None
    interrupted: bool = False
    stop_signal: int | None = None  # SIGINT/SIGTERM that stopped the run (set by train.runner)
    history: list[dict] = field(default_factory=list, repr=False)

    def summary(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "history"}

    @classmethod
    def of(cls, trainer: Trainer) -> TrainResult:
        """Where ``trainer`` stands now (its run may go on)."""
        wall, s = trainer.wall_time(), trainer.scores
        return cls(
            env=trainer.spec.name,
            run_dir=trainer.run_dir,
            global_step=trainer.global_step,
            updates=trainer.update,
            wall_time=wall,
            sps=trainer.global_step / max(wall, 1e-9),
            episode_return=s.recent(),
            solved_return=s.solved_return,
            solved_at_step=s.solved_at_step,
            solved_at_time=s.solved_at_time,
            checkpoint=trainer.last_checkpoint,
            interrupted=trainer.stop_requested,
            history=trainer.history,
        )


class Scoreboard:
    """Finished episodes: per-update means, the mean of the last ``window`` returns, when it got solved."""

    def __init__(self, window: int, solved_return: float | None):
        self.returns: collections.deque = collections.deque(maxlen=window)
        self.lengths: collections.deque = collections.deque(maxlen=window)
        self.solved_return = solved_return
        self.solved_at_step: int | None = None
        self.solved_at_time: float | None = None

    def recent(self) -> float | None:
        return float(np.mean(self.returns)) if self.returns else None

    def add(self, episodes: Episodes, step: int, wall: float) -> dict:
        """Record ``episodes`` (ended by ``step``); returns the update's episode metrics."""
        self.returns.extend(episodes.returns.tolist())
        self.lengths.extend(episodes.lengths.astype(np.float64).tolist())
        recent, n = self.recent(), len(episodes)
        if (
            self.solved_at_step is None
            and self.solved_return is not None
            and recent is not None
            and len(self.returns) == self.returns.maxlen
            and recent >= self.solved_return
        ):
            self.solved_at_step, self.solved_at_time = step, wall
        out = {
            "episode_return": float(np.mean(episodes.returns)) if n else None,
            "episode_length": float(np.mean(episodes.lengths)) if n else None,
            "episodes": n,
            "return_recent": recent,
            "solved": self.solved_at_step is not None,
        }
        for name, values in episodes.metrics.items():  # the plugin's own episode metrics, e.g. achievements
            finite = values[np.isfinite(values)]
            if len(finite) and f"episode_{name}" not in out:
                out[f"episode_{name}"] = float(finite.mean())
                # episodes that reported it: Atari's whole-game score comes with a game's last life only
                out[f"episodes_{name}"] = len(finite)
        return out

    def state_dict(self) -> dict:
        return {
            "recent_returns": torch.tensor(list(self.returns), dtype=torch.float64),
            "recent_lengths": torch.tensor(list(self.lengths), dtype=torch.float64),
            "solved_at_step": -1 if self.solved_at_step is None else self.solved_at_step,
            "solved_at_time": -1.0 if self.solved_at_time is None else self.solved_at_time,
        }

    def load_state_dict(self, state: Mapping) -> None:
        self.returns.clear()
        self.returns.extend(state["recent_returns"].tolist())
        self.lengths.clear()
        self.lengths.extend(state["recent_lengths"].tolist())
        solved = int(state["solved_at_step"])
        self.solved_at_step = None if solved < 0 else solved
        self.solved_at_time = None if solved < 0 else float(state["solved_at_time"])


def learn(learner: Learner | GroupLearner, agent: Any, rollout: Collected, progress: float, tc: TrainConfig) -> dict:
    """One PPO update on ``rollout``; a batch an older policy acted (``train.overlap`` with V-trace) gets
    V-trace targets first. A :class:`GroupLearner` updates each agent group on its own rows."""
    lagged = tc.overlap and tc.lag_correction == "vtrace"
    retarget = (lambda agent, b: vtrace_targets(agent, b, tc.gamma, tc.gae_lambda)) if lagged else None
    if isinstance(learner, GroupLearner):
        return learner.update(rollout.batch, progress=progress, rows=rollout.rows, targets=retarget)
    return learner.update(rollout.batch if retarget is None else retarget(agent, rollout.batch), progress=progress)


class Trainer:
    """PPO on one env. ``train()``/``train_steps(n)`` train; ``save_checkpoint``/``load_checkpoint`` persist.

    ``config`` is a :class:`~pufferbox.train.config.RunConfig` (or its dict of sections); ``callbacks``
    receive each update's metrics dict (the dashboard and metric writers); ``team``: this process's
    place among data-parallel learners (:mod:`~pufferbox.train.distributed`; alone by default).
    """

    def __init__(
        self,
        env: str | EnvSpec,
        config: RunConfig | Mapping[str, Any],
        run_dir: str | os.PathLike | None = None,
        callbacks: list[Callable[[dict], None]] | None = None,
        team: Team | Solo | None = None,
    ):
        self.spec = get_registry().get(env) if isinstance(env, str) else env
        self.config = RunConfig.of(config)  # what checkpoints record; pod.set_hyperparameters replaces its train
        self.run_dir = None if run_dir is None else os.fspath(run_dir)
        self.run_dir_existed = self.run_dir is not None and os.path.isdir(self.run_dir)  # then never re-created
        self.callbacks = list(callbacks or [])
        self.team: Team | Solo = Solo() if team is None else team
        self.update = 0
        self.parts = parts = assemble(
            self.spec, self.config, self.run_dir, lambda: self.update, self.budget_horizon, self.team
        )
        self.venv, self.device, self.layout = parts.venv, parts.device, parts.layout
        self.agent, self.learner, self.league, self.hardware = parts.agent, parts.learner, parts.league, parts.hardware
        self.collector, self.normalizer = parts.collector, parts.normalizer
        self.obs_spec, self.act_spec = self.venv.obs_spec, self.venv.act_spec
        # agent rows stepped together, all learners' (what the step budget is counted in)
        self.agents_per_env, self.num_rows = self.venv.agents_per_env, self.venv.num_agents * self.team.size
        self.num_steps = self.tc.num_steps
        self.scores = Scoreboard(self.tc.solve_window, self.spec.training.solved_return)
        self.global_step = self.update = 0
        self.total_updates = max(1, math.ceil(self.tc.total_steps / (self.num_rows * self.num_steps)))
        self.learn_time, self.elapsed_before, self.start_time = 0.0, 0.0, time.perf_counter()
        self.last_checkpoint: str | None = None
        self.stop_requested = False
        self.stop_agreed = False  # a stop any learner got, as the learners agreed after a rollout
        self.collecting = False  # a rollout is in progress: the weights are still the last update's
        self.abandoned = False  # an update was dropped mid-rollout (UpdateAbandoned): close ends workers first
        self.rollback: snapshot.Rollback | None = None  # the start of the update in progress
        self.history: list[dict] = []
        self.team.broadcast_parameters(self.agent)
        self.seed_sampling()
        self.collector.reset(self.env_seed())

    @property
    def tc(self) -> TrainConfig:
        """The hyperparameters (the learner's ``hp`` is this same object)."""
        return self.config.train

    def env_seed(self) -> int:
        """The envs' seed at a (re)start: from the run seed and the update count, so resumes of one checkpoint
        agree; a learner's envs are those of one run with all of them, after the lower ranks'."""
        envs = self.venv.num_envs
        return int(self.tc.seed) * 1_000_003 + self.update * envs * self.team.size + self.team.rank * envs

    def seed_sampling(self) -> None:
        """Learners other than rank 0 sample their actions from a torch seed of their own (rank 0 keeps
        the run's, which checkpoints hold)."""
        if self.team.rank:
            torch.manual_seed((int(self.tc.seed) * 1_000_003 + self.update) * 1_009 + self.team.rank)

    def wall_time(self) -> float:
        return self.elapsed_before + time.perf_counter() - self.start_time

    # -- the loop ----------------------------------------------------------------------------
    def train_update(self, horizon: int | None = None) -> dict:
        """One rollout (``horizon`` steps per row, default ``num_steps``) + one PPO update; returns the
        update's metrics (also sent to callbacks)."""
        self.rollback = snapshot.Rollback.of(self)
        self.collecting = True
        try:
            rollout = self.collector.collect(horizon)
        except NonFiniteInput as exc:
            raise input_error(self, exc) from None
        finally:
            self.collecting = False
        # every learner's steps and episodes, and a stop any of them got
        steps, episodes, self.stop_agreed = self.team.share_rollout(
            rollout.steps, rollout.episodes, self.stop_requested, self.venv.num_envs
        )
        rollout = dataclasses.replace(rollout, steps=steps, episodes=episodes)
        if self.normalizer is not None:  # all learners' samples: the same statistics everywhere
            self.team.pool_statistics(self.normalizer, self.rollback.normalizer or {})
        t0 = time.perf_counter()
        losses = learn(self.learner, self.agent, rollout, self.update / self.total_updates, self.tc)
        self.learn_time += time.perf_counter() - t0
        check_updates(self)
        self.update += 1
        self.global_step += rollout.steps
        if self.league is not None:
            losses |= self.league.record(self.update, rollout)
        metrics = self.record(rollout, losses)
        if self.tc.checkpoint_interval and self.update % self.tc.checkpoint_interval == 0 and self.run_dir is not None:
            self.save_checkpoint()  # the envs keep running: a checkpoint never cuts an episode
        return metrics

    def record(self, rollout: Collected, losses: dict) -> dict:
        wall = self.wall_time()
        metrics = {
            "global_step": self.global_step,
            "update": self.update,
            "wall_time": round(wall, 4),
            "sps": round(self.global_step / max(wall, 1e-9), 1),
            **self.scores.add(rollout.episodes, self.global_step, wall),
            **rollout.metrics,
            **losses,
            **{f"time_{k}": round(v, 4) for k, v in {**self.collector.phase_time, "learn": self.learn_time}.items()},
        }
        self.history.append(metrics)
        for callback in self.callbacks:
            callback(metrics)
        return metrics

    @property
    def stopping(self) -> bool:
        """A stop signal ends the run after this update (several learners: once they agreed on it)."""
        return self.stop_agreed or (self.stop_requested and self.team.size == 1)

    def should_stop(self) -> bool:
        if self.stopping or self.global_step >= self.tc.total_steps:
            return True
        return bool(self.tc.stop_on_solve and self.scores.solved_at_step is not None)

    def train_steps(self, n: int) -> list[dict]:
        """Train at least ``n`` more steps (whole updates); returns their metrics."""
        target, out = self.global_step + n, []
        while self.global_step < target and not self.stopping:
            out.append(self.train_update())
        return out

    def budget_horizon(self, pending: int = 0) -> int | None:
        """Steps per row of the next rollout so that training ends at ``total_steps`` (None: a whole rollout;
        0: the budget is spent), while ``pending`` steps are being learned on (an overlapped rollout's)."""
        remaining = self.tc.total_steps - self.global_step - pending
        return None if remaining >= self.num_rows * self.num_steps else max(0, math.ceil(remaining / self.num_rows))

    def planned_steps(self) -> int:
        """The step count :meth:`train` ends at (without a stop or solve first) on a synchronous backend."""
        remaining = max(0, self.tc.total_steps - self.global_step)
        return self.global_step + math.ceil(remaining / self.num_rows) * self.num_rows

    def train(self) -> TrainResult:
        """Train until ``total_steps``, a stop request (Ctrl-C) or, with ``stop_on_solve``, solved."""
        while not self.should_stop():
            self.train_update(self.budget_horizon())
        if self.run_dir is not None:
            self.save_checkpoint()
        return self.result()

    def result(self) -> TrainResult:
        return TrainResult.of(self)

    # -- checkpoints ---------------------------------------------------------------------------
    def save_checkpoint(self, directory: str | os.PathLike | None = None) -> str:
        """Write a checkpoint into ``directory`` (default ``RUN_DIR/checkpoints``); keeps the last K."""
        parents = directory is not None or not self.run_dir_existed  # a deleted RUN_DIR stays deleted
        if directory is None:
            if self.run_dir is None:
                raise ValueError("save_checkpoint needs a directory when the trainer has no run_dir")
            directory = os.path.join(self.run_dir, "checkpoints")
        check_weights(self)
        path = save_checkpoint(snapshot.take(self), directory, self.update, keep=self.tc.keep_checkpoints, parents=parents)
        self.last_checkpoint = str(path)
        return self.last_checkpoint

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore model, optimizer, counters and RNG states; the envs start fresh episodes, seeded from
        ``(seed, update)`` (the episodes in progress when the checkpoint was taken are not in it)."""
        snapshot.put(self, load_checkpoint(path, map_location=self.device), path)
        self.seed_sampling()
        self.collector.reset(self.env_seed())

    def abandon_update(self) -> None:
        """Drop the update whose rollout :class:`UpdateAbandoned` interrupted: put back what its start
        recorded (:class:`~pufferbox.train.snapshot.Rollback`), so a checkpoint saved now is the last
        completed update's."""
        self.abandoned = True
        if self.rollback is not None:
            self.rollback.restore(self)

    def close(self) -> None:
        """Stop collecting (the overlap thread ends with its rollout), then close the envs. After a stop
        signal (or an abandoned update) the worker processes are ended first (a hung one is killed), so
        a rollout in flight waiting on them fails at once instead of after ``vec.step_timeout``."""
        try:
            if (self.abandoned or self.stop_requested) and self.venv.backend == "multiprocessing":
                self.venv.close()
            self.collector.close()  # every Collector has close(): the overlap thread ends with its rollout
        finally:
            self.venv.close()
            # after a run that ended, the other learners end with it: wait for them
            self.team.close(wait=JOIN_S if self.should_stop() and not self.abandoned else 0.0)
