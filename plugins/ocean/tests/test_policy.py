"""FlockRadar: the same features for any order of the flock, a boid's own row ignored, and the trainer
builds it for ocean/boids_all by default. PlacementPointer: each placement's way from the falling piece,
the pointed-at share per way, only placements that fit pointed at, and the trainer builds it for
ocean/tetris by default."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from pufferbox_ocean.games.tetris import OBS as TETRIS_OBS
from pufferbox_ocean.games.tetris import H, Tetris, W
from pufferbox_ocean.policy import WAYS, FlockRadar, PlacementPointer, placement_ways

import pufferbox.vector
from pufferbox.api import ActionSpec, ObservationSpec, build_agent, get_registry, resolve

OBS = ObservationSpec(spaces.Box(-2.0, 2.0, (256,), np.float32))
ACT = ActionSpec(spaces.MultiDiscrete([5, 5]))
ACT_TETRIS = ActionSpec(spaces.Discrete(6))


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


TETRIS = ObservationSpec(spaces.Box(-1.0, 1.0, (TETRIS_OBS,), np.float32))


def test_each_placement_lies_a_number_of_turns_away_or_left_here_or_right():
    ways = placement_ways()
    rot, column = 0, 3
    assert ways[rot, column, 0 * W + 1] == 3 and ways[rot, column, 0 * W + 3] == 4 and ways[rot, column, 0 * W + 7] == 5
    assert [int(ways[rot, column, r * W + 3]) for r in (1, 2, 3)] == [0, 1, 2]  # one, two, three clockwise turns
    assert int(ways[3, column, 0 * W + 3]) == 0  # from rotation 3, rotation 0 is one turn on


def test_the_pointer_points_at_the_placement_that_fills_a_row():
    env = Tetris()
    env.reset(seed=0)
    env.board[H - 1] = [1] * (W - 1) + [0]
    env.piece = 0  # I, flat at rotation 0: only a vertical I (one or three turns) in the last column fills it
    env.rot, env.x, env.y = 0, 3, 0
    pointer = PlacementPointer(TETRIS, ACT_TETRIS, hidden_size=32)
    with torch.no_grad():
        for layer in (pointer.scorer[0], pointer.scorer[2]):
            layer.weight.zero_()
            layer.bias.zero_()
        pointer.scorer[0].weight[0, 0] = 100.0  # rows filled
        pointer.scorer[2].weight[0, 0] = 1.0
        share = pointer(torch.from_numpy(env.observe())[None])[0, -2 * WAYS - 1 : -WAYS - 1]
    assert share[0] == pytest.approx(0.5, abs=1e-3) and share[2] == pytest.approx(0.5, abs=1e-3)


def test_only_placements_that_fit_are_pointed_at():
    env = Tetris()
    env.reset(seed=0)
    env.piece, env.rot, env.x, env.y = 1, 0, 4, 0  # O: columns 0-8 fit at every rotation, column 9 never
    pointer = PlacementPointer(TETRIS, ACT_TETRIS, hidden_size=32)
    with torch.no_grad():
        pointer.scorer[2].weight.zero_()
        pointer.scorer[2].bias.zero_()  # every placement scores the same
        share = pointer(torch.from_numpy(env.observe())[None])[0, -2 * WAYS - 1 : -WAYS - 1]
    legal = 4 * (W - 1)
    expected = [W - 1, W - 1, W - 1, 4, 1, W - 1 - 5]  # three turns away; left of column 4, at it, right
    torch.testing.assert_close(share, torch.tensor(expected, dtype=torch.float32) / legal)
    blank = torch.from_numpy(Tetris(placements=False).reset(seed=0)[0])[None]
    assert torch.isfinite(pointer(blank)).all()  # nothing fits as seen: the pointer spreads, nothing breaks


def test_an_observation_other_than_tetris_is_refused_and_the_trainer_builds_the_pointer():
    with pytest.raises(ValueError, match="PlacementPointer reads ocean/tetris's 630 floats"):
        PlacementPointer(OBS, ACT_TETRIS)
    spec = get_registry().get("ocean/tetris")
    with pufferbox.vector.make("ocean/tetris", backend="serial", num_envs=1) as venv:
        agent = build_agent(venv.obs_spec, venv.act_spec, {"hidden_size": 32}, resolve(spec.training.policy))
        assert isinstance(agent.encoder, PlacementPointer)
