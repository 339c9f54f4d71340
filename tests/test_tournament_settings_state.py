"""The tournament's typed parts without Ray: :class:`TournamentSettings` (defaults defined once, shared by
the CLI and the driver, filled in and checked as before), :class:`Progress` and the pool's :class:`Slot`
state machine."""

from __future__ import annotations

import inspect
from dataclasses import fields

import click
import pytest

from pufferbox.cli import cli, load_commands
from pufferbox.tournament.orchestrator import run_tournament
from pufferbox.tournament.settings import TournamentError, TournamentSettings, setting_default
from pufferbox.tournament.state import Progress, Slot, SlotState, SlotStateError

RUN_OPTIONS = {"ray_address", "overrides", "run_dir", "resume", "as_json"}  # the run's, not the tournament's


def tournament_command() -> click.Command:
    load_commands()
    return cli.commands["tournament"]


def test_every_setting_is_one_cli_option_whose_default_is_the_settings_own():
    params = {p.name: p for p in tournament_command().params if p.name not in RUN_OPTIONS}
    assert set(params) == {f.name for f in fields(TournamentSettings)}  # the CLI builds the settings whole
    given = tournament_command().make_context("tournament", []).params  # what a bare command line passes
    for name in params:
        assert given[name] == setting_default(name), name
    assert params["pods"].default == TournamentSettings("x").pods == 4


def test_the_driver_writes_no_default_of_its_own():
    taken = set(inspect.signature(run_tournament).parameters)
    assert taken == {"settings", "run_dir", "overrides", "ray_address", "resume", "on_event"}
    assert not taken & {f.name for f in fields(TournamentSettings)} - {"settings"}


def test_resolved_fills_in_the_slices_as_the_budget_asks():
    s = TournamentSettings("cartpole", pods=4, total_steps=400_000).resolved(update_steps=2048)
    assert (s.slice_steps, s.first_slice_steps) == (25_000, 8192)  # a quarter of a pod's share; max(4 updates, 1/16)
    s = TournamentSettings("cartpole", hours=1.0).resolved(update_steps=2048)
    assert (s.slice_steps, s.first_slice_steps) == (50 * 2048, 4 * 2048)  # 1/16 of the longest is less
    s = TournamentSettings("cartpole", total_steps=10**6, slice_steps=1000, first_slice_steps=5000).resolved(100)
    assert s.first_slice_steps == 1000, "the first slice is never longer than the longest"
    s = TournamentSettings("tag", total_steps=10**6, score_opponent="random").resolved(100, score_group="runner")
    assert s.truncate_below == 0.0 and s.score_group == "runner"  # returns against itself do not compare


@pytest.mark.parametrize(
    "settings, message",
    [
        (TournamentSettings("cartpole"), "give exactly one budget"),
        (TournamentSettings("cartpole", total_steps=10, hours=1.0), "give exactly one budget"),
        (TournamentSettings("cartpole", total_steps=10, pods=0), "--pods must be at least 1, got 0"),
        (TournamentSettings("cartpole", total_steps=10, slice_growth=0.5), "--slice-growth must be at least 1"),
        (TournamentSettings("cartpole", total_steps=10, score_opponent="nobody"), "'nobody' is not one of self, random"),
    ],
)
def test_bad_settings_are_refused_in_one_line(settings, message):
    with pytest.raises(TournamentError) as err:
        settings.resolved(update_steps=128)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_settings_round_trip_through_the_board_and_old_boards_resume_as_they_ran():
    s = TournamentSettings("cartpole", total_steps=10, plugin="aadup-envs").resolved(update_steps=4)
    assert TournamentSettings.from_board(s.as_dict()) == s
    old = TournamentSettings.from_board({"env": "cartpole", "pods": 2, "total_steps": 100, "slice_steps": 50})
    assert (old.first_slice_steps, old.slice_growth, old.truncate_below) == (50, 1.0, 0.0)  # fixed slices, no truncation
    assert old.plugin is None and old.score_opponent == "self"


def test_progress_from_an_old_board_starts_its_new_counters_at_zero():
    stored = {"steps": 4096, "slices": 2, "lost": 0, "next_pod": 3, "wall_time": 1.5, "pod_time": 3.0}
    progress = Progress.from_board({**stored, "train_time": 2.0, "eval_time": 0.5, "gone_field": 1})
    assert (progress.truncated, progress.eval_steps, progress.lost_steps) == (0, 0, 0)
    assert Progress.from_board(progress.as_dict()) == progress and "gone_field" not in progress.as_dict()
    assert Progress.from_board(None) == Progress()


def test_a_slot_moves_idle_training_truncating_idle():
    slot = Slot(index=1, actor=None, name="pod", since=0.0)
    running = slot.start("ref", task="task", now=2.0)
    assert slot.state is SlotState.TRAINING and slot.running is running and running.steps == 0
    running.report = {"steps": 96}
    assert slot.truncate() is running and slot.state is SlotState.TRUNCATING
    assert slot.finish() is running and slot.state is SlotState.IDLE and slot.running is None
    slot.start("ref2", task="task2", now=3.0)
    assert slot.finish().ref == "ref2" and slot.state is SlotState.IDLE  # a slice that ends untruncated


@pytest.mark.parametrize(
    "moves, refused",
    [
        (["start", "start"], "cannot start a slice while training"),
        (["start", "truncate", "start"], "cannot start a slice while truncating"),
        (["truncate"], "cannot truncate while idle"),
        (["start", "truncate", "truncate"], "cannot truncate while truncating"),
        (["finish"], "cannot finish a slice while idle"),
    ],
)
def test_a_slot_refuses_moves_from_the_wrong_state(moves, refused):
    slot = Slot(index=0, actor=None, name="pod", since=0.0)
    *legal, last = moves
    act = {"start": lambda: slot.start("ref", task=None, now=0.0), "truncate": slot.truncate, "finish": slot.finish}
    for move in legal:
        act[move]()
    state = slot.state
    with pytest.raises(SlotStateError, match=refused):
        act[last]()
    assert slot.state is state, "a refused move changes nothing"
