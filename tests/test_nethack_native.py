"""The native NetHack block against the emulated gym env: bit for bit, episode ends included.

Every test runs the same seeds and actions through both paths and compares observations,
rewards, terminals, truncations and episode infos at every step. The action pattern makes
episodes end both ways: env 1 walks west into a wall and kicks it until it dies
(``terminated``), the others play randomly until the time limit (``truncated``), and each
auto-reset starts the next seeded game.
"""

from __future__ import annotations

import inspect
import os
import signal
from typing import Any

import numpy as np
import pytest

pytest.importorskip("nle")

from pufferbox_nethack.native import NATIVE_TASKS, SUCCESS_TASKS, NetHackNative
from pufferbox_nethack.plugin import TASKS, make_nethack

import pufferbox.vector
from pufferbox.buffers import Buffers
from pufferbox.emulation import emulate
from pufferbox.registry import get_registry

WEST, KICK, MORE = 4, 20, 0  # indices into nle's TASK_ACTIONS


def actions(steps: int, num_envs: int, seed: int = 0) -> np.ndarray:
    """``(steps, num_envs)``: random play, except env 1 kicks the western wall (and dies of it)."""
    table = np.random.default_rng(seed).integers(0, 23, (steps, num_envs))
    if num_envs > 1:
        phase = np.arange(steps) % 40
        table[:, 1] = np.where((phase < 20) | (phase % 2 == 1), WEST, KICK)
    return table


def episode_rows(episodes) -> list[dict]:
    """One dict per finished episode (``env_id``, return, length and the declared metrics), for readable diffs."""
    return [
        {
            "env_id": env,
            "episode_return": ret,
            "episode_length": n,
            **{name: values[k] for name, values in episodes.metrics.items()},
        }
        for k, (env, ret, n) in enumerate(
            zip(episodes.env_ids.tolist(), episodes.returns.tolist(), episodes.lengths.tolist())
        )
    ]


def play(
    name: str, native: bool, table: np.ndarray, env_kwargs: dict, backend: str = "serial", **backend_kwargs: Any
) -> list[tuple]:
    """Every step's rows and episode infos (sorted by env), copied."""
    with pufferbox.vector.make(
        name, backend=backend, num_envs=table.shape[1], env_kwargs=env_kwargs, native=native, **backend_kwargs
    ) as venv:
        venv.async_reset(seed=0)
        obs, rewards, terminals, truncations, infos, _, masks = venv.recv()
        run = [(obs.copy(), rewards.copy(), terminals.copy(), truncations.copy(), masks.copy(), [])]
        for row in table:
            venv.send(row)
            obs, rewards, terminals, truncations, infos, _, masks = venv.recv()
            ended = sorted((sorted(row.items()) for row in episode_rows(infos)), key=str)
            run.append((obs.copy(), rewards.copy(), terminals.copy(), truncations.copy(), masks.copy(), ended))
    return run


def assert_same(native: list[tuple], emulated: list[tuple]) -> None:
    assert len(native) == len(emulated)
    fields = ("observations", "rewards", "terminals", "truncations", "masks")
    for t, (a, b) in enumerate(zip(native, emulated)):
        for field, x, y in zip(fields, a[:5], b[:5]):
            assert x.dtype == y.dtype and np.array_equal(x, y), f"step {t - 1}: {field} differ"
        assert a[5] == b[5], f"step {t - 1}: infos differ: native {a[5]} vs emulated {b[5]}"


def episode_ends(run: list[tuple]) -> tuple[int, int]:
    terminated = sum(int(step[2].sum()) for step in run)
    truncated = sum(int(step[3].sum()) for step in run)
    return terminated, truncated


@pytest.mark.parametrize("task", sorted(NATIVE_TASKS))
def test_native_block_equals_the_emulated_env_bit_for_bit(task):
    name = "nethack" if task == "score" else f"nethack/{task}"
    table, kwargs = actions(600, 3), {"max_episode_steps": 60}
    emulated = play(name, False, table, kwargs)
    assert_same(play(name, True, table, kwargs), emulated)
    terminated, truncated = episode_ends(emulated)
    assert terminated and truncated, "the pattern should end episodes both ways"
    if task not in SUCCESS_TASKS:  # their reward is success only (see the staircase test)
        rewards = np.concatenate([step[1] for step in emulated])
        assert len(np.unique(rewards)) > 2, "rewards beyond 0 and the frozen-step penalty"


def test_staircase_success_ends_the_episode_with_its_reward():
    """Running around (nle's long moves) finds the down stairs: TASK_SUCCESSFUL, reward 1 + penalty."""
    table, kwargs = np.random.default_rng(0).integers(9, 17, (300, 3)), {"max_episode_steps": 100}
    emulated = play("nethack/staircase", False, table, kwargs)
    assert_same(play("nethack/staircase", True, table, kwargs), emulated)
    successes = [(t, dict(info)) for t, step in enumerate(emulated) for info in step[5] if dict(info)["end_status"] == 2]
    assert successes
    for t, info in successes:
        assert emulated[t][2][info["env_id"]] and emulated[t][1][info["env_id"]] in (np.float32(1.0), np.float32(0.99))


@pytest.mark.parametrize("mode", ["exp", "square", "linear", "always"])
def test_every_time_penalty_mode_matches(mode):
    # The frozen-step count spans episodes in nle (it is never reset): the 30-step limit crosses it.
    table, kwargs = actions(90, 2, seed=1), {"max_episode_steps": 30, "penalty_mode": mode, "penalty_time": -0.001}
    assert_same(play("nethack", True, table, kwargs), play("nethack", False, table, kwargs))


@pytest.mark.parametrize(
    "layout", [{"num_workers": 2}, {"num_workers": 1, "main_envs": 2}], ids=["2 workers", "main process + 1 worker"]
)
def test_the_multiprocessing_backend_steps_the_native_block_like_serial_emulation(layout):
    from pufferbox.vector.multiprocessing import MultiprocessingVectorEnv

    if "main_envs" in layout and "main_envs" not in inspect.signature(MultiprocessingVectorEnv).parameters:
        pytest.skip("this multiprocessing backend has no main_envs")
    table, kwargs = actions(150, 4, seed=2), {"max_episode_steps": 50}
    emulated = play("nethack", False, table, kwargs)
    assert_same(play("nethack", True, table, kwargs, backend="multiprocessing", **layout), emulated)
    assert all(episode_ends(emulated))


def test_nle_aborts_at_its_own_5000_steps_without_a_time_limit():
    """No ``TimeLimit``: nle quits the game at step 5000 (``terminated``; its ``truncated`` lags a step)."""
    table = np.full((5001, 1), MORE)  # Enter outside a prompt: no game time passes, nothing can kill
    table[::7] = WEST
    kwargs = {"max_episode_steps": None}
    emulated = play("nethack", False, table, kwargs)
    assert_same(play("nethack", True, table, kwargs), emulated)
    _, _, terminated, truncated, _, infos = emulated[5000]
    assert terminated[0] and not truncated[0] and infos
    assert dict(infos[0])["end_status"] == -1 and dict(infos[0])["episode_length"] == 5000  # ABORTED


def test_rows_re_pointed_after_reset_are_copied_into():
    """nle keeps writing the first rows once reset; the block then copies into the new ones, as the emulator does."""
    block = NetHackNative(2, max_episode_steps=25)
    emulators = [emulate(make_nethack("score", max_episode_steps=25), name="nethack") for _ in range(2)]
    for game in block.games:  # bound at first: nle writes into the block's rows, nothing is copied
        assert not game.copies and np.shares_memory(game.core._obs_buffers["glyphs"], block.buffers.observations)
    block.vec_reset(seed=4)
    for i, env in enumerate(emulators):
        env.vec_reset(seed=4 + i)
    for t, row in enumerate(actions(80, 2, seed=3)):
        if t == 10:
            block.set_buffers(Buffers.allocate(block.obs_spec, block.act_spec, 2))
            assert all(game.copies for game in block.games)
        infos = block.vec_step(row)
        expected = [env.vec_step(row[i : i + 1]) for i, env in enumerate(emulators)]
        for i, env in enumerate(emulators):
            assert np.array_equal(block.buffers.observations[i], env.buffers.observations[0]), f"step {t}, env {i}"
            assert block.buffers.rewards[i] == env.buffers.rewards[0]
        assert infos.returns.tolist() == [r for e in expected for r in e.returns.tolist()]
    block.close()
    for env in emulators:
        env.close()


def test_native_tasks_and_refusals():
    registry = get_registry()
    for task in TASKS:
        spec = registry.get("nethack" if task == "score" else f"nethack/{task}")
        assert (spec.build.native is not None) == (task in NATIVE_TASKS)
    assert "challenge" not in NATIVE_TASKS  # unseedable: nothing could show it equal to the gym env
    with pytest.raises(ValueError, match="no native block for task 'challenge'"):
        NetHackNative(1, task="challenge")
    with pytest.raises(ValueError, match="render_mode"):
        NetHackNative(1, render_mode="ansi")
    block = NetHackNative(1)
    with pytest.raises(RuntimeError, match="before reset"):
        block.vec_step(np.array([0]))
    block.close()


def test_a_seed_fixes_the_games_after_it_too():
    """nle reseeds its RNGs from entropy on every unseeded reset; the plugin continues the seed's sequence."""
    twins = [make_nethack("score") for _ in range(2)]
    first = [env.reset(seed=7)[0]["glyphs"].copy() for env in twins]
    second = [env.reset()[0]["glyphs"].copy() for env in twins]
    assert np.array_equal(first[0], first[1]) and np.array_equal(second[0], second[1])
    assert not np.array_equal(first[0], second[0])  # a new game, not the seeded one again
    for env in twins:
        env.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the signal masks from Linux's /proc")
def test_a_finished_game_leaves_no_signal_ignored():
    """NetHack's end of game sets SIGHUP/SIGXCPU to ignored in C; the next reset (and close) restore them."""

    def ignored() -> int:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1], 16) for line in status if line.startswith("SigIgn"))

    hup_or_xcpu = (1 << (signal.SIGHUP - 1)) | (1 << (signal.SIGXCPU - 1))
    before = ignored() & hup_or_xcpu  # e.g. SIGHUP under nohup: that is Python's disposition, kept
    if before == hup_or_xcpu:
        pytest.skip("SIGHUP and SIGXCPU are both ignored already (inherited): nothing a game could change")
    env = make_nethack("score", max_episode_steps=10_000)
    try:
        env.reset(seed=0)
        play_randomly = np.random.default_rng(0).integers(0, 23, 5000)  # this game dies after ~730 steps
        for action in play_randomly:
            if env.step(int(action))[2]:
                break
        else:
            pytest.fail("the character did not die: the test would check nothing")
        # nle's doing (if a future nle stops doing it, this test has nothing left to check)
        assert ignored() & hup_or_xcpu != before, "nle no longer ignores SIGHUP/SIGXCPU at game end: drop the workaround"
        env.reset()
        assert ignored() & hup_or_xcpu == before, f"SigIgn {ignored():#x} after reset"
        for action in play_randomly:
            if env.step(int(action))[2]:
                break
    finally:
        env.close()
    assert ignored() & hup_or_xcpu == before, f"SigIgn {ignored():#x} after close"
