"""Learners over a Ray cluster (``train.learners_on = "ray"``: ``pufferbox train ENV --learners N --ray-address ADDR``).

Rank 0 is the process that was started, as with local learners (train/distributed.py): it owns the run
directory, the metrics and the checkpoints (one learner's format: resumable with any N, on Ray or not).
Ranks 1..N-1 are Ray actors of one placement group, a bundle per learner (``{"CPU": 1 + its share of
vec.num_workers}``, and ``{"GPU": 1}`` when training on CUDA: Ray gives the actor that GPU as ``cuda:0``),
spread over the cluster's nodes where they fit (``SPREAD``). Each actor runs
:func:`~pufferbox.train.runner.learner_process` on its own share of the envs, stepped on its node. Rank 0
publishes the torch.distributed rendezvous, ``tcp://ITS_NODE_IP:PORT``, to the actors; a resumed run
sends them the checkpoint's bytes (their nodes need not share rank 0's disk).

A learner that fails, an actor that dies, or a node that is lost ends the run as a local learner's end
does: rank 0's next collective fails, it names the learner (actor pid, node) in one line and saves the
last completed update for ``--resume``. Every node needs pufferbox and the env's plugin installed (the tank
image); rank 0 must run on a node of the cluster (Ray Client, ``ray://``, cannot reach it back).

Example:
    >>> team = start_ray_team(spec, config)                              # doctest: +SKIP
    >>> Trainer(spec, config, run_dir="runs/x", team=team).train()     # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from pufferbox.train.config import ConfigError, RunConfig, TrainConfig, VecConfig
from pufferbox.train.distributed import LearnerLost, Team, first_line, free_address, join_as_rank_zero
from pufferbox.train.hardware import pick_device
from pufferbox.vector.ray import ensure_ray

__all__ = ["LearnerActor", "RayTeam", "learner_bundle", "start_ray_team"]


class LearnerActor:
    """One learner rank > 0 as a Ray actor: where it runs, and its training."""

    def place(self) -> tuple[int, str]:
        """``(pid, node IP)`` of this actor."""
        import ray

        return os.getpid(), ray.util.get_node_ip_address()

    def train(
        self, target: Callable[..., None], rank: int, address: str, *args: Any, device: str, saved: bytes | None
    ) -> str | None:
        """Train as learner ``rank`` with ``target`` (``runner.learner_process``; ``args``: its env, distribution
        and config) on ``device`` until the run ends; None, or the learner's one-line error. ``saved``: the
        checkpoint to resume, as bytes."""
        errors = io.StringIO()
        with tempfile.TemporaryDirectory(prefix="pufferbox-learner-") as folder:
            checkpoint = None
            if saved is not None:
                checkpoint = os.path.join(folder, "resume.pt")
                with open(checkpoint, "wb") as file:
                    file.write(saved)
            try:
                with contextlib.redirect_stderr(errors):  # learner_process reports its error there, then exits 1
                    target(rank, address, *args, checkpoint, device=device)
            except SystemExit:
                lines = errors.getvalue().strip().splitlines()
                return lines[-1].removeprefix("Error: ") if lines else "exited with an error"
        return None


class ActorLearner:
    """A learner actor as :class:`Team` holds a learner process: ``exitcode``, ``join``, ``terminate``, ``kill``."""

    def __init__(self, ray: Any, rank: int, actor: Any, place: tuple[int, str]):
        self.ray, self.rank, self.actor = ray, rank, actor
        self.pid, self.node = place
        self.done: Any = None  # the train call's result
        self.code: int | None = None
        self.outcome = "is running"

    def start(self, target: Callable[..., None], address: str, *args: Any, device: str, saved: bytes | None) -> None:
        self.done = self.actor.train.remote(target, self.rank, address, *args, device=device, saved=saved)

    @property
    def exitcode(self) -> int | None:
        """None while training; 0 when it finished, 1 when it failed, -1 when its actor died."""
        if self.code is None and self.done is not None and self.ray.wait([self.done], timeout=0)[0]:
            self.settle()
        return self.code

    def settle(self) -> None:
        try:
            error = self.ray.get(self.done)
        except self.ray.exceptions.RayError as exc:
            self.code, self.outcome = -1, f"died ({first_line(exc)})"
        else:
            self.code, self.outcome = (0, "finished") if error is None else (1, f"failed: {error}")

    def how_it_ended(self) -> str:
        return f"(Ray actor pid {self.pid} on node {self.node}) {self.outcome}"

    def join(self, timeout: float | None = None) -> None:
        if self.code is None and self.ray.wait([self.done], timeout=timeout)[0]:
            self.settle()

    def terminate(self) -> None:
        self.ray.kill(self.actor, no_restart=True)

    kill = terminate


class RayTeam(Team):
    """Rank 0 of learners whose other ranks are Ray actors: closing also ends the actors and frees their bundles."""

    def __init__(self, size: int, device: torch.device, learners: list[ActorLearner], ray: Any, group: Any):
        super().__init__(0, size, device, learners)
        self.ray, self.group = ray, group

    def close(self, wait: float = 0.0) -> None:
        from ray.util.placement_group import remove_placement_group

        try:
            super().close(wait)
        finally:
            for learner in self.processes:
                with contextlib.suppress(Exception):  # already gone with its node
                    self.ray.kill(learner.actor, no_restart=True)
            with contextlib.suppress(Exception):
                remove_placement_group(self.group)


def learner_bundle(tc: TrainConfig, vc: VecConfig, cuda: bool) -> dict[str, float]:
    """The resources of one learner: a core for it and one per env worker process of its share, a GPU on CUDA."""
    workers = vc.num_workers // tc.learners if vc.backend == "multiprocessing" else 0
    return {"CPU": float(1 + workers)} | ({"GPU": 1.0} if cuda else {})


def refuse_ray_client(ray_address: str) -> None:
    """One line when the cluster's address (``vec.ray_address``, else ``$RAY_ADDRESS``) is a Ray Client address
    (the learners could not reach rank 0 back)."""
    address = ray_address or os.environ.get("RAY_ADDRESS", "")
    if address.startswith("ray://"):
        raise ConfigError(
            f"train.learners_on=ray: the learners connect back to rank 0, which Ray Client ({address}) cannot "
            "carry; run `pufferbox train` on a node of the cluster with --ray-address HOST:PORT"
        )


def place_learners(ray: Any, tc: TrainConfig, bundle: dict[str, float]) -> tuple[Any, list[ActorLearner]]:
    """A placement group of ``tc.learners - 1`` bundles and an actor in each, within ``train.learner_timeout``."""
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    others = tc.learners - 1
    group = placement_group([bundle] * others, strategy="SPREAD")
    if not ray.wait([group.ready()], timeout=tc.learner_timeout)[0]:
        remove_placement_group(group)
        free = {k: v for k, v in ray.available_resources().items() if k in bundle}
        raise LearnerLost(
            f"train.learners={tc.learners}: the Ray cluster found no room for {others} learner(s) of {bundle} "
            f"each within {tc.learner_timeout:g} s (free now: {free}); fix: fewer --learners or --num-workers, or more nodes"
        )
    remote = ray.remote(LearnerActor)
    actors = [
        remote.options(
            num_cpus=bundle["CPU"],
            num_gpus=bundle.get("GPU", 0.0),
            scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i),
        ).remote()
        for i in range(others)
    ]
    try:
        places = ray.get([actor.place.remote() for actor in actors], timeout=tc.learner_timeout)
    except Exception as exc:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        remove_placement_group(group)
        raise LearnerLost(f"the learner actors did not start: {first_line(exc)}") from None
    return group, [ActorLearner(ray, rank, actor, place) for rank, (actor, place) in enumerate(zip(actors, places), 1)]


def start_ray_team(
    spec: Any,
    config: Any,
    checkpoint: str | os.PathLike | None,
    target: Callable[..., None],
    device: str,
) -> RayTeam:
    """Rank 0 (on ``device``) of ``train.learners`` learners whose ranks 1..N-1 are actors on the Ray
    cluster at ``vec.ray_address`` ("": ``$RAY_ADDRESS``, else a local Ray), each running ``target``
    (``runner.learner_process``) with ``config`` (already checked by ``refuse_learners``) as it is, and
    resuming ``checkpoint`` when given."""
    typed_config = RunConfig.of(config)
    refuse_ray_client(typed_config.vec.ray_address)
    tc = typed_config.train
    cuda = pick_device(tc.device).type == "cuda"
    ray = ensure_ray(typed_config.vec.ray_address or None)
    group, learners = place_learners(ray, tc, learner_bundle(tc, typed_config.vec, cuda))
    address = free_address(ray.util.get_node_ip_address())
    saved = None if checkpoint is None else Path(checkpoint).read_bytes()
    for learner in learners:
        # the actor's GPU is the one Ray gave it (CUDA_VISIBLE_DEVICES): cuda:0 there
        learner.start(
            target, address, spec.name, spec.meta.distribution, config, device="cuda:0" if cuda else "cpu", saved=saved
        )
    team = RayTeam(tc.learners, torch.device(device), learners, ray, group)
    return join_as_rank_zero(team, address, tc.learner_timeout)
