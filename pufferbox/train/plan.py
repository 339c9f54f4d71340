"""The scaling plan: a plugin's defaults resized for the machine the run trains on (issue 41).

Plugin defaults are tuned and validated on :data:`BASE_CORES` CPU cores without a GPU. On a bigger
machine :func:`make_plan` sizes ``vec.num_envs``, the backend's workers and pool batch, and the rollout
horizon (``train.num_steps``) and ``train.num_minibatches`` from a described :class:`Machine` (cores,
memory, ``/dev/shm``, GPUs and their memory) and the env's family:

* ``native``: a batched C block with small observations (CartPole, Ocean's Pong). Its block steps
  faster than the policy acts, so more cores would not speed it: it stays in this process (serial), and
  only a GPU learner, whose forward pass costs about the same for thousands of rows as for a few, gets
  :data:`GPU_ENV_FACTOR` times the envs.
* ``heavy``: stepping is the bottleneck (a native block with large observations such as NetHack's, or a
  Python env). The envs move to ``multiprocessing`` workers, one per spare core (all cores but one per
  GPU learner with a GPU; half of them without, the other half running torch's update), each stepping
  as many envs as the defaults gave one core, times :data:`GPU_ENV_FACTOR` with a GPU. A Python env
  (no native block) steps in a pool of two halves (``vec.batch_size = num_envs / 2``): the policy acts
  on one half while the other steps, and an uneven step no longer stalls every row.
* ``image``: as ``heavy`` (Atari steps in a native block on ale-py's C++ vector env, one thread per worker
  process there), with the memory caps below mattering first.

What the learning depends on stays in the range the defaults were validated in: the epochs are never
changed, and the minibatch size is kept (``num_minibatches`` scales with the batch). More envs first
shorten the horizon to keep the samples per update, by at most :data:`MAX_HORIZON_SHRINK` and never
below :data:`MIN_HORIZON` steps (GAE needs some steps to look ahead); past that the batch grows, by at
most :data:`MAX_BATCH_GROWTH`, which caps the envs. We scale the batch rather than shorten the horizon
further because a bigger batch at the same minibatch size and epochs keeps Adam's steps per sample,
while a horizon of a few steps leaves the advantages to the value function's bootstrap. The rollout
may take half the memory available (and half a GPU's), the env buffers half the free ``/dev/shm``
(``multiprocessing`` keeps them there; where the defaults' envs do not fit, the plan stays serial).

On a GPU the batch that makes the learner's time worth it is far bigger than scaling the 2-core defaults
gives, and PPO at that batch needs its own settings to learn (fewer epochs over larger minibatches, at a
measured rate): a plugin declares them as the env's GPU profile (``TrainDefaults.gpu_config``, config
sections layered over its defaults). :func:`planned_config` picks the profile when the run trains on a
CUDA device (``train.device`` ``cuda``/``cuda:N``, or ``auto`` on a machine with a GPU), or wherever
``profile="gpu"`` (``pufferbox train --profile gpu``) asks for it, so its learning can be checked on a
CPU; ``profile="cpu"`` keeps the defaults. The profile replaces the scaling above for the envs that have
one: its envs, horizon and minibatches are taken as they are (heavy and image envs spread over the
workers the machine has cores for); an env without a profile is planned as before.

Explicit settings always win: :func:`planned_config` applies the plan beneath the config file,
``--set`` and flags, and not at all when the user set any key it sizes (:data:`PLANNED_KEYS`: the
rollout shape and the backend depend on each other, so a user's ``--num-envs`` never meets a horizon
or a worker count planned for other envs).
On the base machine (or a smaller one) the plan is the plugin's defaults exactly. ``train.torch_threads``
is not planned: ``0`` already resolves from the cores the workers leave (:mod:`pufferbox.train.hardware`).
With several GPUs the plan suggests ``--learners`` (one data-parallel learner per GPU) without applying it.

Example:
    >>> m = Machine(cores=16, memory=120 * 2**30, shm=64 * 2**30, gpus=1, gpu_memory=80 * 2**30)
    >>> plan = make_plan(m, get_registry().get("nethack"))  # doctest: +SKIP
    >>> plan.num_envs, plan.num_steps, plan.backend, plan.num_workers  # doctest: +SKIP
    (510, 16, 'multiprocessing', 15)
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pufferbox.registry import EnvSpec
from pufferbox.train.config import GPU_PROFILE, PLAN, ConfigError, Layer, Layers, RunConfig, resolve_run_config, updated
from pufferbox.train.hardware import auto_threads, available_memory, policy_macs, usable_cores

__all__ = [
    "BASE_CORES",
    "PROFILES",
    "GPU_ENV_FACTOR",
    "MAX_BATCH_GROWTH",
    "MAX_HORIZON_SHRINK",
    "MIN_HORIZON",
    "PLANNED_KEYS",
    "Machine",
    "Plan",
    "env_family",
    "expected_threads",
    "machine_summary",
    "make_plan",
    "choose_plan",
    "plan_record",
    "planned_config",
    "plan_layers",
    "profile_plan",
    "trains_on_cuda",
]

BASE_CORES = 2  # the machine the first-party defaults were tuned on (2 cores, no GPU: RESULTS.md)
GPU_ENV_FACTOR = 4  # envs per core with a GPU learner: its forward costs about the same for 4x the rows
MAX_HORIZON_SHRINK = 4  # the rollout horizon is shortened by at most this factor ...
MIN_HORIZON = 16  # ... and never below this many steps (or the defaults' own, if shorter)
MAX_BATCH_GROWTH = 8  # samples per update grow by at most this factor (same minibatch size and epochs)
HEAVY_OBS_BYTES = 1024  # a native block's observation past this per agent: stepping, not acting, is the cost
GiB = 2**30
# What the plan sizes; a user's value for any of them leaves all of them to the user and the plugin
PLANNED_KEYS = ("vec.num_envs", "train.num_steps", "train.num_minibatches") + (
    "vec.backend",
    "vec.num_workers",
    "vec.batch_size",
    "vec.main_envs",
)
PROFILES = ("auto", "gpu", "cpu")  # pufferbox train --profile: auto = the GPU profile on a CUDA device


@dataclass(frozen=True)
class Machine:
    """What the plan sizes for: usable cores, bytes of memory available and free in ``/dev/shm``
    (None: unknown, no cap), GPUs and the bytes of one GPU's memory."""

    cores: int
    memory: int | None = None
    shm: int | None = None
    gpus: int = 0
    gpu_memory: int = 0

    @classmethod
    def here(cls, shm_dir: str = "/dev/shm") -> Machine:
        """This machine, read by :mod:`pufferbox.train.hardware` (cores, memory) and torch (GPUs)."""
        import torch

        try:
            shm = shutil.disk_usage(shm_dir).free if Path(shm_dir).is_dir() else None
        except OSError:
            shm = None
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        gpu_memory = torch.cuda.get_device_properties(0).total_memory if gpus else 0
        return cls(usable_cores(), available_memory(), shm, gpus, gpu_memory)

    def describe(self) -> str:
        """``"16 cores, 120 GiB, 1 GPU (80 GiB)"``."""
        text = f"{self.cores} core{'s' if self.cores != 1 else ''}"
        if self.memory is not None:
            text += f", {self.memory / GiB:.0f} GiB"
        if not self.gpus:
            return text + ", no GPU"
        return text + f", {self.gpus} GPU{'s' if self.gpus > 1 else ''} ({self.gpu_memory / GiB:.0f} GiB)"

    def env_workers(self) -> int:
        """Env worker processes this machine has cores for: every core but one per GPU learner, rounded
        down to a multiple of the GPUs (so ``--learners GPUS`` splits them); without a GPU, half the cores."""
        if not self.gpus:
            return self.cores // 2
        spare = self.cores - self.gpus
        return max(1, spare - spare % self.gpus)


@dataclass(frozen=True)
class Plan:
    """The sizes :func:`make_plan` chose for one env on one :class:`Machine`, and why."""

    machine: Machine
    family: str
    num_envs: int
    num_steps: int
    num_minibatches: int
    backend: str
    num_workers: int = 0
    batch_size: int = 0
    learners: int = 1  # suggested (``--learners``), never applied
    scaled: bool = False  # False: the plugin's defaults (or its GPU profile), unchanged
    notes: tuple[str, ...] = field(default_factory=tuple)
    profile: str = "cpu"  # "gpu": the env's GPU profile over its defaults; "cpu": the defaults

    def settings(self) -> dict[str, dict[str, Any]]:
        """The planned keys as config sections (what :func:`planned_config` layers)."""
        vec = {"num_envs": self.num_envs, "backend": self.backend, "num_workers": self.num_workers}
        vec["batch_size"] = self.batch_size
        return {"vec": vec, "train": {"num_steps": self.num_steps, "num_minibatches": self.num_minibatches}}

    def describe(self, torch_threads: int | None = None) -> str:
        """One line: ``"plan for 2 cores, 23 GiB, no GPU: 64 envs x 32 steps, serial, 1 torch thread"``."""
        where = "serial" if self.backend == "serial" else f"{self.backend} {self.num_workers} workers"
        if self.batch_size:
            where += f", pool of {self.batch_size}"
        text = f"plan for {self.machine.describe()}: {self.num_envs:,} envs x {self.num_steps} steps, {where}"
        if torch_threads is not None:
            text += f", {torch_threads} torch thread{'s' if torch_threads != 1 else ''}"
        yours = any(note.startswith("not planned") for note in self.notes)
        defaults = "the GPU profile" if self.profile == "gpu" else "the plugin defaults"
        origin = "scaled" if self.scaled else "your settings" if yours else defaults
        origin += ", GPU profile" if self.profile == "gpu" and origin != defaults else ""
        text += f" ({self.family + ' env, ' if self.family else ''}{origin})"
        if self.learners > 1:
            text += f"; --learners {self.learners} would train on every GPU"
        return text + "".join(f"; {note}" for note in self.notes)

    def as_record(self) -> dict[str, Any]:
        """For config.toml's ``[run.plan]``: the machine, the family and the sizes planned."""
        machine = {k: v for k, v in vars(self.machine).items() if v is not None}
        sizes = {k: v for k, v in vars(self).items() if k not in ("machine", "notes")}
        return {"machine": machine, **sizes, "notes": list(self.notes), "line": self.describe()}


def env_family(spec: EnvSpec, env_kwargs: Mapping[str, Any] | None = None) -> str:
    """``"native"``, ``"heavy"`` or ``"image"`` (see the module docstring), from the env's flat layout."""
    obs_spec, _, _ = spec.flattening(**dict(env_kwargs or {}))
    if any(len(leaf.shape) >= 3 and leaf.dtype.itemsize == 1 for leaf in obs_spec.leaves):
        return "image"
    native = spec.build.native is not None
    return "native" if native and obs_spec.flat_size * obs_spec.flat_dtype.itemsize < HEAVY_OBS_BYTES else "heavy"


def make_plan(machine: Machine, spec: EnvSpec, base: RunConfig | None = None) -> Plan:
    """The :class:`Plan` for ``spec`` on ``machine``; ``base``: the run config the plugin's
    defaults give (:func:`~pufferbox.train.config.resolve_run_config` of them when None), whose
    ``train.learners`` the planned envs, workers and pool split over."""
    base = resolve_run_config(spec.training.config) if base is None else base
    tc, vc = base.train, base.vec
    learners = tc.learners
    same = Plan(machine, "", vc.num_envs, tc.num_steps, tc.num_minibatches, vc.backend, vc.num_workers, vc.batch_size)
    same = replace(same, learners=machine.gpus if machine.gpus > 1 else 1)
    workers = machine.env_workers()
    workers -= workers % learners  # each learner steps an equal share
    if vc.backend not in ("serial", "multiprocessing") or (workers < 2 and not machine.gpus):
        return same  # the base machine, a smaller one, or a backend the plan does not size (ray, cuda)
    family = env_family(spec, base.env)
    same = replace(same, family=family)
    per_core = GPU_ENV_FACTOR if machine.gpus else 1
    if family == "native":
        target, workers = vc.num_envs * per_core, 0
    else:
        target = vc.num_envs * max(1, workers) * per_core
        workers = workers if workers >= 2 else 0
    if target <= vc.num_envs:
        return same
    return fit_plan(same, spec, base, target, workers)


def fit_plan(same: Plan, spec: EnvSpec, base: RunConfig, target: int, workers: int) -> Plan:
    """``target`` envs over ``workers`` processes (0: serial), fitted to the learning range, the memory
    and ``/dev/shm``; serial with a GPU's share of envs where not even the defaults' envs fit there."""
    envs0, steps0 = same.num_envs, base.train.num_steps
    steps = max(math.ceil(envs0 * steps0 / target), steps0 // MAX_HORIZON_SHRINK, min(MIN_HORIZON, steps0))
    envs = min(target, envs0 * steps0 * MAX_BATCH_GROWTH // steps)
    notes = [f"envs capped at {MAX_BATCH_GROWTH}x the defaults' samples per update"] if envs < target else []
    envs, memory_note = fit_memory(same.machine, spec, base, envs, steps, workers)
    notes += [memory_note] if memory_note else []
    learners = base.train.learners
    envs -= envs % learners
    if workers:
        envs, shm_note = fit_shm(same.machine, spec, base, envs - envs % workers, workers)
        if envs < envs0:  # not even the defaults' envs fit in /dev/shm: no workers
            serial = envs0 * (GPU_ENV_FACTOR if same.machine.gpus else 1)
            fallback = fit_plan(same, spec, base, serial, 0) if serial > envs0 else same
            return replace(fallback, notes=fallback.notes + (shm_note + ": serial",))
        notes += [shm_note] if shm_note else []
    if envs <= envs0:
        return replace(same, notes=tuple(notes))
    return scaled_plan(same, spec, base, envs, max(steps, math.ceil(envs0 * steps0 / envs)), workers, notes)


def scaled_plan(same: Plan, spec: EnvSpec, base: RunConfig, envs: int, steps: int, workers: int, notes: list[str]) -> Plan:
    """``same`` resized to ``envs`` x ``steps`` over ``workers``: the defaults' minibatch size kept."""
    minibatch = max(1, same.num_envs * base.train.num_steps // same.num_minibatches)
    learners = base.train.learners
    halves = workers >= 2 and workers % 2 == 0 and (envs // 2) % learners == 0
    pool = envs // 2 if halves and spec.build.native is None else 0
    return replace(
        same,
        num_envs=envs,
        num_steps=steps,
        num_minibatches=max(1, round(envs * steps / minibatch)),
        backend="multiprocessing" if workers else same.backend,
        num_workers=workers if workers else same.num_workers,
        batch_size=pool if workers else same.batch_size,
        scaled=True,
        notes=tuple(notes),
    )


def one_env_bytes(spec: EnvSpec, base: RunConfig, steps: int) -> dict[str, int]:
    """:func:`~pufferbox.train.assembly.memory_needed` for one env of ``base`` and ``steps`` steps
    (what it counts grows with the envs)."""
    from pufferbox.train.assembly import memory_needed

    tc = updated(base.train, {"num_steps": steps})
    vc = updated(base.vec, {"num_envs": 1, "batch_size": 0})
    return memory_needed(spec, tc, vc, base.policy, base.env)


def fit_memory(machine: Machine, spec: EnvSpec, base: RunConfig, envs: int, steps: int, workers: int) -> tuple[int, str]:
    """``envs`` lowered until the rollout and env buffers take at most half the memory available, and the
    learner's copy of the rollout at most half of one GPU's."""
    per_env = one_env_bytes(spec, base, steps)
    pool = 2 if workers >= 2 and spec.build.native is None else 1  # a pool keeps spare segments
    host = pool * per_env["rollout"] + per_env["env buffers"]
    rooms = [machine.memory // 2 // host] if machine.memory is not None else []
    rooms += [machine.gpu_memory // 2 // max(1, per_env["rollout"] // 2)] if machine.gpus else []
    room = min(rooms, default=envs)
    if room >= envs:
        return envs, ""
    return max(1, room), f"envs capped by memory ({host * room / GiB:.1f} GiB of rollout)"


def fit_shm(machine: Machine, spec: EnvSpec, base: RunConfig, envs: int, workers: int) -> tuple[int, str]:
    """``envs`` (a multiple of ``workers``) lowered until their buffers take at most half the free ``/dev/shm``."""
    if machine.shm is None:
        return envs, ""
    buffers = one_env_bytes(spec, base, base.train.num_steps)["env buffers"]
    room = machine.shm // 2 // max(1, buffers)
    if room >= envs:
        return envs, ""
    room -= room % workers
    return room, f"envs capped by /dev/shm ({machine.shm / 2**20:,.0f} MiB free)"


def expected_threads(plan: Plan, spec: EnvSpec, base: RunConfig | None = None) -> int | None:
    """The torch threads a run under ``plan`` resolves ``train.torch_threads`` to (see
    :func:`~pufferbox.train.hardware.auto_threads`), from the policy ``base`` builds; None where that
    policy cannot be built without the run (agent groups)."""
    from pufferbox.train.policies import build_agent

    base = resolve_run_config(spec.training.config) if base is None else base
    threads = base.train.torch_threads
    if threads:
        return threads
    obs_spec, act_spec, _ = spec.flattening(**base.env)
    try:
        agent = build_agent(obs_spec, act_spec, base.policy, spec.load_policy())
        macs = policy_macs(agent, obs_spec)
    except Exception:  # a policy that needs the run's groups or vector env: the run resolves it
        return None
    return auto_threads(plan.machine.cores, plan.backend, plan.num_workers, macs)


def machine_summary(machine: Machine) -> str:
    """What the plan does on ``machine`` for any env, in one line (for ``pufferbox doctor``)."""
    shm = f", {machine.shm / GiB:.0f} GiB /dev/shm" if machine.shm is not None else ""
    workers = machine.env_workers()
    if workers < 2 and not machine.gpus:
        return f"{machine.describe()}{shm}: the plugin defaults (tuned on {BASE_CORES} cores)"
    per_core = GPU_ENV_FACTOR if machine.gpus else 1
    text = f"{machine.describe()}{shm}: heavy and image envs over {workers} env workers" if workers >= 2 else ""
    text = text or f"{machine.describe()}{shm}: heavy and image envs in this process"
    text += f", {per_core}x the defaults' envs per core" + (f"; native envs {per_core}x" if machine.gpus else "")
    text += f"; batch at most {MAX_BATCH_GROWTH}x the defaults'"
    text += "; envs with a GPU profile train at it instead" if machine.gpus else ""
    return text + (f"; --learners {machine.gpus} would train on every GPU" if machine.gpus > 1 else "")


def plan_record(plan: Plan | dict | None) -> dict[str, Any]:
    """``{"plan": ...}`` for config.toml's ``[run]``: the plan's record (a resumed run's, as recorded)."""
    if plan is None:
        return {}
    return {"plan": plan if isinstance(plan, dict) else plan.as_record()}


def trains_on_cuda(device: str, machine: Machine) -> bool:
    """Whether ``train.device`` resolves to a CUDA device on ``machine`` (``auto``: when it has a GPU)."""
    return device.startswith("cuda") or (device == "auto" and machine.gpus > 0)


def profile_plan(machine: Machine, spec: EnvSpec, base: RunConfig) -> Plan:
    """The :class:`Plan` of an env's GPU profile (``base``: its defaults with the profile layered): its
    envs, horizon and minibatches as they are; a heavy or image env's envs spread over the workers
    ``machine`` has cores for (rounded up to a multiple of them, so the batch is never smaller than the
    profile's; within half the free ``/dev/shm``)."""
    tc, vc = base.train, base.vec
    plan = Plan(machine, "", vc.num_envs, tc.num_steps, tc.num_minibatches, vc.backend, vc.num_workers, vc.batch_size)
    plan = replace(plan, learners=machine.gpus if machine.gpus > 1 else 1, profile="gpu")
    if vc.backend not in ("serial", "multiprocessing"):
        return plan
    plan = replace(plan, family=env_family(spec, base.env))
    workers = machine.env_workers()
    workers -= workers % tc.learners
    if plan.family == "native" or workers < 2 or vc.num_workers:
        return plan  # a native block steps in this process; workers the profile names are kept
    envs, note = fit_shm(machine, spec, base, math.ceil(vc.num_envs / workers) * workers, workers)
    if envs < workers:
        return replace(plan, notes=(note + ": serial",))
    spread = replace(plan, num_envs=envs, backend="multiprocessing", num_workers=workers, batch_size=0)
    return replace(spread, notes=(note,) if note else ())


def choose_plan(
    machine: Machine,
    spec: EnvSpec,
    profile: str = "auto",
    device: str = "auto",
    base: RunConfig | None = None,
    layers: Layers | None = None,
) -> tuple[Plan, RunConfig]:
    """The plan for ``spec`` on ``machine`` under ``profile`` (one of :data:`PROFILES`) for a run on
    ``device``, and the run config it sizes: the GPU profile's where it applies, else the defaults' as
    :func:`make_plan` scales them. ``base`` carries the run's ``train.learners`` (default 1);
    ``layers``: the run's stack without the user's layers (default: the plugin's defaults alone)."""
    plan, _, defaults = plan_layers(machine, spec, profile, device, base, layers)
    return plan, defaults


def plan_layers(
    machine: Machine,
    spec: EnvSpec,
    profile: str,
    device: str,
    base: RunConfig | None,
    layers: Layers | None,
) -> tuple[Plan, Layer | None, RunConfig]:
    """:func:`choose_plan`'s plan, the GPU profile's layer where the plan picked it, and the config it sizes."""
    if profile not in PROFILES:
        raise ConfigError(f"--profile: expected one of {', '.join(PROFILES)}, got {profile!r}")
    learners = {"train": {"learners": base.train.learners if base is not None else 1}}
    wanted = profile if profile != "auto" else "gpu" if trains_on_cuda(device, machine) else "cpu"
    gpu_config = spec.training.gpu_config
    stack = Layers.build(spec.training.config) if layers is None else layers
    if wanted == "gpu" and gpu_config:
        profile_layer = Layer.checked(GPU_PROFILE, gpu_config)
        defaults = stack.above(profile_layer).resolve().updated(learners)
        return profile_plan(machine, spec, defaults), profile_layer, defaults
    defaults = stack.resolve().updated(learners)
    plan = make_plan(machine, spec, defaults)
    if wanted == "gpu":
        plan = replace(plan, notes=plan.notes + (f"{spec.name} has no GPU profile",))
    return plan, None, defaults


def changes(settings: Mapping[str, Mapping[str, Any]], beneath: RunConfig) -> dict[str, dict[str, Any]]:
    """The ``settings`` (config sections) whose values differ from ``beneath``'s: what a layer changes."""
    out: dict[str, dict[str, Any]] = {}
    for section, table in settings.items():
        for key, value in table.items():
            if getattr(getattr(beneath, section), key) != value:
                out.setdefault(section, {})[key] = value
    return out


def planned_config(
    spec: EnvSpec,
    config_file: str | Path | None = None,
    overrides: list[str] | None = None,
    flags: Mapping[str, Any] | None = None,
    machine: Machine | None = None,
    profile: str = "auto",
) -> tuple[RunConfig, Plan]:
    """The run's config and its :class:`Plan`: built-ins < plugin defaults < the GPU profile (where
    ``profile`` picks it: see :func:`choose_plan`) < the plan < ``config_file`` < ``overrides`` <
    ``flags``, one :class:`~pufferbox.train.config.Layers` stack (the file read once) resolved once;
    no plan where the user set a key of :data:`PLANNED_KEYS`. The plan returned shows what the run
    got: the user's values where they won, named in its notes."""
    layers = Layers.build(spec.training.config, config_file, overrides, flags)
    user = layers.resolve()  # the device and learners the plan sizes for (nothing planned yet)
    machine = Machine.here() if machine is None else machine
    if user.train.device == "cpu":  # GPUs the run does not train on feed nothing
        machine = replace(machine, gpus=0, gpu_memory=0)
    ours = Layers(tuple(layer for layer in layers.layers if not layer.by_user))
    plan, profile_layer, beneath = plan_layers(machine, spec, profile, user.train.device, user, ours)
    kept = sorted(layers.user_keys() & set(PLANNED_KEYS))
    planned = () if kept else (Layer.checked(PLAN, changes(plan.settings(), beneath)),)  # all planned, or none
    config = layers.below_user(*(() if profile_layer is None else (profile_layer,)), *planned).resolve()
    if not kept:
        return config, plan
    tc, vc = config.train, config.vec
    got = replace(plan, num_envs=vc.num_envs, num_steps=tc.num_steps, num_minibatches=tc.num_minibatches)
    got = replace(got, backend=vc.backend, num_workers=vc.num_workers, batch_size=vc.batch_size)
    return config, replace(got, scaled=False, notes=(f"not planned: you set {', '.join(kept)}",))
