"""The Atari native block (ale-py's C++ vector env): equal to the Gymnasium path where the two draw alike,
its training aids, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_atari.native import AtariNative, ale_seed
from pufferbox_atari.plugin import make_atari

import pufferbox.vector
from pufferbox.api import SpaceError, get_registry
from pufferbox.conformance import check_env_spec


def native_check(steps: int = 150, **env_kwargs) -> str:
    (result,) = check_env_spec(get_registry().get("breakout"), steps=steps, checks=["native"], env_kwargs=env_kwargs)
    return str(result)


def test_vector_envs_default_to_the_native_block_and_native_false_keeps_the_gymnasium_path():
    native = pufferbox.vector.make("breakout", num_envs=2)
    emulated = pufferbox.vector.make("breakout", num_envs=2, native=False)
    try:
        assert native.factory.native and not emulated.factory.native
        assert native.single_observation_space == emulated.single_observation_space
        assert native.single_action_space == emulated.single_action_space
    finally:
        native.close()
        emulated.close()


@pytest.mark.parametrize(
    "env_kwargs",
    [{}, {"clip_rewards": True, "frame_skip": 3, "stack": 2}, {"max_episode_frames": 40}],
    ids=["defaults", "clipped-skip3-stack2", "truncated-every-10-steps"],
)
def test_the_conformance_check_finds_the_block_equal_bit_for_bit_with_noop_starts_off(env_kwargs):
    # Frames (skip, max-pool, grayscale, resize, stack padding), rewards, ends, truncated episodes'
    # final observations and episode stats over several autoresets: the check compares each step.
    assert native_check(**env_kwargs) == "ok   native: bit for bit under noop_max=0, repeat_action_probability=0.0"


def test_the_check_fails_where_the_block_draws_its_noop_starts_from_its_own_rng():
    result = native_check(steps=20, noop_max=30)
    assert result.startswith("FAIL native: step ") and "observations differ" in result


def lockstep_mismatch(seed: int, steps: int = 300) -> int | None:
    """The first step where one block env and the Gymnasium env (sticky actions on, no-op starts off) differ."""
    block = AtariNative(num_envs=1, game="breakout", noop_max=0)
    env = make_atari("breakout", noop_max=0)
    try:
        block.vec_reset(seed)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        for t in range(steps):
            action = int(rng.integers(4))
            block.vec_step(np.array([action]))
            obs, reward, terminated, truncated, _ = env.step(action)
            b = block.buffers
            if terminated or truncated:
                obs, _ = env.reset()
            same = (b.observations[0] == obs.reshape(-1)).all() and b.rewards[0] == reward and b.terminals[0] == terminated
            if not same:
                return t
        return None
    finally:
        block.close()
        env.close()


def test_sticky_actions_draw_as_gymnasiums_where_the_ale_seed_passes_on_and_not_otherwise():
    assert ale_seed(1) == int(np.int32(np.random.SeedSequence(1).generate_state(2)[1]))  # non-negative: passed on
    assert lockstep_mismatch(seed=1) is None
    assert np.int32(np.random.SeedSequence(0).generate_state(2)[1]) < 0  # the vector env takes no negative seed
    assert lockstep_mismatch(seed=0) is not None  # other sticky draws: the lock-step test can tell


def play_until_game_over(block: AtariNative, max_steps: int = 5000) -> list:
    rng = np.random.default_rng(0)
    ended, lives = [], []
    for _ in range(max_steps):
        episodes = block.vec_step(rng.integers(4, size=1))
        if len(episodes):
            ended.append(episodes)
            lives.append(int(block.lives[0]))
            frames = block.buffers.observations[0].reshape(4, 84, 84)
            assert (frames == frames[-1]).all(), "a new learner episode starts on a stack of its first frame"
            if np.isfinite(episodes.metrics["raw_episode_return"]).all():
                return list(zip(ended, lives))
    raise AssertionError("a random Breakout game (5 lives) ends within 5,000 steps")


def test_episodic_life_ends_a_learner_episode_per_life_while_the_game_goes_on():
    block = AtariNative(num_envs=1, game="breakout", episodic_life=True, clip_rewards=True, fire_reset=True)
    try:
        block.vec_reset(2)  # a seed whose random game scores
        ends = play_until_game_over(block)
    finally:
        block.close()
    assert [lives for _, lives in ends] == [4, 3, 2, 1, 5], "one episode per life; the game restarts after the last"
    raw = [float(e.metrics["raw_episode_return"][0]) for e, _ in ends]
    assert all(np.isnan(raw[:-1])), "the whole game's raw score comes only with its last life"
    clipped = sum(float(e.returns[0]) for e, _ in ends)
    assert raw[-1] >= clipped > 0  # bricks are worth 1 to 7 points, clipped to 1, summed over all lives


def threads_in_a_child(queue) -> None:
    block = AtariNative(num_envs=4, game="breakout")
    queue.put(block.num_threads)
    block.close()


def test_one_thread_per_core_here_and_one_in_a_backend_worker_process():
    import multiprocessing
    import os

    block = AtariNative(num_envs=64, game="breakout")
    assert block.num_threads == len(os.sched_getaffinity(0))
    block.close()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=threads_in_a_child, args=(queue,))
    child.start()
    assert queue.get(timeout=60) == 1
    child.join(timeout=60)


def test_bad_arguments_and_actions_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        AtariNative(num_envs=1, game="breakout", num_threads=-1)
    with pytest.raises(ValueError, match="render_mode must be None"):
        AtariNative(num_envs=1, game="breakout", render_mode="rgb_array")
    with pytest.raises(ValueError, match="unknown Atari game 'breakot'"):
        AtariNative(num_envs=1, game="breakot")
    block = AtariNative(num_envs=2, game="breakout")
    try:
        with pytest.raises(RuntimeError, match="step\\(\\) before reset\\(\\)"):
            block.vec_step(np.zeros(2, np.int64))
        block.vec_reset(0)
        with pytest.raises(SpaceError, match="action 4 is outside the flat action space Discrete\\(4\\)"):
            block.vec_step(np.array([0, 4]))
    finally:
        block.close()
