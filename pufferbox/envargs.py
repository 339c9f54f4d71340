"""Check a run's ``[env]`` table against what the env's creators accept, before any env is built.

The ``[env]`` keys go as keyword arguments to the plugin's creator that the run uses: the
native batched block (``spec.build.native``), the one-env binding (``spec.build.binding``), or, for
``--backend cuda``, the kernel's CPU reference. A key a creator's signature does not name
is refused with one line naming the key and the accepted ones. A creator that takes
``**kwargs`` (``gymnasium.make`` pass-throughs) cannot be read statically: keys that only
its ``**kwargs`` would take are tried by building that creator once, and a ``TypeError``
naming such a key is turned into the same one-line error. Accepted keys are tried the same way, so
a value the creator refuses (a ``ValueError``: a size out of range) is one line too.

Example:
    >>> from pufferbox.registry import get_registry                      # doctest: +SKIP
    >>> check_env_kwargs(get_registry().get("tag"), {"gravity_x": 3}, backend="cuda")  # doctest: +SKIP
    Traceback (most recent call last):
    pufferbox.envargs.EnvArgumentError: env.gravity_x: tag does not accept this key; accepted: ...
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from pufferbox.errors import PufferboxError
from pufferbox.registry import EnvSpec

__all__ = ["EnvArgumentError", "check_env_kwargs", "creators"]

# Passed by pufferbox itself, never by the user's [env] table.
INTERNAL = {"num_envs"}


class EnvArgumentError(PufferboxError, ValueError):
    """An ``[env]`` key that the env's creator does not accept."""


def creators(spec: EnvSpec, native: bool = True, backend: str = "serial") -> list[tuple[str, Callable[..., Any]]]:
    """``(role, callable)`` of what builds ``spec``'s envs in a run with these settings."""
    if backend == "cuda" and spec.build.cuda is not None:
        return [("kernel reference", spec.build.cuda.reference_class())]
    if native and spec.build.native is not None:
        return [("native", spec.build.native)]
    return [("binding", spec.build.binding)]


def signature_keys(fn: Callable[..., Any]) -> tuple[set[str], bool]:
    """``(named keyword parameters, takes **kwargs)`` of ``fn``; an unreadable signature is open."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set(), True
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return named - INTERNAL, any(p.kind is p.VAR_KEYWORD for p in params)


def check_env_kwargs(spec: EnvSpec, kwargs: dict, native: bool = True, backend: str = "serial") -> None:
    """Raise :class:`EnvArgumentError` if a key of ``kwargs`` is not accepted by ``spec``'s creator."""
    if not kwargs:
        return
    for role, fn in creators(spec, native, backend):
        named, open_ = signature_keys(fn)
        extra = sorted(set(kwargs) - named)
        if not extra:
            validate(spec, role, fn, kwargs)
            continue
        if not open_:
            more = f" (and {len(extra) - 1:,} more keys it does not accept)" if len(extra) > 1 else ""
            raise EnvArgumentError(
                f"env.{brief(extra[0])}: {spec.name} does not accept this key ({role} {qualname(fn)}){more}; "
                f"accepted: {brief(', '.join(sorted(named))) or 'none'}"
            )
        probe(spec, role, fn, kwargs, extra)


def known_keys(spec: EnvSpec) -> list[str]:
    """Every key some creator of ``spec`` names: a hint when an open creator refused a key."""
    fns = [spec.build.binding, spec.build.native, spec.build.cuda.reference_class() if spec.build.cuda is not None else None]
    return sorted(set().union(*(signature_keys(fn)[0] for fn in fns if fn is not None)))


def probe(spec: EnvSpec, role: str, fn: Callable[..., Any], kwargs: dict, extra: list[str]) -> None:
    """Build ``fn`` once with ``kwargs``; a ``TypeError`` naming one of ``extra`` becomes the one-line error."""
    spec.ensure_available()
    merged = {**spec.build.kwargs, **kwargs}
    try:
        env = fn(num_envs=1, **merged) if role == "native" else fn(**merged)
    except ValueError as exc:
        raise refused(spec, kwargs, exc) from None
    except TypeError as exc:
        message = str(exc).splitlines()[0] if str(exc) else "TypeError"
        bad = named_in(message, extra)
        if not bad:
            raise
        reason = brief(message.split(" was raised from the environment creator")[0])  # gymnasium.make's long suffix
        hint = ", ".join(known_keys(spec))
        raise EnvArgumentError(
            f"env.{brief(bad[0])}: {spec.name} does not accept this key ({reason})"
            + (f"; known keys: {brief(hint)}" if hint else "")
        ) from None
    close = getattr(env, "close", None)
    if callable(close):
        close()


MESSAGE_CHARS = 300  # an error line quotes at most this much of a creator's message
LISTED_KEYS = 5  # and names at most this many of the user's keys


def named_in(message: str, keys: list[str]) -> list[str]:
    """The ``keys`` that ``message`` names as whole words, in order: one pass over the message's words (a
    regex per key would take minutes for 200,000 keys against a message that lists them all)."""
    words = set(re.findall(r"\w+", message))

    def named(key: str) -> bool:
        if re.fullmatch(r"\w+", key):
            return key in words
        return re.search(rf"(?<!\w){re.escape(key)}(?!\w)", message) is not None

    return [key for key in keys if named(key)]


def brief(text: str) -> str:
    """``text`` cut to :data:`MESSAGE_CHARS` characters, saying so."""
    return text if len(text) <= MESSAGE_CHARS else f"{text[:MESSAGE_CHARS]}... ({len(text):,} characters)"


def validate(spec: EnvSpec, role: str, fn: Callable[..., Any], kwargs: dict) -> None:
    """Build ``fn`` once with the accepted ``kwargs``: a ``ValueError`` (a value out of its range) is one line."""
    if spec.unavailable_reason is not None:
        return  # the missing package is reported with its fix elsewhere
    merged = {**spec.build.kwargs, **kwargs}
    try:
        env = fn(num_envs=1, **merged) if role == "native" else fn(**merged)
    except ValueError as exc:
        raise refused(spec, kwargs, exc) from None
    close = getattr(env, "close", None)
    if callable(close):
        close()


def refused(spec: EnvSpec, kwargs: dict, exc: ValueError) -> EnvArgumentError:
    message = brief(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
    items = sorted(kwargs.items())
    given = ", ".join(brief(f"env.{key}={value!r}") for key, value in items[:LISTED_KEYS])
    if len(items) > LISTED_KEYS:
        given += f", ... ({len(items):,} keys)"
    return EnvArgumentError(f"{given}: {spec.name} refuses it: {message}")


def qualname(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
