"""Training configuration: built-in defaults < plugin defaults < TOML file < command line.

A config is a dict of sections (``train``, ``vec``, ``policy``, ``env``). Every key of
``train``/``vec``/``policy`` has a built-in default whose type is the key's type; a value
of another type, or a key nobody declared, raises :class:`ConfigError` with one line
naming the key. ``env`` holds free-form keyword arguments for the env binding.

Example:
    >>> cfg = resolve_config(overrides=["train.learning_rate=3e-4", "vec.num_envs=8"])
    >>> cfg["train"]["learning_rate"], cfg["vec"]["num_envs"]
    (0.0003, 8)
    >>> resolve_config(overrides=["train.learning_rte=1"])
    Traceback (most recent call last):
    ...
    pufferbox.train.config.ConfigError: train.learning_rte: unknown key; did you mean learning_rate?
"""

from __future__ import annotations

import copy
import difflib
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

__all__ = ["ConfigError", "DEFAULTS", "resolve_config", "merge", "parse_override", "load_toml", "dump_toml"]


class ConfigError(ValueError):
    """A bad configuration value or key; the one-line message names the key and the fix."""


DEFAULTS: dict[str, dict[str, Any]] = {
    "train": {
        "total_steps": 1_000_000,
        "learning_rate": 2.5e-4,
        "anneal_lr": True,
        "num_steps": 128,  # rollout length per agent row
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "num_minibatches": 4,
        "update_epochs": 4,
        "norm_adv": True,
        "clip_coef": 0.2,
        "clip_vloss": True,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "target_kl": 0.0,  # 0: no early stop of the epochs
        "seed": 1,
        "device": "cpu",  # "cpu", "cuda", "cuda:1", or "auto"
        "torch_threads": 0,  # 0: one per core (at most 4)
        "compile": False,
        "checkpoint_interval": 100,  # updates between checkpoints (and env re-seeding, see ppo.py)
        "keep_checkpoints": 3,
        "stop_on_solve": False,  # stop once the last-20-episode mean reaches the env's solved_return
        "solve_window": 20,
        "deterministic": False,  # torch deterministic algorithms
    },
    "vec": {
        "backend": "serial",
        "num_envs": 8,
        "num_workers": 0,  # 0: the backend decides
        "batch_size": 0,  # envs per recv(); 0: all of them (no pool)
        "main_envs": 0,  # multiprocessing: envs the main process steps itself while the workers step
        "native": True,  # use the plugin's batched implementation when it has one
        "step_timeout": 60.0,  # multiprocessing/ray: seconds a worker may take per step before WorkerTimeoutError
        "check_obs": False,  # check every observation against its space's bounds and for NaN/inf (slow)
        "device": "gpu",  # --backend cuda only: "gpu", or "host" (the same kernels simulated on the CPU)
    },
    "policy": {
        "hidden_size": 64,
        "lstm": False,
        "lstm_size": 0,  # 0: hidden_size
        "encoder": "auto",  # "auto" (plugin policy, CNN for images, else MLP), "mlp", "cnn", or "module:Class"
    },
    "env": {},
}

FREE_SECTIONS = ("env",)
AT_LEAST_ONE = {"train.total_steps", "train.num_steps", "train.num_minibatches", "train.update_epochs",
                "train.solve_window", "vec.num_envs", "policy.hidden_size"}


def merge(base: dict, update: dict, source: str) -> dict:
    """``base`` with ``update`` layered on top, checking keys and types against :data:`DEFAULTS`."""
    out = copy.deepcopy(base)
    for section, values in update.items():
        if section not in DEFAULTS:
            hint = difflib.get_close_matches(section, list(DEFAULTS), n=1)
            raise ConfigError(f"{section}: unknown section in {source}"
                              + (f"; did you mean {hint[0]}?" if hint else f"; sections are {', '.join(DEFAULTS)}"))
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
        raise ConfigError(f"{section}.{key}: unknown key"
                          + (f"; did you mean {hint[0]}?" if hint else f" ({source}); keys are {', '.join(known)}"))
    expected = type(known[key])
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not expected:
        raise ConfigError(f"{section}.{key}: expected {expected.__name__}, got {type(value).__name__} "
                          f"{value!r} ({source})")
    if expected in (int, float) and key not in ("seed",) and value < 0:
        raise ConfigError(f"{section}.{key}: must be >= 0, got {value!r} ({source})")
    if f"{section}.{key}" in AT_LEAST_ONE and value < 1:
        raise ConfigError(f"{section}.{key}: must be >= 1, got {value!r} ({source})")
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


def resolve_config(plugin_defaults: dict | None = None, config_file: str | Path | None = None,
                   overrides: list[str] | None = None, flags: dict | None = None) -> dict:
    """The layered config: built-ins < plugin defaults < ``config_file`` < ``overrides`` < ``flags``.

    ``flags`` is ``{"vec.num_envs": 8, ...}`` from first-class CLI options (``None`` values skipped).
    """
    config = merge(DEFAULTS, plugin_defaults or {}, "plugin defaults")
    if config_file is not None:
        config = merge(config, load_toml(config_file), str(config_file))
    for text in overrides or []:
        config = merge(config, parse_override(text), f"--set {text}")
    for name, value in (flags or {}).items():
        if value is not None:
            section, _, key = name.partition(".")
            config = merge(config, {section: {key: value}}, f"--{key.replace('_', '-')}")
    return config
