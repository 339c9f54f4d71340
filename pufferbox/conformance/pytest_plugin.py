"""pytest plugin (auto-loaded through the ``pytest11`` entry point): the ``pufferbox_check`` fixture.

Importing this module is cheap: pufferbox's registry and checks load only when a test
uses the fixture, so it never slows down or breaks collection of unrelated suites.

Example (a third-party plugin's test file)::

    def test_my_env_conforms(pufferbox_check):
        pufferbox_check("my_env", steps=100)   # a registered name or an EnvSpec
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def pufferbox_check() -> Callable[..., list]:
    """``check(env, **options)``: run the conformance suite; fail the test listing every failed check.

    ``env`` is a registered name or an :class:`~pufferbox.registry.EnvSpec`; options go to
    :func:`pufferbox.conformance.check_env_spec` (``steps``, ``seed``, ``num_envs``, ``checks``,
    ``env_kwargs``). Returns the results when all pass.
    """

    def check(env: Any, **options: Any) -> list:
        from pufferbox.conformance import check_env_spec
        from pufferbox.registry import get_registry

        spec = get_registry().get(env) if isinstance(env, str) else env
        results = check_env_spec(spec, **options)
        failed = [str(r) for r in results if not r.ok]
        if failed:
            pytest.fail(f"{spec.name} fails the pufferbox conformance suite:\n" + "\n".join(failed), pytrace=False)
        return results

    return check
