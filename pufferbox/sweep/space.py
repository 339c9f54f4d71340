"""The search space: which settings a sweep varies, and over what range.

The built-in space varies PPO's hyperparameters around the env's plugin defaults (the
centre of each range is the default, so trial 0, the defaults, is inside it), within the
bounds a tournament perturbs them in (:mod:`pufferbox.train.search_space`: one set for both). A TOML table
``[sweep.space]`` overrides it key by key::

    [sweep.space]
    learning_rate = {low = 1e-4, high = 3e-3, log = true}   # bare keys are train.*
    num_steps = {choices = [16, 32, 64]}
    "vec.num_envs" = {choices = [32, 64]}                    # or section.key
    ent_coef = false                                         # not searched
    gamma = 0.99                                             # fixed for every trial

Example:
    >>> from pufferbox.train.config import RunConfig
    >>> space = resolve_space(RunConfig(), {"learning_rate": {"low": 1e-4, "high": 1e-3, "log": True}})
    >>> space["train.learning_rate"]
    Param(name='train.learning_rate', low=0.0001, high=0.001, log=True, choices=None, is_int=False)
    >>> resolve_space(RunConfig(), {"learnin_rate": {"low": 1e-4, "high": 1e-3}})
    Traceback (most recent call last):
    ...
    pufferbox.train.config.ConfigError: sweep.space: train.learnin_rate: unknown key; did you mean learning_rate?
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pufferbox.train.config import DEFAULTS, ConfigError, RunConfig, check_value
from pufferbox.train.search_space import KNOBS

__all__ = ["Param", "builtin_space", "resolve_space", "space_to_toml"]

SPEC_KEYS = {"low", "high", "log", "choices"}


@dataclass(frozen=True)
class Param:
    """One searched setting: a range (``low``/``high``, ``log``) or a list of ``choices``."""

    name: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple | None = None
    is_int: bool = False

    def suggest(self, trial: Any) -> Any:
        if self.choices is not None:
            return trial.suggest_categorical(self.name, list(self.choices))
        assert self.low is not None and self.high is not None, "a Param without choices is a range"
        if self.is_int:
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.name, self.low, self.high, log=self.log)

    def contains(self, value: Any) -> bool:
        if self.choices is not None:
            return value in self.choices
        return self.low <= value <= self.high

    def to_toml(self) -> dict:
        if self.choices is not None:
            return {"choices": list(self.choices)}
        return {"low": self.low, "high": self.high, "log": self.log}


def builtin_space(config: RunConfig) -> dict[str, Param]:
    """PPO's main knobs (:data:`~pufferbox.train.search_space.KNOBS`, whose bounds tournaments perturb
    within too), each a window centred on its value in ``config`` (the env's resolved defaults)."""
    space = {}
    for name, knob in KNOBS.items():
        window = knob.window(config.setting(name))
        if "choices" in window:
            space[name] = Param(name, choices=tuple(window["choices"]))
        else:
            space[name] = Param(name, window["low"], window["high"], log=window["log"], is_int=knob.integer)
    return space


def parse_param(name: str, value: Any) -> Param:
    """A ``[sweep.space]`` entry as a :class:`Param`; the one-line error names the key and the fix."""
    section, _, key = name.partition(".")
    where = f"sweep.space.{name}"
    unknown = set(value) - SPEC_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}; use low/high/log or choices")
    if "choices" in value:
        choices = value["choices"]
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f"{where}: choices must be a non-empty list, e.g. choices = [16, 32]")
        return Param(name, choices=tuple(check_value(section, key, c, where) for c in choices))
    if "low" not in value or "high" not in value:
        raise ConfigError(f"{where}: give low and high (e.g. {{low = 1e-4, high = 3e-3, log = true}}) or choices")
    low, high = (check_value(section, key, value[k], where) for k in ("low", "high"))
    log = bool(value.get("log", False))
    if not low < high:
        raise ConfigError(f"{where}: low ({low!r}) must be below high ({high!r})")
    if log and low <= 0:
        raise ConfigError(f"{where}: a log range needs low > 0, got {low!r}")
    return Param(name, low, high, log=log, is_int=isinstance(low, int) and not isinstance(low, bool))


def flatten(table: dict) -> dict[str, Any]:
    """``{"learning_rate": ..., "vec": {"num_envs": ...}}`` → ``{"train.learning_rate": ..., "vec.num_envs": ...}``."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key in DEFAULTS and isinstance(value, dict) and not (set(value) & SPEC_KEYS):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key if "." in key else f"train.{key}"] = value
    return out


def resolve_space(
    config: RunConfig, table: dict | None = None, fixed: set[str] | frozenset = frozenset()
) -> dict[str, Param]:
    """The built-in space with ``table`` (``[sweep.space]``) layered on; ``fixed`` keys are not searched.

    Scalars in ``table`` are not part of the space: see :func:`fixed_values`.
    """
    space = builtin_space(config)
    for name, value in flatten(table or {}).items():
        section, _, key = name.partition(".")
        if section not in DEFAULTS or section == "env":
            raise ConfigError(f"sweep.space.{name}: unknown section {section!r}; use train.*, vec.* or policy.*")
        try:
            check_value(section, key, config.setting(name, value), "sweep.space")
        except ConfigError as exc:
            raise ConfigError(f"sweep.space: {exc}") from None
        if value is False or not isinstance(value, dict):
            space.pop(name, None)
        else:
            space[name] = parse_param(name, value)
    return {name: p for name, p in space.items() if name not in fixed}


def fixed_values(table: dict | None) -> dict[str, Any]:
    """The scalar entries of ``[sweep.space]`` (settings fixed for every trial), as ``section.key``."""
    return {
        name: value for name, value in flatten(table or {}).items() if not isinstance(value, dict) and value is not False
    }


def space_to_toml(space: dict[str, Param]) -> dict:
    return {name: p.to_toml() for name, p in space.items()}
