"""The environment registry: plugins from entry points, their :class:`EnvSpec` records.

Plugins are found through the ``pufferbox`` entry-point group and imported on first use
of the registry (never at ``import pufferbox``). A plugin that fails to import or to
register is recorded with its error and skipped; the others still work. Setting
``PUFFERBOX_PLUGINS`` to a comma-separated list of entry-point names loads only those
(empty: none).

Two plugins offering one name never cost either plugin anything else: the name goes to the
distribution named first in ``PUFFERBOX_PREFER`` (comma-separated distribution or entry-point
names), else to a first-party plugin (:data:`FIRST_PARTY`), else to the plugin loaded first; the
other offer is refused and both plugins say so (``pufferbox plugins``, ``pufferbox envs``).

Example:
    >>> from pufferbox.registry import get_registry
    >>> spec = get_registry().get("cartpole")   # doctest: +SKIP
    >>> env = spec.make_emulated()              # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import importlib.util
import os
import re
import threading
import traceback
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from pufferbox import hookspecs
from pufferbox.errors import PufferboxError

ENTRY_POINT_GROUP = "pufferbox"
PLUGINS_ENV_VAR = "PUFFERBOX_PLUGINS"
IMPLEMENTATIONS = ("cpu", "cuda")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*(/[A-Za-z0-9][A-Za-z0-9_.+-]*)*$")
PREFER_ENV_VAR = "PUFFERBOX_PREFER"
ALIAS_BELOW_ENV = "an alias never takes an env's name"
IMPORT_TIMEOUT_VAR = "PUFFERBOX_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 60.0  # seconds; generous: some plugins import torch or a simulator

# The distributions of this repository's plugins/ folder: they keep their names against third parties.
# tests/test_plugin_clash.py checks this against plugins/*/pyproject.toml.
FIRST_PARTY = frozenset(
    {
        "pufferbox-atari",
        "pufferbox-classic",
        "pufferbox-crafter",
        "pufferbox-minigrid",
        "pufferbox-minihack",
        "pufferbox-mujoco",
        "pufferbox-nethack",
        "pufferbox-ocean",
        "pufferbox-pettingzoo",
        "pufferbox-procgen",
        "pufferbox-pzclassic",
        "pufferbox-warp",
    }
)

__all__ = [
    "EnvBuild",
    "FIRST_PARTY",
    "EnvMeta",
    "EnvSpec",
    "TrainDefaults",
    "PluginInfo",
    "Registry",
    "EnvBuildError",
    "RegistryError",
    "UnknownEnvError",
    "get_registry",
]


def returning(value: Any) -> Callable[[], Any]:
    """A loader for a plugin object that is already imported (``Registry(extra_plugins=...)``)."""
    return lambda: value


class RegistryError(PufferboxError, RuntimeError):
    """A registration breaks a registry rule (duplicate name, bad field)."""


class EnvBuildError(RegistryError):
    """An env's constructor raised (a missing ROM, a licence, a bad keyword): one line naming the env, its
    plugin and the exception's message; the exception itself is the cause (``raise ... from``)."""

    @classmethod
    def of(cls, spec: EnvSpec, exc: BaseException) -> EnvBuildError:
        lines = str(exc).strip().splitlines()
        message = f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__
        meta = spec.meta
        plugin = f" of plugin {meta.distribution or meta.plugin}" if meta.distribution or meta.plugin else ""
        return cls(
            f"env {spec.name!r}{plugin} could not be built: {message}; fix what it names (its [env] settings, "
            f"a file or package it needs), then `pufferbox check {spec.name}`"
        )


class UnknownEnvError(PufferboxError, KeyError):
    """No registered env has this name; the message lists close matches."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class EnvBuild:
    """How to build the env, in any process.

    Attributes:
        binding: creator returning a Gymnasium ``Env`` or a PettingZoo ``ParallelEnv``;
            must be importable by reference (a module-level function) so workers can build it.
        kwargs: default keyword arguments for ``binding``.
        implementation: ``"cpu"`` or ``"cuda"`` (a PyCUDA kernel; ``binding`` is then its CPU reference).
        native: optional ``native(num_envs, **kwargs)`` returning a batched env that simulates
            many envs in one object (see :mod:`pufferbox.vector.native`).
        cuda: the kernel description for ``implementation="cuda"`` (see :mod:`pufferbox.cuda`).
        observation_space / action_space: declare them to let ``info`` skip building an env.
        episode_metrics: names of values in an episode's final ``info`` reported with each
            finished episode (``Episodes.metrics``), e.g. ``("tagged",)``.
        action_mask: the key of the Dict observation that holds the legal actions, for envs that do not
            call it ``action_mask`` (an observation without it is refused), or ``"info:NAME"`` for a
            Gymnasium env that reports them in ``info[NAME]`` (Taxi: ``"info:action_mask"``; see
            :class:`pufferbox.emulation.InfoActionMask`); None: ``action_mask`` where an observation has
            that key (see :class:`pufferbox.spaces.ActionMask`).
    """

    binding: Callable[..., Any]
    kwargs: dict = field(default_factory=dict)
    implementation: str = "cpu"
    native: Callable[..., Any] | None = None
    cuda: Any = None
    observation_space: Any = None
    action_space: Any = None
    episode_metrics: tuple[str, ...] = ()
    action_mask: str | None = None


@dataclass(frozen=True)
class TrainDefaults:
    """How pufferbox trains and judges the env by default.

    Attributes:
        config: default hyperparameters, as config sections (``{"train": {...}, "vec": {...}}``).
        policy: optional default policy, a class or ``"module:Class"``.
        solved_return: mean episode return that counts as solved (sanity envs, benchmarks).
        groups: agent groups trained as separate policies (multi-agent): ``{name: [slot or agent id]}``
            or a module-level ``groups(raw_env) -> {name: [...]}``; None: one shared policy
            (see :mod:`pufferbox.train.groups`).
        outcome: who won a multi-agent episode: a module-level ``outcome(group_returns, env_kwargs)``
            returning the winning group's name or None for a draw (``group_returns``: each group's
            mean episode return); None: the group with the highest mean return wins (see
            :func:`pufferbox.group_layout.winner`).
        gpu_config: the GPU profile: config sections layered over ``config`` when the run trains on a
            CUDA device (or with ``pufferbox train --profile gpu``): a batch of GPU size that still
            learns, in place of the scaling plan's (see :mod:`pufferbox.train.plan`); empty: no profile.
    """

    config: dict = field(default_factory=dict)
    policy: Any = None
    solved_return: float | None = None
    groups: Any = None
    outcome: Any = None
    gpu_config: dict = field(default_factory=dict)


@dataclass(frozen=True)
class EnvMeta:
    """What the env is and where it comes from.

    Attributes:
        description: one line for ``pufferbox envs``.
        requires: ``{import name: pip requirement}`` that must be importable for the env to work.
        plugin / distribution / version: filled in by the registry from the registering entry point.
    """

    description: str = ""
    requires: dict = field(default_factory=dict)
    plugin: str = ""
    distribution: str = ""
    version: str = ""


# The flat keywords of EnvSpec before it was split, and the part each one moved to.
FLAT_FIELDS = {
    **{name: ("build", name) for name in EnvBuild.__dataclass_fields__},
    **{name: ("training", name) for name in TrainDefaults.__dataclass_fields__ if name not in ("config", "gpu_config")},
    "defaults": ("training", "config"),
    **{name: ("meta", name) for name in EnvMeta.__dataclass_fields__},
}


@dataclass(init=False)
class EnvSpec:
    """Everything pufferbox knows about one environment: its ``name`` (what users type, ``pufferbox
    train NAME``), how to ``build`` it (:class:`EnvBuild`), how to train it (:class:`TrainDefaults`),
    what it is (:class:`EnvMeta`) and other names that resolve to it (``aliases``).

    Example:
        >>> spec = EnvSpec("coinflip", EnvBuild(dict), TrainDefaults(solved_return=9.0))
        >>> spec.build.binding is dict, spec.training.solved_return, spec.meta.description
        (True, 9.0, '')

    The flat keywords of earlier versions (``EnvSpec(name, binding=..., solved_return=...)``) still
    work and warn (``DeprecationWarning``); ``defaults=`` is ``TrainDefaults(config=...)``.
    """

    name: str
    build: EnvBuild
    training: TrainDefaults
    meta: EnvMeta
    aliases: tuple

    def __init__(
        self,
        name: str,
        build: EnvBuild | None = None,
        training: TrainDefaults | None = None,
        meta: EnvMeta | None = None,
        aliases: tuple = (),
        **flat: Any,
    ):
        if flat:
            unknown = sorted(set(flat) - set(FLAT_FIELDS))
            if unknown:
                raise TypeError(f"EnvSpec got unknown keyword {unknown[0]!r}; its parts are build, training, meta")
            warnings.warn(
                f"env {name!r}: EnvSpec({', '.join(sorted(flat))}=...) is deprecated; pass "
                f"build=EnvBuild(...), training=TrainDefaults(...), meta=EnvMeta(...)",
                DeprecationWarning,
                stacklevel=2,
            )
            parts: dict[str, dict[str, Any]] = {"build": {}, "training": {}, "meta": {}}
            for key, value in flat.items():
                part, field_name = FLAT_FIELDS[key]
                parts[part][field_name] = value
            if parts["build"]:
                if build is not None:
                    raise TypeError(f"env {name!r}: give build=EnvBuild(...) or its flat keywords, not both")
                build = EnvBuild(**parts["build"])
            if parts["training"]:
                training = dataclasses.replace(training or TrainDefaults(), **parts["training"])
            if parts["meta"]:
                meta = dataclasses.replace(meta or EnvMeta(), **parts["meta"])
        if build is None:
            raise TypeError(f"env {name!r}: EnvSpec needs build=EnvBuild(binding=...)")
        self.name, self.build, self.aliases = name, build, tuple(aliases)
        self.training, self.meta = training or TrainDefaults(), meta or EnvMeta()
        self.validate()

    def validate(self) -> None:
        for name in (self.name, *self.aliases):
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise RegistryError(
                    f"env name {name!r}: use letters, digits and _ . + - in /-separated parts "
                    f"(no empty, absolute or ../ names: they become paths under runs/)"
                )
        for part, cls in (("build", EnvBuild), ("training", TrainDefaults), ("meta", EnvMeta)):
            if not isinstance(getattr(self, part), cls):
                raise RegistryError(f"env {self.name!r}: {part} must be a {cls.__name__}, got {getattr(self, part)!r}")
        build = self.build
        if build.implementation not in IMPLEMENTATIONS:
            raise RegistryError(
                f"env {self.name!r}: implementation must be one of {IMPLEMENTATIONS}, got {build.implementation!r}"
            )
        if build.action_mask is not None and not (isinstance(build.action_mask, str) and build.action_mask):
            raise RegistryError(f"env {self.name!r}: action_mask must be an observation key, got {build.action_mask!r}")
        if not callable(build.binding):
            raise RegistryError(f"env {self.name!r}: binding must be callable, got {build.binding!r}")
        qualname = getattr(build.binding, "__qualname__", "")
        if isinstance(build.binding, types.FunctionType) and ("<lambda>" in qualname or "<locals>" in qualname):
            raise RegistryError(
                f"env {self.name!r}: binding {qualname} is not importable by reference (workers "
                f"rebuild the env from it); define it with `def` at module level"
            )

    @property
    def unavailable_reason(self) -> str | None:
        """Why this env cannot be built here (a missing requirement and its install command), or None."""
        missing = [req for mod, req in self.meta.requires.items() if importlib.util.find_spec(mod) is None]
        if missing:
            return (
                f"missing {', '.join(missing)}: run `pip install -c tank/constraints.txt "
                f"{' '.join(repr(m) for m in missing)}` (or `make setup`)"
            )
        return None

    def ensure_available(self) -> None:
        reason = self.unavailable_reason
        if reason:
            raise RegistryError(f"env {self.name!r} is unavailable: {reason}")

    def make_raw(self, **kwargs: Any) -> Any:
        """The raw Gymnasium/PettingZoo env, built by the plugin's binding."""
        self.ensure_available()
        try:
            return self.build.binding(**{**self.build.kwargs, **kwargs})
        except (RegistryError, UnknownEnvError):
            raise
        except Exception as exc:
            raise EnvBuildError.of(self, exc) from exc

    def make_emulated(self, check_obs: bool = False, **kwargs: Any) -> Any:
        """The raw env wrapped in its flattening emulator (``check_obs``: see :func:`pufferbox.emulation.emulate`)."""
        from pufferbox.emulation import emulate

        raw = self.make_raw(**kwargs)
        build = self.build
        return emulate(
            raw, name=self.name, episode_metrics=build.episode_metrics, check_obs=check_obs, action_mask=build.action_mask
        )

    def flattening(self, **kwargs: Any) -> tuple[Any, Any, int]:
        """``(ObservationSpec, ActionSpec, agents_per_env)``, cached per kwargs."""
        key = kwargs_key(kwargs)
        cache = self.__dict__.setdefault("_flattening", {})
        if key not in cache:
            env = self.make_emulated(**kwargs)
            cache[key] = (env.obs_spec, env.act_spec, env.num_agents)
            self.__dict__.setdefault("_agent_specs", {})[key] = getattr(env, "agent_specs", None)
            env.close()
        return cache[key]

    def agent_specs(self, **kwargs: Any) -> list | None:
        """Each agent slot's own ``(ObservationSpec, ActionSpec)`` of the emulated env (None for one agent),
        cached with :meth:`flattening`."""
        self.flattening(**kwargs)
        return self.__dict__["_agent_specs"][kwargs_key(kwargs)]

    def load_policy(self) -> Any:
        """The plugin's default policy class, or None."""
        policy = self.training.policy
        return resolve(policy) if policy is not None else None


def kwargs_key(kwargs: dict[str, Any]) -> tuple:
    """Env keyword arguments as a hashable cache key (values by ``repr``: lists and dicts are allowed)."""
    return tuple(sorted((k, repr(v)) for k, v in kwargs.items()))


def resolve(target: Any) -> Any:
    """``"module:attr"`` → the object; anything else is returned as is."""
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        obj = importlib.import_module(module)
        for part in attr.split(".") if attr else []:
            obj = getattr(obj, part)
        return obj
    return target


@dataclass
class PluginInfo:
    """One entry point of the ``pufferbox`` group and what became of it."""

    name: str
    distribution: str
    version: str
    module: str
    envs: list[str] = field(default_factory=list)
    error: str | None = None
    traceback: str | None = None
    notes: list[str] = field(default_factory=list)  # refused names and commands (the plugin still works)
    offered: list[EnvSpec] = field(default_factory=list)  # what register_envs gave, before names are settled
    refused: list[str] = field(default_factory=list)  # its env names another plugin holds

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def first_party(self) -> bool:
        return canonical(self.distribution) in FIRST_PARTY


@dataclass(frozen=True)
class Clash:
    """A name two plugins offered: who holds it, whose offer was refused, and why."""

    name: str
    kind: str  # what the refused offer was: "env" or "alias" (of ``offer``)
    holder: PluginInfo
    refused: PluginInfo
    why: str
    offer: EnvSpec  # the refused plugin's env (``--plugin`` can still pick it)

    def line(self) -> str:
        """The refused plugin's note, with how to pick it instead (where picking can help)."""
        pick = (
            f"; pick it with {PREFER_ENV_VAR}={self.refused.distribution} or --plugin {self.refused.distribution}"
            if self.holder is not self.refused and self.why != ALIAS_BELOW_ENV
            else ""
        )
        what = f"env {self.name!r}" if self.kind == "env" else f"alias {self.name!r} of {self.offer.name!r}"
        return f"{what} refused: {self.holder.distribution} holds the name ({self.why}){pick}"


def canonical(name: str) -> str:
    """A distribution name as pip compares them (``Foo_Bar`` = ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def preferences_from_env() -> list[str]:
    return [canonical(p) for p in os.environ.get(PREFER_ENV_VAR, "").split(",") if p.strip()]


def prefer(plugin: str) -> None:
    """Make ``plugin`` (a distribution or entry-point name) win every name clash in this process and the
    processes it starts (``--plugin``), and forget the loaded registry."""
    wanted = [canonical(plugin), *(p for p in preferences_from_env() if p != canonical(plugin))]
    os.environ[PREFER_ENV_VAR] = ",".join(wanted)
    get_registry.cache_clear()


class Registry:
    """Plugins and their envs, loaded on first access."""

    def __init__(
        self,
        group: str = ENTRY_POINT_GROUP,
        only: list[str] | None = None,
        extra_plugins: list[tuple[str, Any]] | None = None,
        prefer: list[str] | None = None,
    ):
        self.group = group
        if only is None and PLUGINS_ENV_VAR in os.environ:
            only = [p.strip() for p in os.environ[PLUGINS_ENV_VAR].split(",") if p.strip()]
        self.only = only
        self.prefer = [canonical(p) for p in prefer] if prefer is not None else preferences_from_env()
        self.extra_plugins = list(extra_plugins or [])
        self.manager = pluggy.PluginManager("pufferbox")
        self.manager.add_hookspecs(hookspecs)
        self.plugins: list[PluginInfo] = []
        self.envs: dict[str, EnvSpec] = {}
        self.aliases: dict[str, str] = {}
        self.clashes: list[Clash] = []
        self.loaded = False

    # -- loading ----------------------------------------------------------------------
    def load(self) -> Registry:
        """Import every plugin and call its ``register_envs`` hook, one plugin at a time, then settle names.

        A plugin that fails (import error, ``SystemExit``, an import that does not finish within
        ``PUFFERBOX_PLUGIN_IMPORT_TIMEOUT`` seconds, a name registered twice by itself, an error in its
        hook) is marked broken and registers nothing; the plugins before and after it are unaffected.
        Names offered by two plugins are settled by :meth:`settle_names`.
        """
        if self.loaded:
            return self
        self.loaded = True
        timeout = float(os.environ.get(IMPORT_TIMEOUT_VAR) or DEFAULT_IMPORT_TIMEOUT)
        for info, loader in self.candidates():
            self.plugins.append(info)
            try:
                self.manager.register(bounded_import(loader, info, timeout), name=info.name)
            except (Exception, SystemExit) as exc:  # a broken plugin is reported, never fatal
                self.mark_broken(info, exc)
                continue
            try:
                self.hook_of(info, "register_envs")(register=functools.partial(self.register, plugin=info))
            except (Exception, SystemExit) as exc:
                self.mark_broken(info, exc)
        self.settle_names()
        return self

    def candidates(self) -> list[tuple[PluginInfo, Callable[[], Any]]]:
        found: list[tuple[PluginInfo, Callable[[], Any]]] = []
        for ep in sorted(metadata.entry_points(group=self.group), key=lambda e: e.name):
            if self.only is not None and ep.name not in self.only:
                continue
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            found.append((PluginInfo(ep.name, dist, version, ep.value), ep.load))
        for name, obj in self.extra_plugins:
            found.append((PluginInfo(name, "(in-process)", "", getattr(obj, "__name__", repr(obj))), returning(obj)))
        return found

    def hook_of(self, info: PluginInfo, hook: str) -> Any:
        """Pluggy's caller of ``hook`` restricted to the plugin ``info`` (so errors are its own)."""
        others = [p for p in self.manager.get_plugins() if self.manager.get_name(p) != info.name]
        return self.manager.subset_hook_caller(hook, remove_plugins=others)

    def mark_broken(self, info: PluginInfo, exc: BaseException) -> None:
        if isinstance(exc, PluginImportError):  # the import's own error and traceback, from its thread
            info.error = str(exc)
        else:
            info.error = f"{type(exc).__name__}: {exc}"
            info.traceback = traceback.format_exc()
        info.offered.clear()  # a plugin that failed half-way registers nothing
        if self.manager.has_plugin(info.name):
            self.manager.unregister(name=info.name)

    def register(self, spec: EnvSpec, plugin: PluginInfo) -> None:
        """Offer ``spec`` on behalf of ``plugin``; the names are settled once every plugin is loaded.
        A plugin offering one name twice is itself broken (:class:`RegistryError`)."""
        spec.meta = dataclasses.replace(
            spec.meta, plugin=plugin.name, distribution=plugin.distribution, version=plugin.version
        )
        if any(spec.name == earlier.name for earlier in plugin.offered):
            raise RegistryError(f"env name {spec.name!r} is registered twice by {plugin.distribution}")
        plugin.offered.append(spec)

    def rank(self, info: PluginInfo) -> tuple[int, int]:
        """Lower wins a name: named in ``PUFFERBOX_PREFER`` (in its order), then first-party, then the rest."""
        names = (canonical(info.distribution), canonical(info.name))
        preferred = [i for i, p in enumerate(self.prefer) if p in names]
        return (preferred[0] if preferred else len(self.prefer), 0 if info.first_party else 1)

    def why(self, holder: PluginInfo, refused: PluginInfo) -> str:
        if self.rank(holder)[0] < self.rank(refused)[0]:
            return f"{holder.distribution} is preferred by {PREFER_ENV_VAR}"
        if self.rank(holder) < self.rank(refused):
            return "first-party plugins keep their names"
        return f"plugin {holder.name!r} loads first (entry points load in name order)"

    def settle_names(self) -> None:
        """Give each env name, then each alias, to the best-ranked plugin offering it (ties: load order).

        A refused offer costs only that name; an alias never takes an env's name.
        """
        order = sorted((p for p in self.plugins if p.ok), key=self.rank)  # stable: load order breaks ties
        owner: dict[str, PluginInfo] = {}
        for info in order:
            for spec in info.offered:
                holder = owner.get(spec.name)
                if holder is not None:
                    self.refuse(spec, spec.name, "env", holder, info, self.why(holder, info))
                    info.refused.append(spec.name)
                    continue
                owner[spec.name] = info
                self.envs[spec.name] = spec
                info.envs.append(spec.name)
        for info in order:
            for spec in info.offered:
                if self.envs.get(spec.name) is spec:
                    spec.aliases = tuple(self.settle_aliases(spec, info, owner))
        for info in self.plugins:
            info.offered.clear()

    def settle_aliases(self, spec: EnvSpec, info: PluginInfo, owner: dict[str, PluginInfo]) -> list[str]:
        kept = []
        for alias in spec.aliases:
            kind = "alias"
            if alias in self.envs or alias in kept:
                self.refuse(spec, alias, kind, owner.get(alias, info), info, ALIAS_BELOW_ENV)
            elif alias in self.aliases:
                holder = owner[self.aliases[alias]]
                self.refuse(spec, alias, kind, holder, info, self.why(holder, info))
            else:
                kept.append(alias)
                self.aliases[alias] = spec.name
        return kept

    def refuse(self, offer: EnvSpec, name: str, kind: str, holder: PluginInfo, refused: PluginInfo, why: str) -> None:
        clash = Clash(name, kind, holder, refused, why, offer)
        self.clashes.append(clash)
        refused.notes.append(clash.line())
        if holder is not refused:
            holder.notes.append(f"{name!r} kept: {refused.distribution} offered it too (as {kind}; refused)")

    def note(self, plugin_name: str, text: str) -> None:
        for info in self.plugins:
            if info.name == plugin_name:
                info.notes.append(text)

    # -- queries ----------------------------------------------------------------------
    def get(self, name: str, plugin: str | None = None) -> EnvSpec:
        """The env called ``name`` (or an alias of it); with ``plugin`` (distribution or entry-point name),
        that plugin's offer of the name, also one refused because another plugin holds the name."""
        self.load()
        if plugin is not None:
            return self.from_plugin(name, plugin)
        spec = self.envs.get(name) or self.envs.get(self.aliases.get(name, ""))
        if spec is not None:
            return spec
        names = sorted([*self.envs, *self.aliases])
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; run `pufferbox envs` to list them"
        broken = [p for p in self.plugins if not p.ok]
        if broken:
            errors = {p.error for p in broken}  # one cause for all (a missing gymnasium): name it
            cause = f": {errors.pop()}" if len(errors) == 1 else ""
            hint += f" (broken plugins: {', '.join(p.name for p in broken)}{cause}; see `pufferbox plugins`)"
        raise UnknownEnvError(f"unknown env {name!r}{hint}")

    def from_plugin(self, name: str, plugin: str) -> EnvSpec:
        def mine(distribution: str, entry_point: str) -> bool:
            return canonical(plugin) in (canonical(distribution), canonical(entry_point))

        if not any(mine(p.distribution, p.name) for p in self.plugins):
            raise RegistryError(f"plugin {plugin!r} is not installed (or not loaded); `pufferbox plugins` lists them")
        spec = self.envs.get(name) or self.envs.get(self.aliases.get(name, ""))
        if spec is not None and mine(spec.meta.distribution, spec.meta.plugin):
            return spec
        for clash in self.clashes:
            if clash.name == name and mine(clash.refused.distribution, clash.refused.name):
                return clash.offer
        held = f" (it is {spec.meta.distribution}'s)" if spec is not None else ""
        raise RegistryError(f"plugin {plugin!r} offers no env {name!r}{held}; `pufferbox plugins --all` lists its envs")

    def get_trained(self, name: str, distribution: str | None) -> EnvSpec:
        """The env a run or checkpoint trained: ``name`` from ``distribution`` (what it recorded) when that
        plugin offers it, even if another plugin holds the name now; without a record, ``get(name)``."""
        spec = self.get(name)
        if not distribution or canonical(distribution) == canonical(spec.meta.distribution):
            return spec
        try:
            return self.get(name, plugin=distribution)
        except RegistryError:
            raise RegistryError(
                f"env {name!r} was trained from {distribution}, which no longer offers it here ({spec.meta.distribution}'s "
                f"{name!r} is another env); install {distribution} again"
            ) from None

    def clashes_of(self, name: str) -> list[Clash]:
        """The refused offers of the env name ``name`` (for ``pufferbox envs``)."""
        self.load()
        return [c for c in self.clashes if c.name == name and c.refused is not c.holder]

    def all_envs(self) -> list[EnvSpec]:
        self.load()
        return sorted(self.envs.values(), key=lambda s: s.name)

    def broken(self) -> list[PluginInfo]:
        self.load()
        return [p for p in self.plugins if not p.ok]

    def add_commands(self, cli: Any) -> None:
        """Let plugins add CLI commands through the ``register_commands`` hook.

        A plugin cannot replace a command that exists already (built-in or another plugin's): the
        original is put back and the attempt noted. Errors are reported by ``pufferbox plugins``.
        """
        self.load()
        for info in self.plugins:
            if not info.ok:
                continue
            before = dict(cli.commands)
            try:
                self.hook_of(info, "register_commands")(cli=cli)
            except (Exception, SystemExit) as exc:
                info.error = f"register_commands failed: {type(exc).__name__}: {exc}"
            for name, command in before.items():
                if cli.commands.get(name) is not command:
                    cli.commands[name] = command
                    info.notes.append(f"command {name!r} refused: it exists already")


def bounded_import(loader: Callable[[], Any], info: PluginInfo, timeout: float) -> Any:
    """``loader()`` in a daemon thread: a plugin whose import hangs is reported, not waited for forever."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["plugin"] = loader()
        except BaseException as exc:
            box["error"] = exc
            box["traceback"] = traceback.format_exc()

    thread = threading.Thread(target=target, name=f"pufferbox-plugin-{info.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(
            f"importing {info.module} did not finish within {timeout:g} s (it hangs?); "
            f"uninstall it, skip it with {PLUGINS_ENV_VAR}=..., or raise {IMPORT_TIMEOUT_VAR}"
        )
    if "error" in box:
        exc = box["error"]
        info.traceback = box["traceback"]
        raise PluginImportError(f"{type(exc).__name__}: {exc}")
    return box["plugin"]


class PluginImportError(PufferboxError, RuntimeError):
    """A plugin's import raised (any exception, ``SystemExit`` included)."""


@functools.lru_cache(maxsize=1)
def get_registry() -> Registry:
    """The process-wide registry of installed plugins (loaded on first query)."""
    return Registry()
