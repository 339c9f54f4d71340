"""Fixtures shared by pufferbox's own test modules."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """One local 2-CPU Ray per test module (it takes seconds to start); yields the ``ray`` module."""
    ray = pytest.importorskip("ray")
    from pufferbox.vector.ray import ensure_ray

    os.environ.pop("RAY_ADDRESS", None)  # never attach to a cluster the developer happens to run
    ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()
    shutil.rmtree(f"/tmp/pbray-{os.getpid()}", ignore_errors=True)


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Plugins are loaded afresh for the test (and after it), with no ``PUFFERBOX_PLUGINS`` filter.

    Use as ``pytestmark = pytest.mark.usefixtures("fresh_registry")`` in modules that install
    test plugins or count the registered envs.
    """
    from pufferbox.registry import get_registry

    monkeypatch.delenv("PUFFERBOX_PLUGINS", raising=False)
    get_registry.cache_clear()
    yield
    get_registry.cache_clear()
