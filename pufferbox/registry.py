"""The environment registry: plugins from entry points, their :class:`EnvSpec` records.

Plugins are found through the ``pufferbox`` entry-point group and imported on first use
of the registry (never at ``import pufferbox``). A plugin that fails to import or to
register is recorded with its error and skipped; the others still work. Setting
``PUFFERBOX_PLUGINS`` to a comma-separated list of entry-point names loads only those
(empty: none).

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

ENTRY_POINT_GROUP = "pufferbox"
PLUGINS_ENV_VAR = "PUFFERBOX_PLUGINS"
IMPLEMENTATIONS = ("cpu", "cuda")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*(/[A-Za-z0-9][A-Za-z0-9_.+-]*)*$")
IMPORT_TIMEOUT_VAR = "PUFFERBOX_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 60.0  # seconds; generous: some plugins import torch or a simulator

__all__ = [
    "EnvBuild",
    "EnvMeta",
    "EnvSpec",
    "TrainDefaults",
    "PluginInfo",
    "Registry",
    "RegistryError",
    "UnknownEnvError",
    "get_registry",
]


def returning(value: Any) -> Callable[[], Any]:
    """A loader for a plugin object that is already imported (``Registry(extra_plugins=...)``)."""
    return lambda: value


class RegistryError(RuntimeError):
    """A registration breaks a registry rule (duplicate name, bad field)."""


class UnknownEnvError(KeyError):
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
    """

    binding: Callable[..., Any]
    kwargs: dict = field(default_factory=dict)
    implementation: str = "cpu"
    native: Callable[..., Any] | None = None
    cuda: Any = None
    observation_space: Any = None
    action_space: Any = None
    episode_metrics: tuple[str, ...] = ()


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
            :func:`pufferbox.groups.winner`).
    """

    config: dict = field(default_factory=dict)
    policy: Any = None
    solved_return: float | None = None
    groups: Any = None
    outcome: Any = None


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
    **{name: ("training", name) for name in TrainDefaults.__dataclass_fields__ if name != "config"},
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
        return self.build.binding(**{**self.build.kwargs, **kwargs})

    def make_emulated(self, check_obs: bool = False, **kwargs: Any) -> Any:
        """The raw env wrapped in its flattening emulator (``check_obs``: see :func:`pufferbox.emulation.emulate`)."""
        from pufferbox.emulation import emulate

        raw = self.make_raw(**kwargs)
        return emulate(raw, name=self.name, episode_metrics=self.build.episode_metrics, check_obs=check_obs)

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
    notes: list[str] = field(default_factory=list)  # refused aliases and commands (the plugin still works)

    @property
    def ok(self) -> bool:
        return self.error is None


class Registry:
    """Plugins and their envs, loaded on first access."""

    def __init__(
        self,
        group: str = ENTRY_POINT_GROUP,
        only: list[str] | None = None,
        extra_plugins: list[tuple[str, Any]] | None = None,
    ):
        self.group = group
        if only is None and PLUGINS_ENV_VAR in os.environ:
            only = [p.strip() for p in os.environ[PLUGINS_ENV_VAR].split(",") if p.strip()]
        self.only = only
        self.extra_plugins = list(extra_plugins or [])
        self.manager = pluggy.PluginManager("pufferbox")
        self.manager.add_hookspecs(hookspecs)
        self.plugins: list[PluginInfo] = []
        self.envs: dict[str, EnvSpec] = {}
        self.aliases: dict[str, str] = {}
        self.loaded = False

    # -- loading ----------------------------------------------------------------------
    def load(self) -> Registry:
        """Import every plugin and call its ``register_envs`` hook, one plugin at a time.

        A plugin that fails (import error, ``SystemExit``, an import that does not finish within
        ``PUFFERBOX_PLUGIN_IMPORT_TIMEOUT`` seconds, a duplicate env name, an error in its hook) is
        marked broken and registers nothing; the plugins before and after it are unaffected.
        """
        if self.loaded:
            return self
        self.loaded = True
        candidates: list[tuple[PluginInfo, Callable[[], Any]]] = []
        for ep in sorted(metadata.entry_points(group=self.group), key=lambda e: e.name):
            if self.only is not None and ep.name not in self.only:
                continue
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            candidates.append((PluginInfo(ep.name, dist, version, ep.value), ep.load))
        for name, obj in self.extra_plugins:
            candidates.append((PluginInfo(name, "(in-process)", "", getattr(obj, "__name__", repr(obj))), returning(obj)))
        timeout = float(os.environ.get(IMPORT_TIMEOUT_VAR) or DEFAULT_IMPORT_TIMEOUT)
        for info, loader in candidates:
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
        return self

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
        for name in info.envs:  # a plugin that failed half-way registers nothing
            spec = self.envs.pop(name, None)
            for alias in spec.aliases if spec else ():
                self.aliases.pop(alias, None)
        info.envs.clear()
        if self.manager.has_plugin(info.name):
            self.manager.unregister(name=info.name)

    def register(self, spec: EnvSpec, plugin: PluginInfo | None = None) -> None:
        """Add ``spec``. Rules (first come keeps a name; an alias never takes a name from an env):

        * its name already an env's name: :class:`RegistryError` naming both distributions
          (the registering plugin is then reported broken);
        * its name an earlier env's alias: the alias is withdrawn from that env (noted on its plugin);
        * one of its aliases already taken: that alias is refused (noted on this plugin).
        """
        if plugin is not None:
            spec.meta = dataclasses.replace(
                spec.meta, plugin=plugin.name, distribution=plugin.distribution, version=plugin.version
            )
        owner = self.envs.get(spec.name)
        if owner is not None:
            raise RegistryError(
                f"env name {spec.name!r} is registered twice: by {owner.meta.distribution} (plugin {owner.meta.plugin!r}) "
                f"and by {spec.meta.distribution} (plugin {spec.meta.plugin!r}); uninstall one, or restrict plugins "
                f"with {PLUGINS_ENV_VAR}=..."
            )
        if spec.name in self.aliases:
            earlier = self.envs[self.aliases.pop(spec.name)]
            earlier.aliases = tuple(a for a in earlier.aliases if a != spec.name)
            self.note(
                earlier.meta.plugin,
                f"alias {spec.name!r} of {earlier.name!r} withdrawn: it is the name of an env of {spec.meta.distribution}",
            )
        kept = []
        for alias in spec.aliases:
            taken = alias in self.envs or alias in self.aliases or alias == spec.name or alias in kept
            if taken:
                self.note(spec.meta.plugin, f"alias {alias!r} of {spec.name!r} refused: the name is already taken")
            else:
                kept.append(alias)
        spec.aliases = tuple(kept)
        self.envs[spec.name] = spec
        for alias in spec.aliases:
            self.aliases[alias] = spec.name
        if plugin is not None:
            plugin.envs.append(spec.name)

    def note(self, plugin_name: str, text: str) -> None:
        for info in self.plugins:
            if info.name == plugin_name:
                info.notes.append(text)

    # -- queries ----------------------------------------------------------------------
    def get(self, name: str) -> EnvSpec:
        self.load()
        if name in self.envs:
            return self.envs[name]
        if name in self.aliases:
            return self.envs[self.aliases[name]]
        names = sorted([*self.envs, *self.aliases])
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; run `pufferbox envs` to list them"
        broken = [p.name for p in self.plugins if not p.ok]
        if broken:
            hint += f" (broken plugins: {', '.join(broken)}; see `pufferbox plugins`)"
        raise UnknownEnvError(f"unknown env {name!r}{hint}")

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


class PluginImportError(RuntimeError):
    """A plugin's import raised (any exception, ``SystemExit`` included)."""


@functools.lru_cache(maxsize=1)
def get_registry() -> Registry:
    """The process-wide registry of installed plugins (loaded on first query)."""
    return Registry()
