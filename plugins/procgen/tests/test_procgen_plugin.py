"""The Procgen plugin: 16 games, the Gymnasium adapter, the native block, encoder, missing deps, smoke training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from pufferbox_procgen.envs import GAMES, ProcgenBlock, ProcgenEnv
from pufferbox_procgen.policy import ImpalaResNet

import pufferbox.vector
from pufferbox.api import get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, smoke_train


def test_all_sixteen_games_are_registered_with_a_native_block():
    from procgen.env import ENV_NAMES

    assert sorted(GAMES) == sorted(ENV_NAMES)
    registry = get_registry()
    for game in GAMES:
        spec = registry.get(f"procgen/{game}")
        assert spec.build.native is ProcgenBlock and spec.build.kwargs == {"game": game}


def test_gymnasium_conformance_of_the_adapter():
    env = ProcgenEnv("coinrun", distribution_mode="hard")
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("game", ["bigfish", "maze"])
def test_pufferbox_conformance_including_native_equals_emulated(game):
    assert_conforms(get_registry().get(f"procgen/{game}"), steps=150)


def test_native_block_reports_episodes_like_the_adapters():
    """Long enough for bigfish episodes to end: autoreset and episode infos line up env by env."""
    spec = get_registry().get("procgen/bigfish")
    native = pufferbox.vector.make(spec, num_envs=4, native=True)
    emulated = pufferbox.vector.make(spec, num_envs=4, native=False)
    native.reset(seed=11)
    emulated.reset(seed=11)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(300):
        actions = rng.integers(15, size=4)
        a, b = native.step(actions), emulated.step(actions)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        ended += int(a[2].sum())
        if "episode_return" in a[4]:
            np.testing.assert_array_equal(a[4]["_episode_return"], b[4]["_episode_return"])
            np.testing.assert_allclose(a[4]["episode_return"], b[4]["episode_return"])
    assert ended > 0, "no bigfish episode ended in 300 random steps: the autoreset path went untested"
    native.close()
    emulated.close()


def test_bad_names_are_one_line_errors():
    with pytest.raises(ValueError, match="unknown Procgen game 'bigfsh'"):
        ProcgenEnv("bigfsh")
    with pytest.raises(ValueError, match="unknown distribution_mode 'medium'"):
        ProcgenBlock(2, game="bigfish", distribution_mode="medium")


def test_impala_resnet_on_a_batch_from_the_native_block():
    venv = pufferbox.vector.make("procgen/bigfish", num_envs=4)
    obs, _ = venv.reset(seed=0)
    encoder = ImpalaResNet(venv.obs_spec, venv.act_spec, hidden_size=256)
    out = encoder(torch.from_numpy(obs))
    assert out.shape == (4, 256) and encoder.hidden_size == 256 and torch.isfinite(out).all()
    out.sum().backward()
    no_grad = [n for n, p in encoder.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not no_grad, f"no gradient reaches {no_grad}"
    venv.close()


def test_envs_lists_procgen_as_unavailable_without_it_and_making_one_says_how_to_install():
    rows, error = assert_unavailable_without(["procgen/bigfish"], hide=["procgen"])
    assert "pip install -c tank/constraints.txt 'procgen-mirror==0.10.7'" in rows["procgen/bigfish"]["reason"]
    assert error.startswith("Error: env 'procgen/bigfish' is unavailable: missing procgen-mirror")


def test_info_shows_spaces_and_pinned_versions():
    data = info_json("procgen/bigfish")
    assert data["native_batched"] is True
    assert data["observation_space"] == "Box(0, 255, (64, 64, 3), uint8)" and data["action_space"] == "Discrete(15)"
    assert data["requires"] == {"procgen-mirror==0.10.7": "0.10.7", "gym3==0.3.3": "0.3.3"}


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("procgen/bigfish", tmp_path / "run", total_steps=4 * 64, num_envs=4)  # one update
