"""Remote rollouts on a multi-node Ray cluster simulated on this machine: a node lost mid-rollout."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pufferbox.vector.base import EnvFactory
from pufferbox.vector.testenvs import env_spec_for

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray")


def test_a_removed_node_loses_only_its_actors_steps_and_training_goes_on(ray_cluster) -> None:
    from pufferbox.train.policies import build_agent
    from pufferbox.train.ray_collector import RayCollector
    from pufferbox.vector.ray_rollout import RayRollouts

    node = ray_cluster.add_node(num_cpus=1)
    ray_cluster.wait_for_nodes()
    factory = EnvFactory(env_spec_for("uneven", mean_step_s=2e-3))
    with RayRollouts(factory, num_envs=4, num_workers=2) as r:
        where = r.nodes()
        assert len(set(where)) == 2, f"the rollout actors were not spread over the nodes: {where}"
        agent = build_agent(r.obs_spec, r.act_spec, {"hidden_size": 16})
        collector = RayCollector(r, agent, horizon=200)  # ~0.8 s of steps per actor
        collector.reset(seed=3)
        collector.collect()
        lost_worker = where.index(node.node_id)
        threading.Timer(0.3, lambda: ray_cluster.remove_node(node, allow_graceful=False)).start()
        got = collector.collect()
        assert got.metrics["actors_replaced"] == 1.0, (r.actor_nodes, where, node.node_id, r.suspect)
        assert got.metrics["lost_steps"] == 2 * 200
        assert got.steps == 4 * 200 and np.isfinite(got.batch["values"].numpy()).all()
        assert r.nodes()[lost_worker] != node.node_id, "the replacement runs on a node that is still there"
        assert r.nodes()[1 - lost_worker] == where[1 - lost_worker], "the other actor kept running"
        again = collector.collect()
        assert again.metrics["lost_steps"] == 0.0 and again.steps == 4 * 200
