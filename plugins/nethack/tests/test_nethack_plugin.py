"""The NetHack plugin: tasks, Dict flattening, encoder, ANSI rendering, missing-dependency errors, smoke training."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from pufferbox_nethack.plugin import TASKS, make_nethack
from pufferbox_nethack.policy import NetHackEncoder

import pufferbox.vector
from pufferbox.api import emulate, get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train


class RecordObservation(gymnasium.Wrapper):
    """Keeps the last raw observation, to compare with what the emulator flattened."""

    def reset(self, **kwargs: Any):
        self.last, info = self.env.reset(**kwargs)
        return self.last, info

    def step(self, action: Any):
        self.last, *rest = self.env.step(action)
        return (self.last, *rest)


def test_every_task_is_registered_and_builds():
    registry = get_registry()
    assert registry.get("nethack/score") is registry.get("nethack")
    for task in TASKS:
        spec = registry.get("nethack" if task == "score" else f"nethack/{task}")
        env = spec.make_raw()
        obs, _ = env.reset(seed=0)
        assert set(obs) == {"glyphs", "blstats", "message"}
        assert env.unwrapped.spec.id == TASKS[task]
        env.close()


def test_gymnasium_conformance_of_the_binding():
    env = make_nethack("score")
    check_env(env, skip_render_check=True)
    env.close()


def test_pufferbox_conformance_suite_passes():
    assert_conforms(get_registry().get("nethack"), steps=150)


def test_flattened_dict_matches_the_raw_observation_in_lock_step():
    recorder = RecordObservation(make_nethack("score"))
    emulated = emulate(recorder, name="nethack")
    emulated.vec_reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(100):
        tree = emulated.obs_spec.unflatten(emulated.buffers.observations)
        for key in ("glyphs", "blstats", "message"):
            np.testing.assert_array_equal(tree[key][0], recorder.last[key])
        infos = emulated.vec_step(np.array([rng.integers(23)]))
        if len(infos):  # auto-reset: the row already holds the next episode's first observation
            assert infos.lengths[0] > 0
    emulated.close()


def test_ansi_render_is_the_coloured_terminal():
    env = make_nethack("score", render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"glyphs", "blstats", "message"}  # the terminal is not part of the observation
    frame = env.render()
    assert isinstance(frame, str) and "\x1b[" in frame
    assert "Dlvl:1" in frame.replace("\x1b", "").replace("[0;37m", "").replace("[0;30m", "") or "Dlvl" in frame
    with pytest.raises(ValueError, match="render_mode"):
        make_nethack("score", render_mode="rgb_array")


def test_encoder_on_a_batch_from_the_vector_env():
    venv = pufferbox.vector.make("nethack", backend="serial", num_envs=3)
    first, _ = venv.reset(seed=0)  # the welcome message, so the message encoder gets gradients too
    first = first.copy()
    later, *_ = venv.step(np.array([1, 2, 3]))
    encoder = NetHackEncoder(venv.obs_spec, venv.act_spec, hidden_size=128)
    out = encoder(torch.from_numpy(np.concatenate([first, later])))
    assert out.shape == (6, 128) and encoder.hidden_size == 128 and torch.isfinite(out).all()
    out.sum().backward()
    no_grad = [n for n, p in encoder.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not no_grad, f"no gradient reaches {no_grad}"
    venv.close()


def test_envs_lists_nethack_as_unavailable_without_nle_and_making_one_says_how_to_install():
    rows, error = assert_unavailable_without(["nethack", "nethack/challenge"], hide=["nle"])
    for name in ("nethack", "nethack/challenge"):
        assert "pip install -c tank/constraints.txt 'nle==1.3.0'" in rows[name]["reason"]
    assert error == (
        "Error: env 'nethack' is unavailable: missing nle==1.3.0: run "
        "`pip install -c tank/constraints.txt 'nle==1.3.0'` (or `make setup`)"
    )


def test_info_shows_spaces_and_pinned_versions():
    data = info_json("nethack")
    assert [f["path"] for f in data["observation_fields"]] == ["blstats", "glyphs", "message"]
    assert data["action_space"] == "Discrete(23)"
    assert data["requires"] == {"nle==1.3.0": "1.3.0"}


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("nethack", tmp_path / "run", total_steps=2 * 64, num_envs=2)  # one update


def test_nle_writes_the_observation_into_the_backend_row_in_place():
    """Against an unbound twin in lock step: same rows and rewards, and the emulator copies nothing."""
    from nle import nethack

    from pufferbox.api import Buffers

    emulated = emulate(make_nethack("score", max_episode_steps=40), name="nethack")
    twin = make_nethack("score", max_episode_steps=40)
    rows = Buffers.allocate(emulated.obs_spec, emulated.act_spec, 3)
    emulated.set_buffers(rows.slice(1, 2))  # an inner row, as a backend hands it
    core = emulated.env.unwrapped.nethack
    for key, target, *_ in emulated.obs_keyed:
        assert core._obs_buffers[key] is target and np.shares_memory(target, rows.observations[1])
        # nle writes through its C pointer; the emulator's own copy (target[...] = value) would now raise
        target.flags.writeable = False
    emulated.vec_reset(seed=3)
    expected, _ = twin.reset(seed=3)
    rng, episodes = np.random.default_rng(1), 0
    for t in range(120):
        tree = emulated.obs_spec.unflatten(rows.observations)
        for key in ("glyphs", "blstats", "message"):
            np.testing.assert_array_equal(tree[key][1], expected[key], err_msg=f"step {t}: {key}")
        assert not rows.observations[[0, 2]].any()  # the neighbours' rows stay untouched
        action = int(rng.integers(23))
        infos = emulated.vec_step(np.array([action]))
        expected, reward, terminated, truncated, _ = twin.step(action)
        assert (rows.rewards[1], rows.terminals[1], rows.truncations[1]) == (np.float32(reward), terminated, truncated)
        if terminated or truncated:
            assert len(infos) == 1 and infos.lengths[0] > 0
            # The auto-reset wrote the next game's first screen in place (turn 1; the twin has not
            # reset into that game, so re-sync both with one seed).
            tree = emulated.obs_spec.unflatten(rows.observations)
            assert tree["blstats"][1][nethack.NLE_BL_TIME] == 1
            episodes += 1
            emulated.vec_reset(seed=100 + episodes)
            expected, _ = twin.reset(seed=100 + episodes)
    assert episodes >= 2
    emulated.close()
    twin.close()


def test_rebinding_after_reset_falls_back_to_copying():
    """nle refuses new buffers once reset: a later re-point keeps the game going and copies instead."""
    from pufferbox.api import Buffers

    emulated = emulate(make_nethack("score"), name="nethack")
    twin = make_nethack("score")
    emulated.vec_reset(seed=5)
    expected, _ = twin.reset(seed=5)
    first_row = emulated.buffers.observations
    actions = np.random.default_rng(2).integers(23, size=60).tolist()
    for t, action in enumerate(actions):
        if t == 30:
            emulated.set_buffers(Buffers.allocate(emulated.obs_spec, emulated.act_spec, 1))
            assert emulated.env.pufferbox_bind_observation_buffers(dict(emulated.obs_targets)) == ()
        emulated.vec_step(np.array([action]))
        expected, reward, terminated, truncated, _ = twin.step(action)
        tree = emulated.obs_spec.unflatten(emulated.buffers.observations)
        for key in ("glyphs", "blstats", "message"):
            np.testing.assert_array_equal(tree[key][0], expected[key], err_msg=f"step {t}: {key}")
        assert emulated.buffers.rewards[0] == np.float32(reward)
        assert not (terminated or truncated)
    assert not np.shares_memory(first_row, emulated.buffers.observations)
    emulated.close()
    twin.close()


def test_the_multiprocessing_backend_rows_are_written_by_nle_and_match_serial():
    actions = np.random.default_rng(3).integers(23, size=(40, 2))
    results = []
    for backend in ("serial", "multiprocessing"):
        kwargs = {"num_workers": 2} if backend == "multiprocessing" else {}
        with pufferbox.vector.make("nethack", backend=backend, num_envs=2, **kwargs) as venv:
            obs, _ = venv.reset(seed=0)
            run = [obs.copy()]
            for row in actions:
                obs, rewards, *_ = venv.step(row)
                run.append(np.concatenate([obs, rewards.view(np.uint8).reshape(2, -1)], axis=1).copy())
            results.append(run)
    for t, (a, b) in enumerate(zip(*results)):
        np.testing.assert_array_equal(a, b, err_msg=f"step {t}")
