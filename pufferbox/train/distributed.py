"""Data-parallel learners (``train.learners = N``): N processes on one machine, one policy.

Each learner process runs its own :class:`~pufferbox.train.trainer.Trainer` on ``vec.num_envs / N`` of the
envs (seeded as those envs of one run with all of them would be) and collects its own rollouts. The
learners then meet at a few collectives (torch.distributed: gloo on the CPU, NCCL when every learner
has a GPU of its own, ``cuda:RANK``):

* after each rollout, :meth:`Team.share_rollout`: the steps are summed (``global_step`` counts every
  learner's), every learner gets every learner's finished episodes (one scoreboard, one solve test),
  and a stop signal any learner got is agreed on, so all stop after the same update;
* in every minibatch, :meth:`Team.average_gradients` (between ``backward`` and the optimizer step):
  the gradients are averaged, so every learner takes the same step and holds the same parameters.

The minibatches are those of one learner on the whole batch (the learners' batches in rank order):
every learner draws the same shuffle of the whole batch's samples and keeps the ones it holds, and the
losses are means over the whole minibatch (:class:`~pufferbox.train.learner.Learner`), so N learners
train what one learner would on all the envs, up to float rounding.

Rank 0 is the process that was started (``pufferbox train``): it owns the run directory, the metrics,
the dashboard and the checkpoints, which hold nothing of N (resume with any N). It starts ranks
1..N-1 (:func:`pufferbox.train.runner.start_team`, ``spawn``: this module holds only the collectives,
so the trainer can use them without importing what runs it) and ends them when the run ends. A learner
that dies (or stops answering for ``train.learner_timeout`` seconds) ends the run: the others stop at
their next collective with :class:`LearnerLost`, and rank 0 saves the last completed update first.

Example:
    >>> team = runner.start_team(spec, config)                          # doctest: +SKIP
    >>> Trainer(spec, config, run_dir="runs/x", team=team).train()    # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import os
import signal
import socket
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import torch
import torch.distributed as dist

from pufferbox.episodes import Episodes
from pufferbox.train.config import ConfigError

if TYPE_CHECKING:
    from pufferbox.train.normalize import Normalizer

__all__ = ["LearnerLost", "Solo", "Team", "free_address", "join_as_rank_zero", "join_group"]

JOIN_S = 30.0  # rank 0 waits this long for the others to exit after a run that ended (then ends them)


class LearnerLost(ConfigError):
    """Another learner process ended or stopped answering; the message names it when rank 0 knows which."""


def silent_learners(processes: Sequence[Any]) -> str:
    """Which learners (rank, pid) are still there but silent: the stopped ones (SIGSTOP, a debugger) where
    the kernel says so, else every learner still running, with its state."""
    from pufferbox.vector.pool import process_state

    found = [(rank, p.pid, process_state(p.pid)) for rank, p in enumerate(processes, start=1) if getattr(p, "pid", None)]
    stopped = [f for f in found if f[2].startswith("stopped")]
    named = ", ".join(f"learner {rank} (pid {pid}, {state})" for rank, pid, state in stopped or found)
    return named or "a learner"


class Solo:
    """The team of one learner: where data-parallel learners meet (:class:`Team`), one learner meets only
    itself, so the learner's update has no case for being alone. Every collective returns its input."""

    rank, size = 0, 1

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def average(self, value: torch.Tensor) -> torch.Tensor:
        return value

    def all_true(self, flag: bool) -> bool:
        return flag

    def offset_and_total(self, count: int) -> tuple[int, int]:
        return 0, count

    def start_averaging(self, params: Sequence[torch.Tensor], loss: torch.Tensor) -> None:
        self.loss = loss

    def finish_averaging(self) -> torch.Tensor:
        return self.loss.detach()

    def share_rollout(self, steps: int, episodes: Episodes, stop: bool, envs: int) -> tuple[int, Episodes, bool]:
        return steps, episodes, stop

    def pool_statistics(self, normalizer: Normalizer, before: Mapping[str, torch.Tensor]) -> None:
        pass

    def broadcast_parameters(self, module: torch.nn.Module) -> None:
        pass

    def close(self, wait: float = 0.0) -> None:
        pass


class Team:
    """This process's place among ``size`` data-parallel learners, and the collectives they meet at.

    Every collective that fails (a learner died: its connection closed; or none answered within the
    process group's timeout) raises :class:`LearnerLost`. Rank 0 also holds the other ranks' processes.
    """

    def __init__(self, rank: int, size: int, device: torch.device, processes: Sequence[Any] = ()):
        self.rank, self.size, self.device = rank, size, device
        self.processes = list(processes)  # rank 0: ranks 1..size-1
        self.buckets: GradientBuckets | None = None

    # -- the collectives --------------------------------------------------------------------------
    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over the learners, in place."""
        try:
            dist.all_reduce(tensor)
        except RuntimeError as exc:  # gloo/NCCL: a peer's connection closed, or the timeout passed
            raise self.lost(exc) from None
        return tensor

    def average(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of ``value`` (a tensor without gradient) over the learners."""
        return self.all_reduce(value.detach().clone()) / self.size

    def start_averaging(self, params: Sequence[torch.Tensor], loss: torch.Tensor) -> None:
        """Before ``backward``: the gradients of ``params`` will be summed over the learners while backward
        still runs (:class:`GradientBuckets`); :meth:`finish_averaging` after it returns their mean."""
        if self.buckets is None or not self.buckets.holds(params):
            if self.buckets is not None:
                self.buckets.remove()
            self.buckets = GradientBuckets(self, params)
        self.buckets.start(loss)

    def finish_averaging(self) -> torch.Tensor:
        """After ``backward`` (or instead of it, when none of the minibatch is here): every gradient is its
        mean over the learners; returns the learners' mean loss, so a non-finite loss anywhere skips the
        step everywhere."""
        assert self.buckets is not None, "start_averaging first"
        return self.buckets.finish()

    def pool_statistics(self, normalizer: Normalizer, before: Mapping[str, torch.Tensor]) -> None:
        """Every learner's observation/reward statistics merged into each (:meth:`Normalizer.pool`)."""
        total = lambda moments: self.all_reduce(torch.from_numpy(moments).to(self.device)).cpu().numpy()
        normalizer.pool(before, total)

    def all_true(self, flag: bool) -> bool:
        """Whether ``flag`` holds on every learner."""
        return bool(self.all_reduce(torch.tensor([float(not flag)], device=self.device)).item() == 0)

    def offset_and_total(self, count: int) -> tuple[int, int]:
        """Where this learner's ``count`` samples start among all learners' (rank order), and their total."""
        counts = torch.zeros(self.size, dtype=torch.int64, device=self.device)
        counts[self.rank] = count
        every = self.all_reduce(counts).tolist()
        return sum(every[: self.rank]), sum(every)

    def share_rollout(self, steps: int, episodes: Episodes, stop: bool, envs: int) -> tuple[int, Episodes, bool]:
        """``(steps of all learners, their episodes (env ids of the whole run), whether any got a stop)``;
        ``envs``: the envs each learner steps."""
        parts: list[Any] = [None] * self.size
        try:
            dist.all_gather_object(parts, (steps, episodes.relabel(self.rank * envs), stop))
        except RuntimeError as exc:
            raise self.lost(exc) from None
        return sum(p[0] for p in parts), Episodes.concat([p[1] for p in parts]), any(p[2] for p in parts)

    def broadcast_parameters(self, module: torch.nn.Module) -> None:
        """Rank 0's weights to every learner (they start from the same seed; this makes sure)."""
        try:
            for tensor in module.state_dict().values():
                dist.broadcast(tensor, src=0)
        except RuntimeError as exc:
            raise self.lost(exc) from None

    # -- faults and the end -----------------------------------------------------------------------
    def lost(self, exc: BaseException) -> LearnerLost:
        """What failed, in one line: rank 0 names the learner process that ended (or hangs)."""
        if self.rank != 0:  # rank 0 may have died before it saved anything: promise no checkpoint
            return LearnerLost(
                f"learner {self.rank} (pid {os.getpid()}): lost the other learners ({first_line(exc)}); only rank 0 "
                "saves checkpoints: its own message (or its run dir) says whether one was saved"
            )
        deadline = time.monotonic() + 2.0  # the process whose connection closed is exiting: let it finish
        while time.monotonic() < deadline and all(p.exitcode is None for p in self.processes):
            time.sleep(0.05)
        for rank, process in enumerate(self.processes, start=1):
            if process.exitcode is not None:
                return LearnerLost(f"learner {rank} {how_process_ended(process)}")
        return LearnerLost(f"{silent_learners(self.processes)} stopped answering ({first_line(exc)})")

    def close(self, wait: float = 0.0) -> None:
        """Leave the process group. Rank 0 first waits up to ``wait`` seconds for the other learners to
        finish (after a run that ended, they stop after the same update); those still running then get
        SIGTERM (they exit quietly: the run stopped) as their collectives fail, and are killed if they
        do not exit within seconds."""
        deadline = time.monotonic() + wait
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in self.processes:
            if process.exitcode is None:
                process.terminate()
        if dist.is_initialized():
            dist.destroy_process_group()  # closes the connections: a learner waiting on them stops now
        for process in self.processes:
            process.join(5.0)
            if process.exitcode is None:
                process.kill()
                process.join()


class GradientBuckets:
    """Gradients summed over the learners while ``backward`` runs, as DDP's reducer does.

    The parameters are cut into buckets of about ``bucket_bytes`` in the order backward produces their
    gradients (the last layers first). A hook on each parameter counts its gradient in; the bucket's
    all-reduce starts (asynchronously) as soon as all of its gradients are in and every earlier bucket has
    started, so every learner issues the same collectives in the same order, whatever its backward does.
    :meth:`finish` starts what backward did not reach (zeros for a parameter without a gradient), waits,
    and sets each gradient to its mean. The loss goes first, so its mean is known with the gradients'.
    """

    def __init__(self, team: Team, params: Sequence[torch.Tensor], bucket_bytes: int = 4 << 20):
        self.team, self.params = team, list(params)
        self.buckets: list[list[int]] = [[]]
        for index in reversed(range(len(self.params))):
            size = sum(self.params[i].numel() * self.params[i].element_size() for i in self.buckets[-1])
            if self.buckets[-1] and size >= bucket_bytes:
                self.buckets.append([])
            self.buckets[-1].append(index)
        self.bucket_of = {id(p): b for b, bucket in enumerate(self.buckets) for p in (self.params[i] for i in bucket)}
        self.hooks = [p.register_post_accumulate_grad_hook(self.gradient_in) for p in self.params]
        self.armed = False

    def holds(self, params: Sequence[torch.Tensor]) -> bool:
        return len(params) == len(self.params) and all(a is b for a, b in zip(params, self.params))

    def remove(self) -> None:
        for hook in self.hooks:
            hook.remove()

    def start(self, loss: torch.Tensor) -> None:
        self.missing = [len(bucket) for bucket in self.buckets]
        self.flats: list[torch.Tensor] = []
        self.works: list[Any] = []
        self.failure: RuntimeError | None = None
        self.loss = loss.detach().reshape(1).float().clone()
        self.launch(self.loss)
        self.armed = True

    def gradient_in(self, param: torch.Tensor) -> None:
        if not self.armed:  # a backward outside a data-parallel minibatch step
            return
        self.missing[self.bucket_of[id(param)]] -= 1
        while len(self.flats) < len(self.buckets) and self.missing[len(self.flats)] == 0:
            self.launch_bucket()

    def launch_bucket(self) -> None:
        params = [self.params[i] for i in self.buckets[len(self.flats)]]
        grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in params]
        self.flats.append(torch.cat([g.reshape(-1) for g in grads]))
        self.launch(self.flats[-1])

    def launch(self, tensor: torch.Tensor) -> None:
        if self.failure is None:  # after a failure nothing more is sent: finish raises it
            try:
                self.works.append(dist.all_reduce(tensor, async_op=True))
            except RuntimeError as exc:
                self.failure = exc

    def finish(self) -> torch.Tensor:
        self.armed = False
        while len(self.flats) < len(self.buckets):
            self.launch_bucket()
        try:
            for work in self.works:
                work.wait()
        except RuntimeError as exc:
            self.failure = exc
        if self.failure is not None:
            raise self.team.lost(self.failure) from None
        for bucket, flat in zip(self.buckets, self.flats):
            flat.div_(self.team.size)
            start = 0
            for i in bucket:
                param = self.params[i]
                param.grad = flat[start : start + param.numel()].view_as(param)
                start += param.numel()
        return self.loss[0] / self.team.size


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def how_process_ended(process: Any) -> str:
    """``(pid 12) was killed by SIGKILL``; a process handle of another kind (a Ray actor's) says it itself."""
    if hasattr(process, "how_it_ended"):
        return process.how_it_ended()
    return f"(pid {process.pid}) {how_it_ended(process.exitcode)}"


def how_it_ended(exitcode: int) -> str:
    """``exited with code 1`` / ``was killed by SIGKILL``."""
    if exitcode < 0:
        return f"was killed by {signal.Signals(-exitcode).name}"
    return f"exited with code {exitcode}" + (" (its error is above)" if exitcode == 1 else "")


def join_group(rank: int, size: int, address: str, device: str, timeout_s: float) -> None:
    """Enter the process group: NCCL between GPUs (``device`` becomes torch's current one), gloo on the
    CPU; every collective times out."""
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(
        "nccl" if device.startswith("cuda") else "gloo",
        init_method=address,
        rank=rank,
        world_size=size,
        timeout=datetime.timedelta(seconds=timeout_s),
    )


def free_address(host: str = "127.0.0.1") -> str:
    """``tcp://HOST:PORT`` with a port free on ``host`` now (rank 0 listens there for the others)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return f"tcp://{host}:{s.getsockname()[1]}"


TeamT = TypeVar("TeamT", bound=Team)


def join_as_rank_zero(team: TeamT, address: str, timeout_s: float) -> TeamT:
    """Rank 0 joins the process group of ``team``'s started learners; if they do not meet, ``team`` is
    closed (its learners ended) and the run stops with one line."""
    try:
        join_group(0, team.size, address, str(team.device), timeout_s)
    except BaseException as exc:
        team.close()
        if isinstance(exc, RuntimeError | ValueError):
            raise LearnerLost(f"the {team.size} learners did not meet: {first_line(exc)}") from None
        raise
    return team
