"""FlockRadar: the same features for any order of the flock, a boid's own row ignored, and the trainer
builds it for ocean/boids_all by default."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from pufferbox_ocean.policy import FlockRadar

import pufferbox.vector
from pufferbox.api import ActionSpec, ObservationSpec, build_agent, get_registry, resolve

OBS = ObservationSpec(spaces.Box(-2.0, 2.0, (256,), np.float32))
ACT = ActionSpec(spaces.MultiDiscrete([5, 5]))


def flock(rows: int, seed: int = 0) -> torch.Tensor:
    """Random flocks of 64 seen from boid 0 (its own row zero)."""
    seen = torch.from_numpy(np.random.default_rng(seed).uniform(-0.3, 0.3, (rows, 64, 4)).astype(np.float32))
    seen[:, 0] = 0.0
    return seen


def test_the_radar_reads_a_flock_the_same_in_any_order():
    torch.manual_seed(0)
    radar = FlockRadar(OBS, ACT, hidden_size=32)
    seen = flock(5)
    shuffled = seen[:, torch.randperm(64)]
    torch.testing.assert_close(radar(seen.reshape(5, -1)), radar(shuffled.reshape(5, -1)))


def test_the_radar_tells_a_near_boid_by_its_direction_and_distance():
    torch.manual_seed(0)
    radar = FlockRadar(OBS, ACT, hidden_size=32)
    alone = torch.zeros(1, 64, 4)
    left, right = alone.clone(), alone.clone()
    left[0, 1, 0], right[0, 1, 0] = -0.07, 0.07
    out = [radar(x.reshape(1, -1)) for x in (alone, left, right)]
    assert not torch.allclose(out[1], out[2]) and not torch.allclose(out[0], out[1])
    far = alone.clone()  # a boid beyond the last ring counts in its direction's outer cell only
    far[0, 1, 0] = 0.9
    assert not torch.allclose(radar(far.reshape(1, -1)), out[2])


def test_a_space_of_other_than_four_floats_per_boid_is_refused():
    with pytest.raises(ValueError, match="FlockRadar needs one Box of 4 floats per boid"):
        FlockRadar(ObservationSpec(spaces.Box(-1.0, 1.0, (10,), np.float32)), ACT)


def test_the_trainer_builds_the_radar_for_boids_all_by_default():
    spec = get_registry().get("ocean/boids_all")
    with pufferbox.vector.make("ocean/boids_all", backend="serial", num_envs=1) as venv:
        agent = build_agent(venv.obs_spec, venv.act_spec, {"hidden_size": 32}, resolve(spec.training.policy))
        assert isinstance(agent.encoder, FlockRadar)
