"""The plugin conformance suite: is an environment safe to train on with pufferbox?

Use it three ways:

* programmatically: ``check_env_spec(spec)`` returns one :class:`CheckResult` per check,
  ``assert_conforms(spec)`` raises :class:`ConformanceError` naming every failed check;
* from pytest: the ``pufferbox_check`` fixture (installed with pufferbox) runs it on a
  registered name or an :class:`~pufferbox.registry.EnvSpec`;
* from the shell: ``pufferbox check ENV``.

Example:
    >>> from pufferbox.conformance import check_env_spec
    >>> from pufferbox.registry import get_registry
    >>> [str(r) for r in check_env_spec(get_registry().get("bandit"), steps=20)][:1]  # doctest: +SKIP
    ['ok   api']
"""

from typing import Any

__all__ = ["CHECKS", "CheckResult", "ConformanceError", "assert_conforms", "check_env_spec"]


def __getattr__(name: str) -> Any:
    # Lazy, so that pytest loading the pytest11 plugin does not import gymnasium and numpy.
    if name in __all__:
        from pufferbox.conformance import checks

        return getattr(checks, name)
    raise AttributeError(f"module 'pufferbox.conformance' has no attribute {name!r}")
