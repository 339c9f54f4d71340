"""Continuous Tag: kernel source (run on the host) vs numpy reference, PettingZoo API, conformance, rules."""

import numpy as np
import pytest
from pufferbox_warp.tag_continuous import TagContinuousEnv, TagContinuousReference

from pufferbox.cuda.consistency import check_env
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.registry import get_registry

needs_cxx = pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler to build kernels for the host")
# Small world, wide radius, a wall penalty: tags, wall hits and both kinds of episode end happen often.
BUSY = {"num_taggers": 2, "num_runners": 5, "world": 6.0, "tag_radius": 1.5, "wall_penalty": -0.25, "episode_length": 40}


@needs_cxx
@pytest.mark.parametrize(
    "kwargs", [{}, BUSY, {**BUSY, "k_nearest": 3, "accel_levels": 3, "turn_levels": 7, "runner_max_speed": 1.5}]
)
def test_kernel_matches_reference_on_host(kwargs):
    report = check_env(get_registry().get("tag_continuous"), num_envs=4, steps=80, device="host", env_kwargs=kwargs)
    assert report.ok, report.summary()


def test_busy_settings_exercise_every_rule():
    """Guards the consistency test above against passing on a game where nothing happens."""
    ref = TagContinuousReference(num_envs=8, **BUSY)
    ref.reset(seed=0)
    rng = np.random.default_rng(0)
    seen = {"tag": 0, "wall": 0, "terminated": 0, "truncated": 0}
    for _ in range(120):
        ref.step(rng.integers(0, ref.num_actions, (8, ref.num_agents), dtype=np.int32))
        r, d = ref.arrays["rewards"], ref.arrays["done"][:, 0]
        seen["tag"] += int((r[:, 2:] <= -1.0).sum())
        seen["wall"] += int(np.isin(r, [np.float32(-0.25), np.float32(-1.25)]).sum())
        seen["terminated"] += int((d == 1).sum())
        seen["truncated"] += int((d == 2).sum())
        heading = ref.xy("heading")
        assert np.allclose((heading**2).sum(-1), 1.0, atol=1e-6)
        assert (ref.arrays["pos"] >= 0).all() and (ref.arrays["pos"] <= 6.0).all()
    assert all(count > 0 for count in seen.values()), seen


def test_tag_rewards_and_exit():
    ref = TagContinuousReference(num_envs=1, num_taggers=1, num_runners=2, tag_radius=1.0, tag_reward=2.0)
    ref.reset(seed=0)
    ref.arrays["pos"][0] = [5.0, 5.0, 5.5, 5.0, 15.0, 15.0]  # runner 1 in range, runner 2 far away
    ref.arrays["speed"][0] = 0.0
    ref.arrays["heading"][0] = [1.0, 0.0] * 3
    brake_straight = (0 * ref.turn_levels) + ref.turn_levels // 2  # full brake, no turn: nobody moves
    ref.step(np.full((1, 3), brake_straight, np.int32))
    np.testing.assert_array_equal(ref.arrays["rewards"][0], [2.0, -1.0, 0.0])
    np.testing.assert_array_equal(ref.arrays["in_game"][0], [1, 0, 1])
    np.testing.assert_array_equal(ref.arrays["terminals"][0], [0, 1, 0])
    assert ref.arrays["done"][0, 0] == 0
    ref.step(np.full((1, 3), brake_straight, np.int32))
    assert ref.arrays["rewards"][0, 1] == 0.0 and ref.arrays["masks"][0, 1] == 0  # gone: no reward, masked


def test_actions_accelerate_and_turn():
    ref = TagContinuousReference(
        num_envs=1, num_taggers=1, num_runners=1, max_accel=0.5, max_turn=0.5, accel_levels=3, turn_levels=3, tag_radius=0.1
    )
    ref.reset(seed=0)
    ref.arrays["pos"][0] = [5.0, 5.0, 15.0, 15.0]
    ref.arrays["heading"][0] = [1.0, 0.0, 1.0, 0.0]
    full_speed_left = 2 * 3 + 2  # accel level 2 (+0.5), turn level 2 (+0.5 rad, counter-clockwise)
    ref.step(np.array([[full_speed_left, 1 * 3 + 1]], np.int32))
    hx, hy = ref.arrays["heading"][0, :2]
    assert abs(hx - np.cos(0.5)) < 1e-6 and abs(hy - np.sin(0.5)) < 1e-6
    assert ref.arrays["speed"][0, 0] == np.float32(0.5) and ref.arrays["speed"][0, 1] == 0.0
    np.testing.assert_allclose(ref.arrays["pos"][0, :2], [5 + 0.5 * np.cos(0.5), 5 + 0.5 * np.sin(0.5)], atol=1e-6)
    for _ in range(5):
        ref.step(np.array([[full_speed_left, 4]], np.int32))
    assert ref.arrays["speed"][0, 0] == np.float32(1.0)  # capped at the tagger's max speed


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"max_turn": 1.5}, "max_turn must be in"),
        ({"k_nearest": 12}, "k_nearest must be in"),
        ({"turn_levels": 1}, "turn_levels must be >= 2"),
        ({"num_runners": 0}, "at least one tagger and one runner"),
    ],
)
def test_bad_parameters_say_what_to_change(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TagContinuousReference(num_envs=1, **kwargs)


def test_pettingzoo_api():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(TagContinuousEnv(num_runners=3, episode_length=30, world=5.0), num_cycles=100)
    parallel_api_test(TagContinuousEnv(num_runners=4, k_nearest=2), num_cycles=50)


def test_conformance_suite(pufferbox_check):
    pufferbox_check("tag_continuous", steps=60, env_kwargs={"num_runners": 4, "world": 8.0})


def test_check_cuda_without_gpu_is_one_line_error(monkeypatch):
    from click.testing import CliRunner

    import pufferbox.cuda.consistency as consistency
    from pufferbox.cli import cli, load_commands

    load_commands()
    monkeypatch.setattr(consistency, "gpu_unavailable_reason", lambda: "no CUDA GPU: test says so")
    result = CliRunner().invoke(cli, ["check", "tag_continuous", "--cuda", "--check", "api", "--steps", "5"])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1].startswith("Error: no CUDA GPU: test says so; run on a GPU machine")
