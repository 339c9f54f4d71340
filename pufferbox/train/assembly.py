"""What a :class:`~pufferbox.train.trainer.Trainer` trains with, built once from the layered config.

:func:`assemble` turns ``(spec, config)`` into :class:`TrainingParts`: the vector env (or Ray's
remote rollouts), the device, the policy (one shared :class:`~pufferbox.train.policies.Agent`, or
one per agent group with its league), the learner, the thread policy, the collector and the
observation/reward normalizer. Every combination that cannot work is refused here, in one line,
before a worker starts or a weight is drawn; the Trainer only runs the loop over what it gets.

Example:
    >>> from pufferbox.train.config import resolve_config
    >>> parts = assemble(get_registry().get("cartpole"), resolve_config())  # doctest: +SKIP
    >>> parts.collector.collect().steps                                      # doctest: +SKIP
    4096
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from pufferbox.buffers import Buffers
from pufferbox.group_layout import GroupLayout
from pufferbox.registry import EnvSpec
from pufferbox.train.collector import Collector, DeviceCollector, HostCollector, make_vec_env
from pufferbox.train.config import ConfigError, LeagueConfig, PolicyConfig, RunConfig, TrainConfig, VecConfig, updated
from pufferbox.train.distributed import Solo, Team
from pufferbox.train.groups import GroupedAgent, GroupLearner, League, build_groups, grouped_agent, resolve_layout
from pufferbox.train.hardware import (
    Hardware,
    available_memory,
    pick_autocast,
    pick_device,
    policy_macs,
    resolve_hardware,
    usable_cores,
)
from pufferbox.train.learner import Learner
from pufferbox.train.normalize import Normalizer, make_normalizer
from pufferbox.train.overlap import OverlapCollector
from pufferbox.train.policies import Agent, build_agent
from pufferbox.train.ray_collector import RayCollector
from pufferbox.train.scripted_seats import careless_seats
from pufferbox.vector.base import VectorEnv
from pufferbox.vector.cuda import CudaVectorEnv
from pufferbox.vector.ray_rollout import RayRollouts

__all__ = ["TrainingParts", "assemble", "fresh_policy", "memory_needed", "setup_torch", "training_device"]


@dataclass
class TrainingParts:
    """The pieces one training run wires together (see :func:`assemble`)."""

    tc: TrainConfig
    pc: PolicyConfig
    venv: VectorEnv | RayRollouts
    device: torch.device
    layout: GroupLayout | None  # the env's agent groups, None for one shared policy
    agent: Agent | GroupedAgent
    learner: Learner | GroupLearner
    league: League | None
    hardware: Hardware
    collector: Collector
    normalizer: Normalizer | None


def setup_torch(tc: TrainConfig) -> torch.device:
    """Seed torch and set its determinism; returns the device ``train.device`` names (threads: see
    :func:`~pufferbox.train.hardware.resolve_hardware`, once the vector env is known)."""
    device = pick_device(tc.device)
    if tc.deterministic:
        torch.use_deterministic_algorithms(True)
    torch.manual_seed(tc.seed)
    return device


def training_device(tc: TrainConfig, venv: Any, device: torch.device) -> torch.device:
    """Where the policy trains: with ``--backend cuda`` where the kernels run (``recv()`` returns tensors
    there, so rollout, sampling and update stay there), else ``device``."""
    if venv.backend != "cuda":
        return device
    if tc.device not in ("cpu", "auto") and torch.device(tc.device) != venv.device:
        raise ConfigError(
            f"train.device={tc.device!r}: with --backend cuda the policy trains where the kernels "
            f"run ({venv.device}); drop --device"
        )
    return torch.device(venv.device)


def refuse_impossible(tc: TrainConfig, vc: VecConfig) -> None:
    """One line for the combinations no collector supports (before any env worker starts)."""
    if tc.overlap and vc.backend == "cuda":
        raise ConfigError(
            "train.overlap=true: --backend cuda already steps the envs on the policy's device "
            "without the host; drop train.overlap or use a CPU backend (e.g. multiprocessing)"
        )


def refuse_learners(spec: EnvSpec, run: RunConfig) -> None:
    """One line for ``train.learners`` settings that cannot run (before a learner process starts)."""
    tc, vc = run.train, run.vec
    n = tc.learners
    for key in ("num_envs", "num_workers", "batch_size", "main_envs"):
        value = getattr(vc, key)
        if value % n:
            raise ConfigError(
                f"vec.{key}={value} does not split over train.learners={n} (each learner steps an equal "
                f"share); fix: make --{key.replace('_', '-')} a multiple of {n}"
            )
    if vc.backend in ("ray", "cuda"):
        why = "its rollouts run on Ray's actors" if vc.backend == "ray" else "its kernels step on one device"
        raise ConfigError(
            f"train.learners={n}: not with --backend {vc.backend} ({why}); use --backend serial or multiprocessing"
        )
    if tc.overlap and (tc.norm_obs or tc.norm_reward):
        raise ConfigError(
            f"train.learners={n}: not with train.overlap and norm_obs/norm_reward together (the learners pool "
            "their statistics between rollouts, and overlap leaves none); drop one of them or use one learner"
        )
    layout = resolve_layout(spec, run.env, run.groups)
    if layout is not None and not layout.single:
        raise ConfigError(f"train.learners={n}: {spec.name} trains agent groups (one learner per group); use one learner")
    if tc.device.startswith("cuda:"):
        raise ConfigError(f"train.device={tc.device}: with --learners {n}, learner R trains on cuda:R; use --device cuda")
    local = tc.learners_on == "processes"  # on Ray, the others' GPUs are the cluster's (train/ray_learners.py)
    cores = affinity_cores()
    if local and n > cores:
        raise ConfigError(
            f"train.learners={n}: each learner is a process of its own and this machine has {cores} usable cores "
            f"(the learners would take turns, about {n / cores:.0f}x slower); fix: --learners {cores} or fewer, "
            "or spread them over a Ray cluster with --ray-address"
        )
    if local and pick_device(tc.device).type == "cuda" and torch.cuda.device_count() < n:
        raise ConfigError(
            f"train.learners={n}: each learner trains on a GPU of its own and torch sees "
            f"{torch.cuda.device_count()}; fix: --learners {torch.cuda.device_count()} or --device cpu"
        )


def affinity_cores() -> int:
    """The cores this process may run on (its affinity mask: a container's cpuset), not lowered by
    ``OMP_NUM_THREADS`` (that bounds one process's threads, not how many processes fit)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def learner_share(vc: VecConfig, learners: int) -> VecConfig:
    """The envs (and workers, pool batch, main-process envs) one of ``learners`` learners steps."""
    keys = ("num_envs", "num_workers", "batch_size", "main_envs")
    return updated(vc, {key: getattr(vc, key) // learners for key in keys})


def memory_needed(spec: EnvSpec, tc: TrainConfig, vc: VecConfig, pc: PolicyConfig, env_kwargs: Mapping) -> dict[str, int]:
    """Bytes the sizes in the config take before training starts (a lower bound): the backend's env
    buffers (in ``/dev/shm`` for the multiprocessing backend) and the rollout storage, twice (the
    segments the collector fills and the batch the learner copies out of them)."""
    from pufferbox.vector.base import EnvFactory

    obs_spec, act_spec, agents_per_env = EnvFactory(spec, dict(env_kwargs), use_native=vc.native).layout()
    rows = vc.num_envs * agents_per_env
    pool = 0 < vc.batch_size < vc.num_envs  # rows run ahead of each other: spare segments
    segments = rows * (2 if pool else 1)
    lstm = (pc.lstm_size or pc.hidden_size) if pc.lstm else 0
    per_step = (
        obs_spec.flat_size * obs_spec.flat_dtype.itemsize
        + math.prod(act_spec.shape) * act_spec.dtype.itemsize
        + 3 * 4  # logprobs, values, rewards
        + 2  # starts, masks
        + 2 * 4 * lstm  # the LSTM state per step
    )
    hidden = pc.hidden_size + lstm
    return {
        "rollout": 2 * segments * (tc.num_steps + 1) * per_step,
        "env buffers": Buffers.nbytes_for(obs_spec, act_spec, rows),
        # a hidden-to-hidden layer (every built-in encoder has one at least that big) and the heads, in float32
        # with their gradients and Adam's two moments (a lower bound)
        "policy and optimizer": 4 * 4 * hidden * (hidden + math.prod(act_spec.shape) + 1),
    }


def refuse_oversized(spec: EnvSpec, tc: TrainConfig, vc: VecConfig, pc: PolicyConfig, env_kwargs: Mapping) -> None:
    """One line when the sizes need more memory than the machine has (before anything is allocated: an
    absurd ``--num-envs`` would otherwise grow until the kernel's OOM killer ends it, or a neighbour)."""
    needs = memory_needed(spec, tc, vc, pc, env_kwargs)
    if vc.backend == "multiprocessing":  # the buffers live in /dev/shm (Docker's default is 64 MB)
        from pufferbox.vector.shm import check_shm_room

        check_shm_room(needs["env buffers"])
    if vc.backend == "cuda" and vc.device == "gpu":
        free = torch.cuda.mem_get_info()[0] if torch.cuda.is_available() else None
        where = "GPU memory free"
    else:
        free, where = available_memory(), "memory available"
    total = sum(needs.values())
    if free is None or total <= free:
        return
    gib = 2**30
    parts = ", ".join(f"{name} {size / gib:,.1f} GiB" for name, size in needs.items())
    sizes = f"vec.num_envs={vc.num_envs:,} x train.num_steps={tc.num_steps:,}"
    fix = "lower --num-envs or train.num_steps"
    lstm = (pc.lstm_size or pc.hidden_size) if pc.lstm else 0
    if needs["policy and optimizer"] > total / 2:  # the policy's width, not the batch, is what does not fit
        sizes = f"policy.hidden_size={pc.hidden_size:,}" + (f", lstm_size={lstm:,}" if lstm else "")
        fix = "lower policy.hidden_size"
    raise ConfigError(
        f"{sizes} need at least {total / gib:,.1f} GiB ({parts}) but this machine has {free / gib:,.1f} GiB "
        f"{where}; fix: {fix}"
    )


def assemble(
    spec: EnvSpec,
    config: RunConfig | Mapping[str, Any],
    run_dir: str | None = None,
    version: Callable[[], int] = lambda: 0,
    plan: Callable[[int], int | None] = lambda pending: None,
    team: Team | Solo | None = None,
) -> TrainingParts:
    """Envs, device, policy, learner, threads, collector and normalizer for ``config`` (a
    :class:`~pufferbox.train.config.RunConfig`, or its dict of sections);
    ``version``/``plan``: see :func:`build_collector`; ``team``: this process's place among
    ``train.learners`` data-parallel learners (:class:`~pufferbox.train.distributed.Team`); ``--backend ray``
    joins the Ray cluster at ``vec.ray_address`` ("": ``$RAY_ADDRESS``, else a local Ray)."""
    run = RunConfig.of(config)
    tc, vc, pc = run.train, run.vec, run.policy
    if tc.learners > 1:
        refuse_learners(spec, run)
        vc = learner_share(vc, tc.learners)
    device = setup_torch(tc)
    layout = resolve_layout(spec, run.env, run.groups)  # a bad map: one line, no workers
    refuse_impossible(tc, vc)
    refuse_oversized(spec, tc, vc, pc, run.env)
    grouped_layout = layout if layout is not None and not layout.single else None
    grouped = grouped_layout is not None
    venv: VectorEnv | RayRollouts
    if vc.backend == "ray" and not grouped:  # rollouts run on the actors, next to their envs (ray_collector.py)
        from pufferbox.train.ray_collector import make_ray_rollouts

        venv = make_ray_rollouts(spec, vc, run.env, tc.seed, address=vc.ray_address or None)
    else:  # grouped envs on ray step through send/recv: a remote actor holds one policy copy
        venv = make_vec_env(spec, vc, run.env, tc.seed, tc.num_steps)
    device = training_device(tc, venv, device)
    league: League | None = None
    agent: Agent | GroupedAgent
    learner: Learner | GroupLearner
    if grouped_layout is not None:
        agent, learner, league = build_groups(spec, grouped_layout, venv, pc, tc, device, run_dir, run.league, run.env)
    else:  # one shared policy: the single-group path
        agent = build_agent(venv.obs_spec, venv.act_spec, pc, spec.load_policy()).to(device)
        learner = Learner(agent, tc, seed=tc.seed, compile=tc.compile, team=team)
    macs = policy_macs(agent, venv.obs_spec) if not tc.torch_threads else float("inf")
    hardware = resolve_hardware(
        device,
        tc.device,
        tc.torch_threads,
        venv,
        cores=None if tc.learners == 1 else max(1, usable_cores() // tc.learners),  # the learners share the cores
        macs=macs,
        autocast=pick_autocast(tc.autocast, device),
        requested_autocast=tc.autocast,
    )
    torch.set_num_threads(hardware.torch_threads)
    collector = build_collector(spec, tc, venv, agent, device, version, plan)
    normalizer = make_normalizer(venv.obs_spec, venv.num_agents, tc)
    if normalizer is not None:
        host = host_collector(collector)
        if host is None:
            raise ConfigError(
                "train.norm_obs/norm_reward: only with the host collector (serial, multiprocessing "
                "backends); drop them for --backend cuda or ray"
            )
        host.norm = normalizer
    add_random_seats(collector, grouped_layout, venv, tc, run.league)
    return TrainingParts(tc, pc, venv, device, layout, agent, learner, league, hardware, collector, normalizer)


def host_collector(collector: Collector) -> HostCollector | None:
    """The host collector acting in ``collector`` (itself, or inside an :class:`OverlapCollector`), if any."""
    inner = collector.inner if isinstance(collector, OverlapCollector) else collector
    return inner if isinstance(inner, HostCollector) else None


def add_random_seats(collector: Any, layout: Any, venv: Any, tc: TrainConfig, league: LeagueConfig) -> None:
    """``league.random_opponent``: the host collector's :class:`RandomSeats`, or a one-line refusal."""
    share = league.random_opponent
    if not share:
        return
    host = host_collector(collector)
    if share >= 1 or layout is None or host is None:
        raise ConfigError(
            f"league.random_opponent={share}: a share below 1 of the episodes, for agent groups (self-play) "
            "on the serial or multiprocessing backend; set it to 0 otherwise"
        )
    host.random_seats = careless_seats(league, layout.slot_group, venv, tc.seed)


def make_collector(
    spec: EnvSpec,
    venv: VectorEnv | RayRollouts,
    agent: Agent | GroupedAgent,
    horizon: int,
    device: torch.device | str,
    compile: bool = False,
    bootstrap_gamma: float = 0.0,
    compile_mode: str = "default",
) -> Collector:
    """The collector for ``venv``: on the kernels' device for a backend whose ``recv()`` returns tensors;
    ``bootstrap_gamma``: the discount of truncated steps' bootstrap (0: truncation ends the return);
    ``compile``/``compile_mode``: torch.compile the host collector's act step, in that mode."""
    if isinstance(venv, RayRollouts):  # --backend ray in training: the actors act themselves
        return RayCollector(venv, agent, horizon, device, bootstrap_gamma=bootstrap_gamma)
    if isinstance(venv, CudaVectorEnv):
        events = spec.build.cuda.events if spec.build.cuda is not None else {}
        return DeviceCollector(venv, agent, horizon, events, bootstrap_gamma=bootstrap_gamma)
    return HostCollector(
        venv, agent, horizon, device, compile=compile, bootstrap_gamma=bootstrap_gamma, compile_mode=compile_mode
    )


def build_collector(
    spec: EnvSpec,
    tc: TrainConfig,
    venv: VectorEnv | RayRollouts,
    agent: Agent | GroupedAgent,
    device: torch.device,
    version: Callable[[], int],
    plan: Callable[[int], int | None] = lambda pending: None,
) -> Collector:
    """The act loop; with ``train.overlap`` double-buffered, acting with its own copy of the policy
    (``version`` numbers the learner's updates, ``plan`` sizes the rollout collected during one)."""
    gamma = tc.gamma if tc.bootstrap_truncation else 0.0
    if not tc.overlap:
        return make_collector(spec, venv, agent, tc.num_steps, device, tc.compile, gamma, tc.compile_mode)
    actor = copy.deepcopy(agent)
    inner = make_collector(spec, venv, actor, tc.num_steps, device, tc.compile, gamma, tc.compile_mode)
    return OverlapCollector(inner, actor, agent, version=version, plan=plan)


def fresh_policy(spec: EnvSpec, parts: TrainingParts, seed: int) -> Agent | GroupedAgent:
    """Newly drawn weights (from ``seed``) of the same architecture as ``parts.agent``, on the CPU."""
    torch.manual_seed(seed)
    if parts.layout is not None and not parts.layout.single:
        return grouped_agent(spec, parts.layout, parts.venv, parts.pc)
    return build_agent(parts.venv.obs_spec, parts.venv.act_spec, parts.pc, spec.load_policy())
