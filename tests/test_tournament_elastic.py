"""Elasticity on a multi-node Ray cluster simulated on this machine (ray.cluster_utils.Cluster):
a node joining grows the pool, a node leaving shrinks it, losing only its pods' slices."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray", reason="the tournament runs on Ray (pip install 'pufferbox[ray]')")

SLICE = 16 * 4096  # a few seconds of cartpole training per slice


@pytest.fixture
def cluster(ray_cluster):
    """The simulated cluster of ``conftest.ray_cluster`` (its head has one CPU)."""
    return ray_cluster


def test_pool_grows_and_shrinks_with_the_cluster(cluster, tmp_path):
    from pufferbox.tournament.orchestrator import TournamentSettings, run_tournament

    state = {"added": None, "removed": False}
    concurrent: list[int] = []
    running: set[int] = set()

    def on_event(event: dict) -> None:
        if event["event"] == "slice_started":
            running.add(event["slot"])
            concurrent.append(len(running))
            # Once the grown pool has put a pod on every slot, take the new node away again.
            if state["added"] is not None and not state["removed"] and len(running) == 3:
                state["removed"] = True
                node = state["added"]
                threading.Timer(2.0, lambda: cluster.remove_node(node, allow_graceful=False)).start()
        elif event["event"] in ("slice_done", "slice_lost"):
            running.discard(event["slot"])
            if event["event"] == "slice_done" and state["added"] is None:
                state["added"] = cluster.add_node(num_cpus=2)  # the cluster grows mid-tournament

    result = run_tournament(
        TournamentSettings(
            "cartpole",
            pods=3,
            total_steps=10 * SLICE,
            slice_steps=SLICE,
            first_slice_steps=SLICE,
            eval_episodes=2,
            cpus_per_pod=1.0,
        ),
        run_dir=tmp_path / "e",
        on_event=on_event,
    )
    assert concurrent[0] == 1, "one CPU at the start: one pod"
    assert max(concurrent) == 3, f"the pool never grew to the joined node's CPUs: {concurrent}"
    assert state["removed"]
    assert result.lost_slices >= 1, "pods on the removed node lost their in-flight slices"
    assert result.total_steps >= 10 * SLICE, "the tournament finished its budget on the remaining node"
