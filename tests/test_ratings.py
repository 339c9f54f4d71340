"""One ratings module (pufferbox/train/ratings.py) for the league's head-to-head ratings and the
tournament's evaluated scores: both import it, and its tie rule decides the tournament's parents."""

from __future__ import annotations

import pytest

from pufferbox.tournament import generator
from pufferbox.tournament.leaderboard import Entry
from pufferbox.train import league, ratings
from pufferbox.train.ratings import COLLAPSED, NOISE_Z, clearly_behind, standard_error


def test_the_league_and_the_tournament_rank_with_the_same_module():
    assert league.Ratings is ratings.Ratings and league.MatchResult is ratings.MatchResult
    assert league.wilson is ratings.wilson
    assert generator.clearly_behind is ratings.clearly_behind


def test_standard_error_of_a_mean_score():
    assert standard_error(30.0, 9) == pytest.approx(10.0)
    assert standard_error(30.0, 0) == 30.0  # no episodes: no shrinking by sqrt(0)


@pytest.mark.parametrize(
    "score, se, best, best_se, behind",
    [
        (380.0, 19.0, 420.0, 28.0, False),  # 40 below, within NOISE_Z * (19 + 28) = 94 and 0.75 * 420: a tie
        (100.0, 0.0, 420.0, 0.0, True),  # beyond COLLAPSED * |best| = 315 below, however certain
        (300.0, 1.0, 420.0, 1.0, False),  # 120 below: beyond the noise, inside the collapse margin
        (-50.0, 1.0, 10.0, 1.0, True),  # the margin is on |best|: 7.5 below a best of 10
    ],
)
def test_clearly_behind_is_the_larger_of_the_noise_and_the_collapse_margin(score, se, best, best_se, behind):
    assert clearly_behind(score, se, best, best_se) is behind
    margin = max(NOISE_Z * (se + best_se), COLLAPSED * abs(best))
    assert behind == (score < best - margin)


def test_the_generator_picks_parents_by_that_rule():
    best = Entry(pod=0, score=420.0, score_std=90.0, episodes=10, steps=80_000, generation=8)
    tie = Entry(pod=1, score=380.0, score_std=60.0, episodes=10, steps=110_000, generation=11)
    behind = Entry(pod=2, score=100.0, score_std=30.0, episodes=10, steps=140_000, generation=14)
    assert generator.pick_parent([best, tie, behind]) is tie  # the deepest agent not clearly behind
