"""``league.scripted_opponent``: in a share of the careless episodes the non-learning group plays a
named move function instead of uniform legal moves, still masked out of training (:class:`ScriptedSeats`)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from click.testing import CliRunner
from gymnasium import spaces

from pufferbox.cli import cli, load_commands
from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.config import ConfigError, LeagueConfig
from pufferbox.train.scripted_seats import ScriptedSeats, careless_seats

MASKED = ObservationSpec(
    spaces.Dict({"board": spaces.Box(0, 9, (2,), np.float32), "action_mask": spaces.Box(0, 1, (4,), np.int8)})
)


def last_legal(observations: dict, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A scripted player that reads its observation: the highest legal choice, checked against ``board``."""
    assert observations["board"].shape == (len(legal), 2) and (observations["board"] == 7).all()
    return legal.shape[1] - 1 - legal[:, ::-1].argmax(1)


def batch(rows: int) -> np.ndarray:
    one = MASKED.flatten({"board": np.full(2, 7, np.float32), "action_mask": np.array([1, 1, 1, 0], np.int8)})
    return np.repeat(one[None], rows, axis=0)


def seats(scripted_share: float, num_envs: int = 200) -> ScriptedSeats:
    act = ActionSpec(spaces.Discrete(4))
    return ScriptedSeats(last_legal, scripted_share, 1.0, np.array([0, 1]), num_envs, MASKED, act, 5)


def test_scripted_episodes_play_the_function_and_the_rest_play_uniformly_untrained():
    rows, obs = np.arange(400), batch(400)
    actions = np.full(400, 3)  # the policy's choice, illegal
    s = seats(0.5)
    masks = s.apply(rows, obs, np.ones(400, bool), actions, np.ones(400, bool))
    careless = ~masks
    assert careless.reshape(200, 2).sum(1).tolist() == [1] * 200  # one group of every env, never trained
    by_script = careless & s.scripted[rows // 2]
    assert 60 < by_script.sum() < 140 and (actions[by_script] == 2).all()  # the function's move
    uniform = careless & ~s.scripted[rows // 2]
    assert set(actions[uniform].tolist()) == {0, 1, 2}  # uniform over the legal choices
    assert (actions[masks] == 3).all()  # the learning group's actions are the policy's
    for _ in range(3):  # mid-episode: the scripted episodes stay scripted
        again = np.full(400, 3)
        s.apply(rows, obs, np.zeros(400, bool), again, np.ones(400, bool))
        assert (again[by_script] == 2).all()


def test_scripted_share_one_scripts_every_careless_episode():
    actions = np.full(40, 3)
    masks = seats(1.0, 20).apply(np.arange(40), batch(40), np.ones(40, bool), actions, np.ones(40, bool))
    assert (actions[~masks] == 2).all() and (actions[masks] == 3).all()


def test_without_a_script_the_seats_are_uniform_and_a_bad_name_is_one_line():
    venv = types.SimpleNamespace(num_envs=4, obs_spec=MASKED, act_spec=ActionSpec(spaces.Discrete(4)))
    plain = careless_seats(LeagueConfig(random_opponent=0.5), np.array([0, 1]), venv, 0)
    assert not isinstance(plain, ScriptedSeats)
    sys.modules[__name__].last_legal = last_legal
    named = careless_seats(LeagueConfig(random_opponent=0.5, scripted_opponent=f"{__name__}:last_legal"), [0, 1], venv, 0)
    assert isinstance(named, ScriptedSeats) and named.move is last_legal
    for bad in ("no_such_module_xyz:move", f"{__name__}:no_such_function", f"{__name__}:MASKED"):
        with pytest.raises(ConfigError, match="league.scripted_opponent="):
            careless_seats(LeagueConfig(random_opponent=0.5, scripted_opponent=bad), np.array([0, 1]), venv, 0)
    with pytest.raises(ConfigError, match="league.scripted_share=1.5"):
        careless_seats(LeagueConfig(random_opponent=0.5, scripted_opponent="x:y", scripted_share=1.5), [0, 1], venv, 0)


def test_a_scripted_opponent_that_cannot_be_imported_is_one_line_before_the_run_dir(tmp_path):
    load_commands()
    run = tmp_path / "c4"
    args = ["train", "ocean/connect4", "--run-dir", str(run), "--total-steps", "512", "--num-envs", "8"]
    args += ["--set", "league.random_opponent=0.5", "--set", 'league.scripted_opponent="nope_xyz:move"']
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "league.scripted_opponent='nope_xyz:move' cannot be imported" in result.output
    assert len(result.output.strip().splitlines()) == 1
