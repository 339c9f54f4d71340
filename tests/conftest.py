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
    import pufferbox.vector.ray as pb_ray

    os.environ.pop("RAY_ADDRESS", None)  # never attach to a cluster the developer happens to run
    pb_ray.ensure_ray(num_cpus=2)
    temp_dir = pb_ray.local_temp_dir  # a private mkdtemp: only ensure_ray knows its name
    yield ray
    ray.shutdown()
    if temp_dir:
        shutil.rmtree(temp_dir, ignore_errors=True)


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
