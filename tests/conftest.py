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
def ray_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A simulated multi-node Ray cluster (``ray.cluster_utils.Cluster``, a 1-CPU head; grow it with
    ``add_node``) joined by this process, whose every file lives in a private temp dir removed afterwards.

    ``Cluster`` records its address in ``<ray temp root>/ray/ray_current_cluster``; the root is
    ``$RAY_TMPDIR`` (else ``$TMPDIR``), so point it at a fresh directory that has that subdir
    instead of relying on a ``/tmp/ray`` left behind by an earlier Ray on the machine.
    """
    import tempfile

    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    from pufferbox.vector.ray import ensure_ray

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    root = tempfile.mkdtemp(prefix="pbcl-", dir="/tmp")  # short: Unix socket paths are limited to 107 bytes
    head = None
    try:
        os.mkdir(os.path.join(root, "ray"))
        monkeypatch.setenv("RAY_TMPDIR", root)
        head = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "include_dashboard": False, "temp_dir": os.path.join(root, "s")},
        )
        ensure_ray(address=head.address)
        yield head
    finally:
        ray.shutdown()
        if head is not None:
            head.shutdown()
        shutil.rmtree(root, ignore_errors=True)


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
