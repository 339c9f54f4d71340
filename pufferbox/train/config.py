"""Training configuration: built-in defaults < plugin defaults < TOML file < command line.

A run's settings are one :class:`RunConfig` (what every consumer reads): the typed sections
:class:`TrainConfig`, :class:`VecConfig`, :class:`PolicyConfig`, :class:`LeagueConfig`, plus the env
binding's free-form keyword arguments (``env``) and the agent groups (``groups``). TOML appears only
at the edges: plugin defaults, config files and ``--set`` are dicts of sections, each one
:class:`Layer` of a :class:`Layers` stack (built-ins < plugin defaults < the GPU profile < the plan <
the config file < each ``--set`` < each flag; the profile and the plan come from
:func:`pufferbox.train.plan.planned_config`), read once when the stack is built and resolved once
(:func:`resolve_run_config`). The RunConfig remembers which layer set each value
(:attr:`RunConfig.sources`, ``"section.key" -> source``). ``config.toml`` and checkpoints store
:meth:`RunConfig.to_dict` and are read back by :meth:`RunConfig.from_dict`. CLI flags are typed
layers (:func:`flag_layers`). Every key is a field whose default's type is the key's type;
a value of another type, a non-finite float, or a key nobody declared raises :class:`ConfigError`
with one line naming the key and the layer's source.

Example:
    >>> run = resolve_run_config(overrides=["train.learning_rate=3e-4"], flags={"vec.num_envs": 8})
    >>> run.train.learning_rate, run.vec.num_envs
    (0.0003, 8)
    >>> resolve_config(overrides=["train.learning_rte=1"])
    Traceback (most recent call last):
    ...
    pufferbox.train.config.ConfigError: train.learning_rte: unknown key; did you mean learning_rate?
"""

from __future__ import annotations

import copy
import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import tomli_w

from pufferbox.errors import PufferboxError

__all__ = [
    "ConfigError",
    "DEFAULTS",
    "TrainConfig",
    "VecConfig",
    "PolicyConfig",
    "LeagueConfig",
    "RunConfig",
    "resolve_run_config",
    "Layer",
    "Layers",
    "flag_layers",
    "flat_settings",
    "MACHINE_KEYS",
    "without_machine_keys",
    "typed",
    "updated",
    "resolve_config",
    "merge",
    "parse_override",
    "load_toml",
    "dump_toml",
]


class ConfigError(PufferboxError, ValueError):
    """A bad configuration value or key; the one-line message names the key and the fix."""


@dataclass(frozen=True)
class TrainConfig:
    """``[train]``: the PPO run. The update's keys are read by :class:`~pufferbox.train.learner.Learner`."""

    total_steps: int = 1_000_000  # agent steps; the last rollout is cut short to end there
    # The optimization defaults are SB3's PPO (2,048 steps per update over the 8 default envs, 10 epochs of
    # 64-sample minibatches, no entropy bonus): chosen on envs no plugin tunes (benchmarks/bench_defaults.py).
    learning_rate: float = 3e-4
    anneal_lr: bool = True
    num_steps: int = 256  # rollout length per agent row
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 32
    update_epochs: int = 10
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float = 0.0  # 0: no early stop of the epochs
    seed: int = 1
    device: str = "auto"  # "auto" (CUDA when torch sees a GPU, else CPU), "cpu", "cuda" or "cuda:N"
    # torch intra-op threads. 0: automatic (pufferbox.train.hardware.auto_threads): 1 for a small policy
    # (under 100k multiply-adds per sample, e.g. an MLP), else the usable cores (affinity mask, at most
    # OMP_NUM_THREADS when set) minus one per env worker process (multiprocessing/ray), at least 1, at most 8.
    torch_threads: int = 0
    compile: bool = False
    # torch.compile's mode when compile is on: "reduce-overhead" replays CUDA graphs, aimed at a GPU's per-step
    # kernel launch cost of inference (NetHack's largest phase on an H200, RESULTS.md; not measured there yet).
    compile_mode: str = "default"
    # "adam", or "muon": torch.optim.Muon (Newton-Schulz orthogonalized momentum) for every 2-D weight but the
    # action and value layers, Adam for those, the biases and the rest (one learning rate: Muon's step is
    # scaled to Adam's RMS). See train/optim.py.
    optimizer: str = "adam"
    # "bf16": the update's forward passes under torch.autocast (bfloat16 matmuls and convs, float32 losses
    # and weights); 2.1x faster Breakout and 1.3x NetHack updates on an AVX512-BF16 CPU (RESULTS.md). "none": float32.
    # "auto": bf16 where the device has bfloat16 in hardware (AVX512-BF16/AMX CPUs, GPUs from Ampere on), else none.
    autocast: str = "none"
    checkpoint_interval: int = 100  # updates between checkpoints (the envs keep running: episodes are never cut)
    keep_checkpoints: int = 3
    stop_on_solve: bool = False  # stop once the last-solve_window-episode mean reaches the env's solved_return
    solve_window: int = 20
    deterministic: bool = False  # torch deterministic algorithms
    max_nonfinite_updates: int = 3  # updates in a row with a NaN/inf reward or loss (skipped) before stopping
    overlap: bool = False  # collect rollout k+1 (policy one update old) while learning on k; see overlap.py
    lag_correction: str = "vtrace"  # overlap only: "vtrace" (IMPALA's targets) or "none" (PPO's clip alone)
    norm_obs: bool = False  # running mean/std of the float observation leaves (see train/normalize.py)
    norm_reward: bool = False  # rewards / running std of the discounted return
    clip_obs: float = 10.0  # normalized observations are clipped to [-clip_obs, clip_obs]
    clip_reward: float = 10.0
    # A time-limit truncation is not the end of the task: its step's reward becomes r + gamma * V(final obs)
    # (the backend keeps the final observation past the autoreset; see train/collector.py). False: truncation
    # ends the return like termination (CleanRL). No effect where the backend has no final observations (cuda).
    bootstrap_truncation: bool = True
    # Data-parallel learner processes (train/distributed.py): each steps vec.num_envs / learners of the envs,
    # and every minibatch's gradients are averaged over them. 1: this process alone.
    learners: int = 1
    learner_timeout: float = 120.0  # seconds a learner waits for the others at a collective before the run stops
    # Where learners 1..N-1 run: "processes" on this machine, or "ray": actors of a Ray placement group (one
    # bundle per learner) on the cluster at --ray-address / $RAY_ADDRESS (train/ray_learners.py).
    learners_on: str = "processes"


@dataclass(frozen=True)
class VecConfig:
    """``[vec]``: the vector backend (:func:`pufferbox.vector.make`)."""

    backend: str = "serial"
    num_envs: int = 8
    num_workers: int = 0  # 0: the backend decides
    batch_size: int = 0  # envs per recv(); 0: all of them (no pool)
    main_envs: int = 0  # multiprocessing: envs the main process steps itself while the workers step
    native: bool = True  # use the plugin's batched implementation when it has one
    step_timeout: float = 60.0  # multiprocessing/ray: seconds a worker may take per step before WorkerTimeoutError
    check_obs: bool = False  # check every observation against its space's bounds and for NaN/inf (slow)
    device: str = "gpu"  # --backend cuda only: "gpu", or "host" (the same kernels simulated on the CPU)
    # The Ray cluster (HOST:PORT, set by --ray-address) that --backend ray's actors and train.learners_on=ray's
    # learners join; "": $RAY_ADDRESS, else a local Ray. Machine-specific: a resumed run takes the resuming
    # command's (--ray-address or $RAY_ADDRESS), never the one its config.toml recorded.
    ray_address: str = ""


@dataclass(frozen=True)
class PolicyConfig:
    """``[policy]``: the agent (:func:`~pufferbox.train.policies.build_agent`)."""

    hidden_size: int = 64
    lstm: bool = False
    lstm_size: int = 0  # 0: hidden_size
    encoder: str = "auto"  # "auto" (plugin policy, CNN for images, else MLP), "mlp", "cnn", or "module:Class"
    channels_last: bool = True  # convolution weights in channels-last memory format (no effect without convs)


@dataclass(frozen=True)
class LeagueConfig:
    """``[league]``: agent groups that do not learn and the opponent pool that fills them
    (:mod:`pufferbox.train.groups`)."""

    frozen: list = field(default_factory=list)  # group names that act but never learn
    pool: str = "latest"  # how a frozen group is refilled: "latest", "uniform", "prioritized", or "none"
    pool_source: str = ""  # whose snapshots fill the frozen groups ("": each group's own)
    snapshot_interval: int = 10  # updates between snapshots of the learning groups into RUN_DIR/pool/
    refresh_interval: int = 10  # updates between refills of the frozen groups from the pool
    # share of episodes in which one group (drawn per episode) plays uniformly random legal actions and is
    # not trained on them: self-play's seats then also meet the positions careless play makes
    random_opponent: float = 0.0
    # "module:function" (train/scripted_seats.py) that plays the careless group, instead of uniform
    # legal moves, in a share scripted_share of those episodes
    scripted_opponent: str = ""
    scripted_share: float = 0.5


SECTIONS: dict[str, type] = {"train": TrainConfig, "vec": VecConfig, "policy": PolicyConfig, "league": LeagueConfig}
# Every key's default, whose type is the key's type; ``env`` holds the binding's free-form kwargs.
DEFAULTS: dict[str, dict[str, Any]] = {name: asdict(cls()) for name, cls in SECTIONS.items()} | {"env": {}, "groups": {}}
Section = TypeVar("Section", TrainConfig, VecConfig, PolicyConfig, LeagueConfig)


def typed(cls: type[Section], values: Mapping[str, Any], source: str = "config") -> Section:
    """``values`` (a section's dict) as ``cls``, every key checked as :func:`merge` does; missing keys default.

    >>> typed(TrainConfig, {"gamma": 0.9}).gamma
    0.9
    """
    name = next(n for n, c in SECTIONS.items() if c is cls)
    return cls(**{key: check_value(name, key, value, source) for key, value in values.items()})


def updated(section: Section, values: Mapping[str, Any], source: str = "config") -> Section:
    """A copy of ``section`` with ``values`` applied (checked)."""
    return typed(type(section), {**asdict(section), **values}, source)


@dataclass(frozen=True)
class RunConfig:
    """A whole run's settings, typed; ``env`` and ``groups`` are the free-form tables (read, never mutated)."""

    train: TrainConfig = field(default_factory=TrainConfig)
    vec: VecConfig = field(default_factory=VecConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    league: LeagueConfig = field(default_factory=LeagueConfig)
    env: Mapping[str, Any] = field(default_factory=dict)
    groups: Mapping[str, Any] = field(default_factory=dict)
    # "section.key" -> the layer that set it (:class:`Layers`); a key not here is at its built-in default.
    # Not a setting: left out of to_dict() (config.toml's [run.sources] records it) and of equality.
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, config: Mapping[str, Any], source: str = "config") -> RunConfig:
        """A dict of sections (TOML's form: a config file, ``config.toml``, a checkpoint's), checked
        key by key; missing keys default.

        >>> RunConfig.from_dict({"vec": {"num_envs": 4}}).vec.num_envs
        4
        """
        layered = merge(DEFAULTS, dict(config), source)
        sections = {name: cls_(**layered[name]) for name, cls_ in SECTIONS.items()}
        return cls(**sections, env=layered["env"], groups=layered["groups"])

    @classmethod
    def from_toml(cls, text: str, source: str = "checkpoint config") -> RunConfig:
        """A checkpoint's config: the TOML text of :meth:`to_dict`, as :mod:`pufferbox.train.snapshot` stores it."""
        return cls.from_dict(tomllib.loads(text), source)

    @classmethod
    def of(cls, config: RunConfig | Mapping[str, Any]) -> RunConfig:
        """``config`` as a RunConfig: itself, or a dict of sections read by :meth:`from_dict`."""
        return config if isinstance(config, RunConfig) else cls.from_dict(config)

    def to_dict(self) -> dict[str, Any]:
        """The dict of sections that ``config.toml`` and checkpoints store (what :meth:`from_dict` reads)."""
        sections = {name: asdict(getattr(self, name)) for name in SECTIONS}
        return sections | {"env": copy.deepcopy(dict(self.env)), "groups": copy.deepcopy(dict(self.groups))}

    def updated(self, values: Mapping[str, Mapping[str, Any]], source: str = "config") -> RunConfig:
        """A copy with ``{section: {key: value}}`` applied, each value checked as :func:`merge` does."""
        changes: dict[str, Any] = {}
        for section, table in merge({}, dict(values), source).items():
            current = getattr(self, section)
            changes[section] = {**current, **table} if section in FREE_SECTIONS else updated(current, table, source)
        sources = {**self.sources, **{f"{s}.{k}": source for s, table in values.items() for k in table}}
        return replace(self, **changes, sources=sources)

    def provenance(self, unnamed: str) -> dict[str, str]:
        """``"section.key" -> source`` for every key not at its built-in default (config.toml's
        ``[run.sources]``): :attr:`sources`, and ``unnamed`` for a changed key no layer named (a
        RunConfig made by hand); a key a layer set to its built-in value keeps its layer.

        >>> RunConfig().with_setting("train.gamma", 0.9, "--set").provenance("?")
        {'train.gamma': '--set'}
        """
        built_in = flat_settings(DEFAULTS)
        changed = {key: unnamed for key, value in flat_settings(self.to_dict()).items() if built_in.get(key) != value}
        return changed | dict(self.sources)

    def setting(self, name: str, default: Any = None) -> Any:
        """The value of ``"section.key"`` (how flags, sweeps and tournaments name a setting); ``default``
        where the section has no such key.

        >>> RunConfig().setting("train.gamma")
        0.99
        """
        section, _, key = name.partition(".")
        table = getattr(self, section)
        return table.get(key, default) if isinstance(table, Mapping) else getattr(table, key, default)

    def with_setting(self, name: str, value: Any, source: str = "config") -> RunConfig:
        """A copy with ``"section.key"`` set to ``value`` (checked; the one-line error names ``source``)."""
        section, _, key = name.partition(".")
        return self.updated({section: {key: value}}, source)

    def with_flags(self, flags: Mapping[str, Any] | None) -> RunConfig:
        """``flags`` (``{"vec.num_envs": 8}``, what first-class CLI options set; None: not given) applied,
        each checked under the flag's name."""
        return Layers((Layer.of_run(self, "config"), *flag_layers(flags))).resolve()


# Where this machine reaches things: a resumed run takes the resuming command's value (flag or environment),
# never the one its config.toml recorded (that cluster may be gone, or another machine's).
MACHINE_KEYS = ("vec.ray_address",)


def without_machine_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` (a dict of sections, e.g. a run's config.toml) without :data:`MACHINE_KEYS`.

    >>> without_machine_keys({"vec": {"ray_address": "10.0.0.1:6379", "num_envs": 4}})
    {'vec': {'num_envs': 4}}
    """
    out = copy.deepcopy(dict(config))
    for name in MACHINE_KEYS:
        section, _, key = name.partition(".")
        if isinstance(out.get(section), dict):
            out[section].pop(key, None)
    return out


def flat_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """A dict of sections as ``{"section.key": value}``."""
    return {f"{section}.{key}": value for section, table in config.items() for key, value in dict(table).items()}


FREE_SECTIONS = ("env", "groups")  # groups: {name: [slot or agent id]}, checked by train.groups
AT_LEAST_ONE = {
    "train.total_steps",
    "train.num_steps",
    "train.num_minibatches",
    "train.update_epochs",
    "train.solve_window",
    "train.learners",
    "vec.num_envs",
    "policy.hidden_size",
}
CHOICES = {
    "train.lag_correction": ("vtrace", "none"),
    "train.autocast": ("none", "bf16", "auto"),
    "train.learners_on": ("processes", "ray"),
    "train.compile_mode": ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
    "train.optimizer": ("adam", "muon"),
}
# max_grad_norm=0 zeroes every gradient; learner_timeout=0 would fail every collective at once
POSITIVE = {"train.clip_obs", "train.clip_reward", "train.max_grad_norm", "train.learner_timeout"}
AT_MOST_ONE = {"train.gamma", "train.gae_lambda"}  # discounts: past 1 the returns grow without bound
# Adam moves each weight by about learning_rate per update: past 1 the first update throws the policy away
# (1e300 overflowed the optimizer's float32 step with a traceback, after the run dir was made).
AT_MOST = {
    "train.learning_rate": (1.0, "Adam's step per weight"),
    "train.seed": (2**32 - 1, "the envs' seeds derive from it"),
    # an update runs every epoch before a stop signal is looked at: 1e18 epochs never end (PPO uses 1-30)
    "train.update_epochs": (1000, "passes over one rollout in each update"),
}
FLOAT32_MAX = 3.4028234663852886e38  # float settings meet float32 tensors: a larger one overflows there
FLAG_AT_LEAST_ONE = {"vec.num_workers"}  # 0 in a config means "the backend decides"; as a flag it is a mistake


def merge(base: dict, update: dict, source: str) -> dict:
    """``base`` with ``update`` layered on top, checking keys and types against :data:`DEFAULTS`."""
    out = copy.deepcopy(base)
    for section, values in update.items():
        if section not in DEFAULTS:
            hint = difflib.get_close_matches(section, list(DEFAULTS), n=1)
            raise ConfigError(
                f"{section}: unknown section in {source}"
                + (f"; did you mean {hint[0]}?" if hint else f"; sections are {', '.join(DEFAULTS)}")
            )
        if not isinstance(values, dict):
            raise ConfigError(f"{section}: expected a table of settings in {source}, got {values!r}")
        for key, value in values.items():
            out.setdefault(section, {})[key] = check_value(section, key, value, source)
    return out


def check_value(section: str, key: str, value: Any, source: str) -> Any:
    if section in FREE_SECTIONS:
        return value
    known = DEFAULTS[section]
    if key not in known:
        hint = difflib.get_close_matches(key, list(known), n=1)
        raise ConfigError(
            f"{section}.{key}: unknown key"
            + (f"; did you mean {hint[0]}?" if hint else f" ({source}); keys are {', '.join(known)}")
        )
    expected = type(known[key])
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)  # and checked below: `train.learning_rate=-1` is no more valid than -1.0
    if type(value) is not expected:
        raise ConfigError(f"{section}.{key}: expected {expected.__name__}, got {type(value).__name__} {value!r} ({source})")
    if expected is float and not math.isfinite(value):
        raise ConfigError(f"{section}.{key}: must be a finite number, got {value!r} ({source})")
    if f"{section}.{key}" in POSITIVE and value <= 0:
        raise ConfigError(f"{section}.{key}: must be > 0, got {value!r} ({source})")
    if f"{section}.{key}" in AT_LEAST_ONE and value < 1:  # before the >= 0 rule: 0 is no fix for -4
        raise ConfigError(f"{section}.{key}: must be >= 1, got {value!r} ({source})")
    if expected in (int, float) and value < 0:
        raise ConfigError(f"{section}.{key}: must be >= 0, got {value!r} ({source})")
    limit, why = AT_MOST.get(f"{section}.{key}", (None, ""))
    if limit is not None and value > limit:
        shown = format(limit, "g" if isinstance(limit, float) else "d")
        raise ConfigError(f"{section}.{key}: must be at most {shown} ({why}), got {value!r} ({source})")
    if expected is float and abs(value) > FLOAT32_MAX:
        raise ConfigError(f"{section}.{key}: must be at most {FLOAT32_MAX:.4g} (float32), got {value!r} ({source})")
    if f"{section}.{key}" in AT_MOST_ONE and value > 1:
        raise ConfigError(f"{section}.{key}: must be between 0 and 1 (a discount), got {value!r} ({source})")
    choices = CHOICES.get(f"{section}.{key}")
    if choices and value not in choices:
        raise ConfigError(f"{section}.{key}: must be one of {', '.join(choices)}, got {value!r} ({source})")
    return value


def parse_override(text: str) -> dict:
    """``"train.learning_rate=3e-4"`` → ``{"train": {"learning_rate": 0.0003}}`` (values parsed as TOML)."""
    name, sep, raw = text.partition("=")
    section, dot, key = name.strip().partition(".")
    if not sep or not dot or not key:
        raise ConfigError(f"{text}: expected SECTION.KEY=VALUE, e.g. train.learning_rate=3e-4")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()  # bare words are strings: vec.backend=serial
    return {section: {key: value}}


def load_toml(path: str | Path) -> dict:
    path = Path(path)
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def dump_toml(config: dict, path: str | Path) -> None:
    Path(path).write_text(tomli_w.dumps(config))


BUILT_IN = "built-in"  # the source of a key no layer set (never recorded in RunConfig.sources)
PLUGIN_DEFAULTS = "plugin defaults"
GPU_PROFILE = "GPU profile"
PLAN = "plan"
RESUMED = "config.toml of the resumed run"  # a resumed run's recorded values (their first source in parentheses)


@dataclass(frozen=True)
class Layer:
    """One layer of a run's settings: ``values`` (a dict of sections, checked when the layer is made)
    from ``source``, which the one-line errors and :attr:`RunConfig.sources` name; ``by_user``: the
    user gave it (a config file, ``--set``, a flag), so the plan leaves the keys it sets to the user.
    ``origins``: the source of each key where it differs from ``source`` (a key absent there is a
    built-in); None: every key is ``source``'s."""

    source: str
    values: Mapping[str, Any]
    by_user: bool = False
    origins: Mapping[str, str] | None = None

    @classmethod
    def checked(cls, source: str, values: Mapping[str, Any], by_user: bool = False) -> Layer:
        """A layer whose ``values`` are checked against :data:`DEFAULTS` now (errors name ``source``)."""
        return cls(source, merge({}, dict(values), source), by_user)

    @classmethod
    def of_run(cls, run: RunConfig, source: str) -> Layer:
        """A whole RunConfig as one layer that keeps its provenance (:attr:`RunConfig.sources`)."""
        return cls(source, run.to_dict(), origins=dict(run.sources))

    def settings(self) -> list[str]:
        """``"section.key"`` of every value the layer sets."""
        return [f"{section}.{key}" for section, table in self.values.items() for key in table]

    def origin(self, key: str) -> str | None:
        """Where this layer's value of ``key`` came from; None: a built-in."""
        return self.source if self.origins is None else self.origins.get(key)


def flag_layers(flags: Mapping[str, Any] | None) -> list[Layer]:
    """One user layer per given flag (``{"vec.num_envs": 8}``; None: not given), named as the flag (``--num-envs``)."""
    layers = []
    for name, value in (flags or {}).items():
        if value is None:
            continue
        section, _, key = name.partition(".")
        flag = f"--{key.replace('_', '-')}"
        if name in FLAG_AT_LEAST_ONE and isinstance(value, int) and value < 1:
            raise ConfigError(f"{flag} {value}: must be >= 1; fix: leave {flag} out to let the backend choose")
        layers.append(Layer.checked(flag, {section: {key: value}}, by_user=True))
    return layers


@dataclass(frozen=True)
class Layers:
    """A run's settings as a stack of :class:`Layer` s, lowest first: built-ins (implicit) < plugin
    defaults < the GPU profile (when the plan picks it) < the plan < the config file < each ``--set`` <
    each flag. Every source is read once, when the stack is built (:meth:`build`); :meth:`resolve`
    layers it into one :class:`RunConfig` whose ``sources`` name the layer behind each value.

    >>> layers = Layers.build({"vec": {"num_envs": 4}}, overrides=["train.gamma=0.9"])
    >>> run = layers.resolve()
    >>> run.vec.num_envs, run.sources["vec.num_envs"], run.sources["train.gamma"]
    (4, 'plugin defaults', '--set train.gamma=0.9')
    """

    layers: tuple[Layer, ...] = ()

    @classmethod
    def build(
        cls,
        plugin_defaults: Mapping[str, Any] | RunConfig | Layer | None = None,
        config_file: str | Path | None = None,
        overrides: list[str] | None = None,
        flags: Mapping[str, Any] | None = None,
    ) -> Layers:
        """The stack of ``plugin_defaults`` (a dict of sections, a RunConfig that keeps its sources, or a
        Layer of its own: a resumed run's config.toml), ``config_file`` (loaded here, once), ``overrides``
        (``--set`` texts) and ``flags``; each checked."""
        if isinstance(plugin_defaults, Layer):
            stack = [plugin_defaults]
        elif isinstance(plugin_defaults, RunConfig):
            stack = [Layer.of_run(plugin_defaults, PLUGIN_DEFAULTS)]
        else:
            stack = [Layer.checked(PLUGIN_DEFAULTS, plugin_defaults or {})]
        if config_file is not None:
            stack.append(Layer.checked(str(config_file), load_toml(config_file), by_user=True))
        stack += [Layer.checked(f"--set {text}", parse_override(text), by_user=True) for text in overrides or []]
        return cls(tuple(stack + flag_layers(flags)))

    def user_keys(self) -> set[str]:
        """``"section.key"`` of every setting the user gave: in the config file, ``--set`` or a flag."""
        return {key for layer in self.layers if layer.by_user for key in layer.settings()}

    def below_user(self, *layers: Layer) -> Layers:
        """``layers`` inserted (in order) above the others and beneath the user's (the GPU profile, the plan)."""
        at = next((i for i, layer in enumerate(self.layers) if layer.by_user), len(self.layers))
        return Layers(self.layers[:at] + layers + self.layers[at:])

    def above(self, *layers: Layer) -> Layers:
        """``layers`` on top of the stack."""
        return Layers(self.layers + layers)

    def resolve(self) -> RunConfig:
        """The stack layered over the built-ins, as one RunConfig with its ``sources``."""
        config, sources = copy.deepcopy(DEFAULTS), dict[str, str]()
        for layer in self.layers:
            config = merge(config, dict(layer.values), layer.source)
            for key in layer.settings():
                origin = layer.origin(key)
                if origin is None:
                    sources.pop(key, None)
                else:
                    sources[key] = origin
        return replace(RunConfig.from_dict(config), sources=sources)


def resolve_run_config(
    plugin_defaults: Mapping[str, Any] | RunConfig | None = None,
    config_file: str | Path | None = None,
    overrides: list[str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> RunConfig:
    """The run's settings: built-ins < ``plugin_defaults`` < ``config_file`` < ``overrides`` < ``flags``
    (:meth:`Layers.build`, resolved).

    ``plugin_defaults`` is a dict of sections (a plugin's ``TrainDefaults.config``) or a RunConfig;
    ``overrides`` are ``--set SECTION.KEY=VALUE`` texts; ``flags`` see :func:`flag_layers`.
    """
    return Layers.build(plugin_defaults, config_file, overrides, flags).resolve()


def resolve_config(
    plugin_defaults: Mapping[str, Any] | RunConfig | None = None,
    config_file: str | Path | None = None,
    overrides: list[str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> dict:
    """:func:`resolve_run_config` as a dict of sections (TOML's form, for plugins and scripts that edit one)."""
    return resolve_run_config(plugin_defaults, config_file, overrides, flags).to_dict()
