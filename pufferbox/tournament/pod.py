"""A pod: one full pufferbox training (its own backend and envs) run slice by slice.

The orchestrator wraps :class:`Pod` as a Ray actor. Each slice starts from the weights
(and optimizer moments) of the task's parent checkpoint, or from scratch, trains with
the task's hyperparameters for a number of steps, writes a checkpoint and evaluates it
(the updater's evaluation runs inside the pod, in parallel with other pods). Every
phase is timed so the driver can report how much pod time went to anything but
training.
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pufferbox.tournament.generator import PodTask


@dataclass
class SliceResult:
    """What a pod reports after one slice."""

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

    @property
    def busy_time(self) -> float:
        return self.setup_time + self.load_time + self.train_time + self.eval_time


def apply_hyperparams(config: dict, hyperparams: dict) -> dict:
    """A copy of ``config`` with ``{"section.key": value}`` applied."""
    out = {section: dict(values) if isinstance(values, dict) else values for section, values in config.items()}
    for dotted, value in hyperparams.items():
        section, _, key = dotted.partition(".")
        out.setdefault(section, {})[key] = value
    return out


class Pod:
    """Trains slices of one env; keeps its trainer (envs, model) alive between slices."""

    def __init__(self, env: str, config: dict, run_dir: str, pod_slot: int):
        self.env = env
        self.config = config
        self.dir = Path(run_dir) / "pods" / f"slot-{pod_slot}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.trainer = None

    def run_slice(self, task: PodTask, steps: int, eval_episodes: int) -> SliceResult:
        import torch

        from pufferbox.train.evaluate import evaluate
        from pufferbox.train.ppo import Trainer
        from pufferbox.train.checkpoint import load_checkpoint
        from pufferbox.train.policies import build_agent

        t0 = time.perf_counter()
        config = apply_hyperparams(self.config, task.hyperparams)
        config["train"]["seed"] = task.seed
        if self.trainer is None:
            self.trainer = Trainer(self.env, config, run_dir=str(self.dir))
            self.fresh_optimizer = copy.deepcopy(self.trainer.optimizer.state_dict())
        trainer = self.trainer
        trainer.tc.update(config["train"])
        t1 = time.perf_counter()
        if task.parent_checkpoint:
            parent_file = self.dir / "parent.pt"
            parent_file.write_bytes(task.parent_checkpoint)
            state = load_checkpoint(parent_file, map_location=trainer.device)
            trainer.agent.load_state_dict(state["model"])
            trainer.optimizer.load_state_dict(state["optimizer"])
        else:  # a new lineage: fresh weights from the task's seed, fresh optimizer moments
            torch.manual_seed(task.seed)
            fresh = build_agent(trainer.obs_spec, trainer.act_spec, config["policy"], trainer.spec.load_policy())
            trainer.agent.load_state_dict(fresh.state_dict())
            trainer.optimizer.load_state_dict(copy.deepcopy(self.fresh_optimizer))
        for group in trainer.optimizer.param_groups:
            group["lr"] = config["train"]["learning_rate"]
        trainer.reset_envs()
        t2 = time.perf_counter()
        before = trainer.global_step
        metrics = trainer.train_steps(steps)
        trained = trainer.global_step - before
        checkpoint = trainer.save_checkpoint(str(self.dir / f"task-{task.pod}"))
        t3 = time.perf_counter()
        evaluation = evaluate(self.env, checkpoint, episodes=eval_episodes, seed=task.seed + 1)
        weights = Path(checkpoint).read_bytes()
        t4 = time.perf_counter()
        task.parent_checkpoint = None  # do not send the parent's weights back
        return SliceResult(task=task, checkpoint=weights, steps=trained, lineage_steps=task.parent_steps + trained,
                           score=evaluation["mean_return"], score_std=evaluation["std_return"],
                           episodes=evaluation["episodes"], setup_time=t1 - t0, load_time=t2 - t1,
                           train_time=t3 - t2, eval_time=t4 - t3, node=os.uname().nodename,
                           backend=trainer.venv.backend,
                           metrics=metrics[-1] if metrics else {})

    def close(self) -> None:
        if self.trainer is not None:
            self.trainer.close()
