"""Tournaments on an env with agent groups score a checkpoint by one group (issue 16): which group,
against whom, persisted with the tournament, and refused in one line when it cannot be."""

from __future__ import annotations

import numpy as np
import pytest

from pufferbox.registry import get_registry
from pufferbox.tournament.generator import PodTask
from pufferbox.tournament.orchestrator import TournamentError, score_group_of, slice_config
from pufferbox.tournament.pod import Pod
from pufferbox.tournament.settings import TournamentSettings
from pufferbox.train.config import RunConfig, resolve_run_config
from pufferbox.train.league import RANDOM, play_match

QUICK = ["vec.num_envs=2", "train.num_steps=32", "train.checkpoint_interval=0", "policy.hidden_size=16"]


def pod_config(env: str, extra: list[str] | None = None) -> RunConfig:
    spec = get_registry().get(env)
    return slice_config(resolve_run_config(spec.training.config, overrides=[*QUICK, *(extra or [])]))


def test_the_score_group_defaults_to_the_first_learning_group():
    tag = get_registry().get("tag")
    assert score_group_of(tag, pod_config("tag"), None) == "tagger"
    assert score_group_of(tag, pod_config("tag", ['league.frozen=["tagger"]']), None) == "runner"
    assert score_group_of(tag, pod_config("tag"), "runner") == "runner"
    assert score_group_of(get_registry().get("cartpole"), pod_config("cartpole"), None) is None


@pytest.mark.parametrize(
    ("env", "asked", "message"),
    [
        ("tag", "seeker", "--score-group: unknown group 'seeker'; tag's groups are ['tagger', 'runner']"),
        ("cartpole", "tagger", "--score-group tagger: cartpole trains one shared policy (no agent groups)"),
    ],
)
def test_a_bad_score_group_is_one_line(env, asked, message):
    with pytest.raises(TournamentError) as err:
        score_group_of(get_registry().get(env), pod_config(env), asked)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_boards_from_before_group_scoring_resume_as_they_were_scored():
    stored = {
        "env": "cartpole",
        "pods": 2,
        "total_steps": 100,
        "hours": None,
        "slice_steps": 50,
        "eval_episodes": 2,
        "capacity": 3,
        "cpus_per_pod": 1.0,
        "seed": 0,
    }
    settings = TournamentSettings.from_board(stored)
    assert settings.score_group is None and settings.score_opponent == "self"


def run_pod_slice(tmp_path, group: str | None, opponent: str = "self"):
    pod = Pod("tag", pod_config("tag"), str(tmp_path), 0, score_group=group, opponent=opponent)
    try:
        return pod.run_slice(PodTask(pod=0, hyperparams={}, seed=3), steps=128, eval_episodes=4)
    finally:
        pod.close()


@pytest.mark.parametrize("opponent", ["self", "random"])
def test_a_pod_scores_a_grouped_checkpoint_by_its_group(tmp_path, opponent):
    result = run_pod_slice(tmp_path / "pods", "runner", opponent)
    checkpoint = tmp_path / "slice.pt"
    checkpoint.write_bytes(result.checkpoint)
    # The score is the runners' mean return over 4 games of the slice's checkpoint on the runner side,
    # the same checkpoint (or uniform actions) tagging: replayed here with the pod's evaluation seed.
    match = play_match(checkpoint, checkpoint if opponent == "self" else RANDOM, episodes=4, side="runner", seed=4)
    runner_returns = [game["runner"] for game in match.returns]
    assert result.episodes == 4
    assert result.score == pytest.approx(np.mean(runner_returns))
    assert result.score_std == pytest.approx(np.std(runner_returns))
    assert result.score <= 0.0, "a runner's return is minus its tag penalties"
    assert result.eval_steps == match.steps > 0


def test_without_a_group_a_pod_scores_every_agent_as_before(tmp_path):
    from pufferbox.train.evaluate import evaluate

    result = run_pod_slice(tmp_path / "pods", None)
    checkpoint = tmp_path / "slice.pt"
    checkpoint.write_bytes(result.checkpoint)
    assert result.score == pytest.approx(evaluate("tag", checkpoint, episodes=4, seed=4)["mean_return"])


def test_the_pods_training_return_is_the_score_groups():
    pod = Pod.__new__(Pod)
    metrics = {"episodes": 3, "episode_return": 0.25, "tagger/episode_return": 1.5, "runner/episode_return": -0.4}
    pod.score_group, pod.opponent = "runner", "self"
    assert pod.training_return(metrics) == -0.4
    pod.opponent = "random"  # scores against random play do not compare with returns against itself
    assert pod.training_return(metrics) is None
    pod.score_group = None
    assert pod.training_return(metrics) == 0.25


@pytest.mark.slow
def test_a_tournament_on_tag_scores_and_stores_the_runner_group(local_ray, tmp_path):
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands
    from pufferbox.tournament.leaderboard import Leaderboard

    load_commands()
    run_dir = tmp_path / "t"
    args = ["tournament", "tag", "--pods", "1", "--total-steps", "256", "--slice-steps", "128"]
    args += [
        "--eval-episodes",
        "2",
        "--score-group",
        "runner",
        "--score-opponent",
        "self",
        "--run-dir",
        str(run_dir),
        "--json",
    ]
    args += [arg for override in QUICK for arg in ("--set", override)]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    board = Leaderboard.open_read_only(run_dir)
    try:
        settings = TournamentSettings.from_board(board.get_state("settings"))
        scores = [entry.score for entry in board.entries()]
    finally:
        board.close()
    assert settings.score_group == "runner" and settings.score_opponent == "self"
    assert scores and all(score <= 0.0 for score in scores), scores

    bad = CliRunner().invoke(
        cli, ["tournament", "tag", "--total-steps", "256", "--score-group", "seeker", "--run-dir", str(tmp_path / "bad")]
    )
    assert bad.exit_code == 2 and "unknown group 'seeker'" in bad.output


@pytest.mark.slow
def test_a_tournaments_frozen_group_is_filled_from_the_leaderboard(local_ray, tmp_path):
    """``[league] frozen`` in a tournament: the frozen runners play policies of the board (here its taggers,
    ``pool_source``), not snapshots of their own pod: each later slice's runner is a board entry's tagger."""
    import torch

    from pufferbox.tournament.leaderboard import Leaderboard
    from pufferbox.tournament.orchestrator import TournamentSettings, run_tournament
    from pufferbox.train.checkpoint import load_checkpoint

    league = ['league.frozen=["runner"]', 'league.pool_source="tagger"', 'league.pool="uniform"']
    overrides = [*QUICK, *league, "league.refresh_interval=1"]
    run_tournament(
        TournamentSettings(
            "tag",
            pods=1,
            total_steps=960,
            slice_steps=128,
            first_slice_steps=128,
            slice_growth=1.0,
            truncate_below=0.0,
            eval_episodes=2,
        ),
        run_dir=tmp_path / "t",
        overrides=overrides,
    )
    board = Leaderboard.open_read_only(tmp_path / "t")
    try:
        entries = sorted(board.entries(), key=lambda e: e.id)
        models = {e.id: load_checkpoint(str(e.checkpoint))["model"] for e in entries}
    finally:
        board.close()
    assert len(entries) >= 3

    def group(model: dict, name: str) -> dict:
        return {k.split(".", 2)[2]: v for k, v in model.items() if k.startswith(f"groups.{name}.")}

    def same(a: dict, b: dict) -> bool:
        return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    first, later = entries[0], entries[1:]
    assert not same(group(models[first.id], "runner"), group(models[first.id], "tagger"))
    for entry in later:  # dispatched once the earlier entries were on the board
        runner = group(models[entry.id], "runner")
        earlier = [e.id for e in entries if e.id < entry.id]
        assert any(same(runner, group(models[e], "tagger")) for e in earlier), f"entry {entry.id}'s runner"
    pool = sorted(p.name for p in (tmp_path / "t" / "pods" / "slot-0" / "league-pool" / "tagger").glob("snap-*.pt"))
    assert pool == [f"snap-{e.id:08d}.pt" for e in entries[:-1]]  # the last slice saw every earlier entry


@pytest.mark.parametrize(("updates", "truncated"), [(1, False), (3, True)], ids=["last-update", "mid-slice"])
def test_a_stop_asked_during_an_update_ends_the_slice_unless_that_update_was_its_last(tmp_path, updates, truncated):
    """The driver's stop lands while an update runs: the slice ends after that update, truncated and
    unevaluated; when that update was the slice's last, nothing was stopped and the slice is evaluated."""
    pod = Pod("cartpole", pod_config("cartpole"), str(tmp_path), 0)
    build = pod.trainer_for

    def trainer_whose_updates_get_stopped(config):
        trainer = build(config)
        update = trainer.train_update

        def update_and_stop():
            metrics = update()
            pod.truncate(0, "behind the board")
            return metrics

        trainer.train_update = update_and_stop
        return trainer

    pod.trainer_for = trainer_whose_updates_get_stopped
    per_update = 2 * 32  # QUICK: 2 envs x 32 steps
    try:
        result = pod.run_slice(PodTask(pod=0, hyperparams={}, seed=3), steps=updates * per_update, eval_episodes=2)
    finally:
        pod.close()
    if truncated:
        assert result.truncated == "behind the board" and 0 < result.steps < updates * per_update
        assert result.checkpoint == b"" and result.episodes == 0
    else:
        assert result.truncated == "" and result.steps >= per_update
        assert result.checkpoint and result.episodes == 2
