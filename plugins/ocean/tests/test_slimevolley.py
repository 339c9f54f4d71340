"""Slime Volleyball's rules: points and serves, the net, ends, mirrored seats, the bot, clipped actions,
bad settings (the C block's equality with this reference is test_games')."""

from __future__ import annotations

import numpy as np
import pytest
from pufferbox_ocean.block import GameBlock
from pufferbox_ocean.games.slimevolley import BALL_R, NET_H, NET_W, SlimeVolley

STILL = {"left": [0.0, -1.0], "right": [0.0, -1.0]}


def game(**kwargs) -> SlimeVolley:
    env = SlimeVolley(**kwargs)
    env.reset(seed=0)
    return env


def drop(env: SlimeVolley, x: float) -> None:
    """The ball falling straight down at x, just above the ground."""
    env.bx, env.by, env.bvx, env.bvy = x, BALL_R + 0.001, 0.0, -0.01


def test_the_ball_landing_on_a_side_is_a_point_for_the_other_and_the_loser_receives_the_serve():
    env = game(frameskip=1)
    drop(env, 0.7)  # on the right's ground, away from its slime
    env.x[1] = 0.2
    _, rewards, terms, truncs, _ = env.step(STILL)
    assert rewards == {"left": 1.0, "right": -1.0} and env.score == [1, 0]
    assert env.bx == 0.5 and env.by == 1.0  # served onto the right's side
    assert not any(terms.values()) and not any(truncs.values())
    drop(env, -0.8)
    env.x[0] = -0.3
    _, rewards, _, _, _ = env.step(STILL)
    assert rewards == {"left": -1.0, "right": 1.0} and env.score == [1, 1] and env.bx == -0.5


def test_max_score_ends_the_game_with_its_metrics_and_the_time_limit_truncates():
    env = game(max_score=1, frameskip=1)
    drop(env, 0.7)
    env.x[1] = 0.2
    _, rewards, terms, truncs, infos = env.step(STILL)
    assert all(terms.values()) and not any(truncs.values()) and rewards["left"] == 1.0
    assert infos["left"] == {
        "left_points": 1.0, "right_points": 0.0, "left_win": 1.0, "right_win": 0.0, "against_bot": 0.0, "bot_beaten": 0.0,
    }  # fmt: skip
    env = game(max_steps=3)
    env.bx, env.by, env.bvy = -0.5, 1.9, 0.0
    results = [env.step(STILL) for _ in range(3)]
    assert not any(results[1][3].values()) and all(results[2][3].values()) and not any(results[2][2].values())
    assert results[2][4]["left"]["left_win"] == 0.0 and results[2][4]["left"]["right_win"] == 0.0  # 0-0


def test_the_net_sends_a_low_ball_back_and_bounces_one_on_its_top():
    env = game(frameskip=1)
    env.bx, env.by, env.bvx, env.bvy = -(NET_W + BALL_R) - 0.01, 0.1, 0.03, 0.05
    env.step(STILL)
    assert env.bx == -(NET_W + BALL_R) and env.bvx == -0.03
    env.bx, env.by, env.bvx, env.bvy = 0.0, NET_H + BALL_R + 0.001, 0.0, -0.01
    env.step(STILL)
    assert env.bvy > 0.0 and env.by > NET_H


def test_a_slime_returns_the_ball_and_a_jump_lifts_it():
    env = game(frameskip=1)
    env.bx, env.by, env.bvx, env.bvy = env.x[0], 0.15 + BALL_R + 0.01, 0.0, -0.03
    env.step(STILL)
    assert env.bvy > 0.0  # off the dome
    env = game(frameskip=1)
    env.step({"left": [0.0, 1.0], "right": [0.0, 1.0]})
    assert env.y[0] > 0.0 and env.y[0] == env.y[1]


def test_seats_see_the_court_mirrored_and_move_in_their_own_frame():
    env = game(frameskip=1)
    env.bx, env.by, env.bvx, env.bvy = 0.0, 1.5, 0.0, 0.0
    obs, *_ = env.step({"left": [1.0, -1.0], "right": [1.0, -1.0]})  # both toward the net
    assert env.x[0] == -env.x[1] and env.x[0] > -0.5
    np.testing.assert_array_equal(obs["left"], obs["right"])  # a mirrored court looks the same from both sides


def test_actions_past_one_are_clipped_and_nan_is_refused():
    a, b = game(frameskip=1), game(frameskip=1)
    oa, *_ = a.step({"left": [7.0, 3.0], "right": [-9.0, -2.0]})
    ob, *_ = b.step({"left": [1.0, 1.0], "right": [-1.0, -1.0]})
    np.testing.assert_array_equal(oa["left"], ob["left"])
    with pytest.raises(ValueError, match="a continuous action is NaN"):
        a.step({"left": [np.nan, 0.0], "right": [0.0, 0.0]})


def test_the_bot_plays_the_right_seat_and_wins_against_random_actions():
    block = GameBlock("slimevolley", SlimeVolley, 32, bot_share=100, max_steps=600)
    block.vec_reset(seed=3)
    rng = np.random.default_rng(0)
    won = lost = 0.0
    for _ in range(600):
        episodes = block.vec_step(rng.uniform(-1, 1, (64, 2)).astype(np.float32))
        won += episodes.metrics.get("right_win", np.zeros(0)).sum()
        lost += episodes.metrics.get("left_win", np.zeros(0)).sum()
    assert won >= 20 and lost <= 2
    a, b = game(bot_share=100), game(bot_share=100)
    for _ in range(50):  # its row's actions change nothing
        oa, *_ = a.step({"left": [0.3, -1.0], "right": [1.0, 1.0]})
        ob, *_ = b.step({"left": [0.3, -1.0], "right": [-1.0, -1.0]})
    np.testing.assert_array_equal(oa["left"], ob["left"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_score": 0}, "slimevolley: max_score must be >= 1, got 0"),
        ({"frameskip": "2"}, "slimevolley: frameskip must be an integer, got '2'"),
        ({"bot_share": 101}, "slimevolley: bot_share must be between 0 and 100, got 101"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        SlimeVolley(**kwargs)
    assert "\n" not in str(info.value)
