"""Boids with the whole flock seen (PufferLib's Boids rules): crowding, the order boids move and are
scored in, steering and the arena's edges, flockmates and the margin when enabled, the observation,
bad settings (the C block's equality with this reference is test_games')."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.boids_all import BOX, BoidsAll, N

STILL = {f"boid_{i}": [2, 2] for i in range(N)}


def spread(**kwargs) -> BoidsAll:
    """Every boid at rest, 250 apart on an 8 x 8 grid of a 2100 x 2100 arena: nobody crowds anybody."""
    env = BoidsAll(width=2100, height=2100, **kwargs)
    env.reset(seed=0)
    for i in range(N):
        env.x[i], env.y[i] = 100.0 + 250.0 * (i % 8), 100.0 + 250.0 * (i // 8)
    return env


def test_a_crowding_boid_costs_a_tenth_and_five_cost_the_most():
    env = spread()
    env.x[1], env.y[1] = env.x[0] + 60.0, env.y[0]  # inside the protected range (100) of boid 0
    _, rewards, *_ = env.step(STILL)
    assert rewards["boid_0"] == rewards["boid_1"] == np.float32(-0.1)  # min(1 / 5, 1) / 2
    assert rewards["boid_2"] == 0.0
    for k in range(2, 8):  # boids 2..7 into boid 0's range as well: six crowd it, capped at five
        env.x[k], env.y[k] = env.x[0], env.y[0] + 10.0 * k
    _, rewards, *_ = env.step(STILL)
    assert rewards["boid_0"] == -0.5


def test_boids_move_and_are_scored_one_by_one_in_index_order():
    """Boid 0 is scored before boid 1 moves away: 99 apart for boid 0, 104 for boid 1."""
    env = spread()
    env.x[1], env.y[1] = env.x[0] + 99.0, env.y[0]
    env.vx[1] = 4.0
    _, rewards, *_ = env.step(dict(STILL, boid_1=[3, 2]))  # +0.5: 4.5 to the right
    assert env.x[1] == env.x[0] + 103.5
    assert rewards["boid_0"] == np.float32(-0.1) and rewards["boid_1"] == 0.0


def test_choices_steer_by_half_a_pixel_up_to_the_cap_and_the_box_stays_in_the_arena():
    env = spread()
    moves = dict(STILL, boid_0=[0, 4], boid_1=[1, 3])
    env.step(moves)
    assert (env.vx[0], env.vy[0], env.vx[1], env.vy[1]) == (-1.0, 1.0, -0.5, 0.5)
    for _ in range(20):
        env.step(moves)
    assert (env.vx[0], env.vy[0]) == (-5.0, 5.0)  # velocity_cap
    for _ in range(400):
        env.step(moves)
    assert env.x[0] == 0.0 and env.y[0] == 2100.0 - BOX  # the box's corner clipped to the arena less the box


def test_flockmates_and_the_margin_pay_when_their_factors_and_range_are_set():
    env = spread(protected_range=20, visual_range=100, centering_factor=0.01, margin=150, margin_factor=0.25)
    env.x[1], env.y[1] = env.x[0] + 50.0, env.y[0]  # a flockmate of boid 0: 20..100 away
    env.vx[1] = 3.0
    _, rewards, *_ = env.step(STILL)
    # boid 0 at (100, 100), scored before boid 1 moves: outside the band on both axes (-0.25 each), |3 - 0|
    # matching, 50 px centering at 0.01
    assert rewards["boid_0"] == np.float32((-3.0 - 0.5 - 0.25 - 0.25) / 2)
    # boid 9 at (350, 350): alone and inside the band on both axes
    assert rewards["boid_9"] == np.float32(0.25)


def test_each_boid_sees_every_boid_relative_to_itself_in_index_order():
    env = spread()
    env.vx[5] = 2.5
    obs, *_ = env.step(STILL)
    row = obs["boid_0"].reshape(N, 4)
    assert (row[0] == 0.0).all()  # itself
    expected = np.float32(env.x[5] / 2100.0) - np.float32(env.x[0] / 2100.0)
    assert row[5, 0] == expected and row[5, 2] == np.float32(0.5)
    assert row[8, 1] == np.float32(350.0 / 2100.0) - np.float32(100.0 / 2100.0)


def test_episodes_never_terminate_and_are_truncated_at_max_steps_with_the_crowded_share():
    block = GameBlock("boids_all", BoidsAll, 2, max_steps=5)
    block.vec_reset(seed=3)
    for _ in range(5):
        episodes = block.vec_step(np.full((2 * N, 2), 2, dtype=np.int64))
        assert not block.buffers.terminals.any()
    assert block.buffers.truncations.all() and len(episodes.env_ids) == 2
    assert 0.0 <= episodes.metrics["crowded"].min() <= episodes.metrics["crowded"].max() <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"width": 32}, "width must be"),
        ({"margin": 400}, "margin must be"),
        ({"avoid_factor": -1}, "avoid_factor must be a number >= 0"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BoidsAll(**kwargs)


def test_an_action_outside_its_choices_is_refused_by_name():
    env = BoidsAll()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="boid_3's action must be two choices in 0..4"):
        env.step(dict(STILL, boid_3=[5, 2]))


def steer_away(obs: np.ndarray) -> np.ndarray:
    """Away from every boid within 160 pixels (weighted by 1 / distance^2), else brake toward the flock's
    mean velocity; a weak pull toward the others' centre keeps the flock off the walls."""
    seen = obs.reshape(-1, N, 4)
    dx, dy = seen[..., 0] * 1080.0, seen[..., 1] * 720.0
    d2 = dx * dx + dy * dy
    near = (d2 < 160.0**2) & (d2 > 0.0)
    weight = near / np.maximum(d2, 1.0)
    fx = -(weight * dx).sum(-1) + 2e-5 * dx.mean(-1)
    fy = -(weight * dy).sum(-1) + 2e-5 * dy.mean(-1)
    ax, ay = np.where(fx > 1e-6, 4, np.where(fx < -1e-6, 0, 2)), np.where(fy > 1e-6, 4, np.where(fy < -1e-6, 0, 2))
    idle = ~near.any(-1)
    rvx, rvy = seen[..., 2].mean(-1), seen[..., 3].mean(-1)
    ax = np.where(idle, np.where(rvx > 0.05, 3, np.where(rvx < -0.05, 1, 2)), ax)
    ay = np.where(idle, np.where(rvy > 0.05, 3, np.where(rvy < -0.05, 1, 2)), ay)
    return np.stack([ax, ay], -1).reshape(-1, 2).astype(np.int64)


def test_the_solved_level_is_what_steering_away_from_neighbours_reaches_and_random_does_not():
    rng = np.random.default_rng(0)
    means = {}
    for name in ("away", "random"):
        block = GameBlock("boids_all", BoidsAll, 8)
        block.vec_reset(seed=0)
        returns: list[float] = []
        while len(returns) < 8:
            obs = block.buffers.observations
            actions = steer_away(obs) if name == "away" else rng.integers(0, 5, (8 * N, 2))
            returns += block.vec_step(actions).returns.tolist()
        means[name] = float(np.mean(returns))
    assert means["away"] > -80.0 > -100.0 > means["random"], means
