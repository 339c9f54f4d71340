"""The PettingZoo plugin: butterfly + MPE envs in fixed agent slots, padding, missing deps, smoke training."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from pufferbox_pettingzoo.plugin import BUTTERFLY, MPE_ALIKE, MPE_PADDED, make_mpe
from pufferbox_pettingzoo.uniform import PadObservations

import pufferbox.vector
from pufferbox.api import SpaceError, get_registry
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without, info_json, run_cli, smoke_train

MPE_NAMES = [f"mpe/{name}" for name in {**MPE_ALIKE, **MPE_PADDED}]


@pytest.mark.parametrize("name", MPE_NAMES + ["knights_archers_zombies", "cooperative_pong"])
def test_pufferbox_conformance_suite_passes(name):
    assert_conforms(get_registry().get(name), steps=60)


def test_pistonball_conformance_on_a_short_rollout():
    # 20 agents with 457x120x3 pixel observations: a short rollout keeps the test under ~10 s.
    assert_conforms(get_registry().get("pistonball"), steps=15, num_envs=2)


@pytest.mark.parametrize("name", ["mpe/simple_tag", "mpe/simple_spread", "knights_archers_zombies"])
def test_pettingzoo_parallel_api_of_the_binding(name):
    parallel_api_test(get_registry().get(name).make_raw(), num_cycles=50)


def test_padding_keeps_each_role_observation_and_marks_the_role():
    from mpe2 import simple_tag_v3

    raw = simple_tag_v3.parallel_env()
    padded = PadObservations(simple_tag_v3.parallel_env())
    raw_obs, _ = raw.reset(seed=4)
    obs, _ = padded.reset(seed=4)
    assert padded.observation_space("agent_0").shape == (16 + 2,)
    for agent in raw.possible_agents:
        n = raw_obs[agent].shape[0]
        np.testing.assert_array_equal(obs[agent][:n], raw_obs[agent])
        assert not obs[agent][n:16].any()
        role = obs[agent][16:]
        assert role.sum() == 1 and role[0 if agent.startswith("adversary") else 1] == 1
        assert padded.observation_space(agent).contains(obs[agent])


def test_roles_with_different_spaces_keep_their_own_in_rows_of_one_width():
    from mpe2 import simple_speaker_listener_v4

    with pytest.raises(ValueError, match="only Discrete ones can be padded"):
        PadObservations(simple_speaker_listener_v4.parallel_env(continuous_actions=True))
    padded = PadObservations(simple_speaker_listener_v4.parallel_env())  # Discrete 3 and 5: padded to 5
    assert str(padded.action_space("speaker_0")) == str(padded.action_space("listener_0")) == "Discrete(5)"
    from pufferbox.api import emulate

    env = emulate(make_mpe("simple_tag_v3"), name="unpadded simple_tag")  # adversaries see 16 floats, the agent 14
    assert env.obs_spec.flat_size == 16 and [o.flat_size for o, _ in env.agent_specs] == [16, 16, 16, 14]
    env.close()
    # Continuous speaker (3) and listener (5) actions have no common row: refused, naming the fix.
    with pytest.raises(SpaceError, match="share no row; give agents Discrete actions, or MultiDiscrete/Box actions of one"):
        emulate(simple_speaker_listener_v4.parallel_env(continuous_actions=True), name="continuous speaker_listener")


def test_fixed_agent_slots_through_the_vector_env():
    venv = pufferbox.vector.make("mpe/simple_tag", num_envs=2)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (2 * 4, 16) and venv.agents_per_env == 4  # the widest role (adversaries: 16 floats)
    ended = 0
    for _ in range(30):  # max_cycles=25: every env ends once and auto-resets
        obs, _rewards, _terminals, truncations, _infos = venv.step(np.zeros(8, dtype=np.int64))
        ended += int(truncations.any())
    assert ended >= 1
    venv.close()


def test_butterfly_binding_sets_a_headless_video_driver(monkeypatch):
    monkeypatch.delenv("SDL_VIDEODRIVER", raising=False)
    env = get_registry().get("knights_archers_zombies").make_raw()
    import os

    assert os.environ["SDL_VIDEODRIVER"] == "dummy"
    env.close()


def test_envs_lists_them_as_unavailable_without_their_packages_and_says_how_to_install():
    rows, error = assert_unavailable_without(
        ["pistonball", "mpe/simple_spread"], hide=["pymunk", "mpe2"], made="mpe/simple_spread", made_hide=["mpe2"]
    )
    assert "'pymunk==7.3.1'" in rows["pistonball"]["reason"]
    assert "pip install -c tank/constraints.txt 'mpe2==1.1.1'" in rows["mpe/simple_spread"]["reason"]
    assert error == (
        "Error: env 'mpe/simple_spread' is unavailable: missing mpe2==1.1.1: run "
        "`pip install -c tank/constraints.txt 'mpe2==1.1.1'` (or `make setup`)"
    )


def test_info_shows_agents_spaces_and_pinned_versions():
    data = info_json("knights_archers_zombies")
    assert data["agents_per_env"] == 4 and data["action_space"] == "Discrete(6)"
    assert data["requires"]["pettingzoo[butterfly]==1.27.0"] == "1.27.0"
    assert data["requires"]["pymunk==7.3.1"] == "7.3.1"
    assert set(BUTTERFLY) <= {row["name"] for row in json.loads(run_cli("envs", "--json").stdout)}


@pytest.mark.slow
def test_smoke_training_runs_on_cpu(tmp_path):
    smoke_train("mpe/simple_spread", tmp_path / "run", total_steps=4096, num_envs=2)
