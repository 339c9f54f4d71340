"""Agent groups (issue 16, phase 1): a policy and optimizer per group, frozen groups and pools, matches, ratings."""

from __future__ import annotations

import copy
import json
import shutil

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.registry import get_registry
from pufferbox.train import snapshot
from pufferbox.train.config import resolve_config
from pufferbox.train.groups import (
    GroupError,
    GroupLayout,
    GroupLearner,
    Pool,
    outcome,
    resolve_layout,
)
from pufferbox.train.league import MatchResult, Ratings, play_match, wilson
from pufferbox.train.learner import Learner
from pufferbox.train.trainer import Trainer

QUICK = ["vec.num_envs=2", "train.num_steps=32", "train.checkpoint_interval=0", "policy.hidden_size=16"]


def tag_trainer(extra=(), run_dir=None) -> Trainer:
    return Trainer("tag", resolve_config(overrides=[*QUICK, *extra]), run_dir=run_dir)


def group_params(trainer: Trainer, group: str) -> dict[str, torch.Tensor]:
    prefix = f"groups.{group}."
    return {k: v.detach().clone() for k, v in trainer.agent.state_dict().items() if k.startswith(prefix)}


def changed(before: dict, after: dict) -> bool:
    return any(not torch.equal(before[k], after[k]) for k in before)


# -- layouts and bad maps ---------------------------------------------------------------------
def test_tag_declares_taggers_and_runners():
    layout = resolve_layout(get_registry().get("tag"), {"num_taggers": 2, "num_runners": 3}, None)
    assert layout.names == ["tagger", "runner"] and layout.slot_group.tolist() == [0, 0, 1, 1, 1]


def test_no_groups_is_the_single_shared_policy():
    assert resolve_layout(get_registry().get("cartpole"), {}, None) is None
    trainer = Trainer("cartpole", resolve_config(overrides=QUICK))
    try:
        assert type(trainer.learner) is Learner and trainer.league is None
    finally:
        trainer.close()


@pytest.mark.parametrize(
    "mapping, message",
    [
        ({"tagger": [0], "runner": [1, 2, 3]}, "agent 'agent_4' is in no group"),
        ({"tagger": [0], "runner": ["agent_1", "agent_2", "agent_3", "agent_9"]}, "unknown agent 'agent_9'"),
        ({"tagger": [0, 1], "runner": [1, 2, 3, 4]}, "agent 'agent_1' (slot 1) is in groups 'tagger' and 'runner'"),
        ({"tagger": [0], "runner": [1, 2, 3, 4, 7]}, "names slot 7"),
        ({"tagger": [], "runner": [0, 1, 2, 3, 4]}, "group 'tagger' must list agent slots"),
    ],
)
def test_bad_group_maps_name_the_agent(mapping, message):
    with pytest.raises(GroupError, match=None) as err:
        GroupLayout.build(mapping, [f"agent_{i}" for i in range(5)])
    assert message in str(err.value) and "\n" not in str(err.value)


def test_group_mixing_spaces_is_refused():
    spec = get_registry().get("mpe/simple_tag")
    if spec.unavailable_reason:
        pytest.skip(f"mpe2 not installed: {spec.unavailable_reason}")
    assert resolve_layout(spec, {}, None).names == ["adversary", "agent"]
    agents = ["adversary_0", "adversary_1", "adversary_2", "agent_0"]
    with pytest.raises(GroupError, match="agent 'agent_0' has other spaces than 'adversary_0'"):
        resolve_layout(spec, {}, {"everyone": agents})


def test_bad_group_map_on_the_command_line_exits_2(tmp_path):
    load_commands()
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "tag",
            "--run-dir",
            str(tmp_path / "r"),
            "--total-steps",
            "64",
            "--set",
            "groups.tagger=[0]",
            "--set",
            "groups.runner=[1,2,3]",
        ],
    )
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("Error: [groups]: agent 'agent_4' is in no group")


# -- training ---------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_two_groups_train_and_a_frozen_group_does_not(backend):
    extra = [f"vec.backend={backend}"] + (["vec.num_workers=2"] if backend == "multiprocessing" else [])
    trainer = tag_trainer(extra)
    try:
        before = {g: group_params(trainer, g) for g in ("tagger", "runner")}
        metrics = trainer.train_steps(2 * 5 * 32 * 2)
        assert all(changed(before[g], group_params(trainer, g)) for g in ("tagger", "runner"))
        assert "tagger/policy_loss" in metrics[-1] and "runner/policy_loss" in metrics[-1]
    finally:
        trainer.close()
    frozen = tag_trainer([*extra, 'league.frozen=["runner"]'])
    try:
        before = {g: group_params(frozen, g) for g in ("tagger", "runner")}
        frozen.train_steps(2 * 5 * 32 * 2)
        assert changed(before["tagger"], group_params(frozen, "tagger"))
        assert not changed(before["runner"], group_params(frozen, "runner"))
    finally:
        frozen.close()


def test_a_groups_update_ignores_other_groups_rewards():
    trainer = tag_trainer()
    try:
        rollout = trainer.collector.collect()
        start = copy.deepcopy(trainer.learner.state_dict())
        learner: GroupLearner = trainer.learner
        learner.update(rollout.batch, rows=rollout.rows)
        clean = {g: group_params(trainer, g) for g in ("tagger", "runner")}
        corrupt = {k: v.clone() for k, v in rollout.batch.items()}
        rows = np.arange(len(corrupt["rewards"])) if rollout.rows is None else rollout.rows
        runner_segments = torch.from_numpy(np.nonzero(rows % 5 != 0)[0])
        corrupt["rewards"][runner_segments] = 1000.0  # poison every runner row
        learner.load_weights(start)
        learner.update(corrupt, rows=rollout.rows)
        assert not changed(clean["tagger"], group_params(trainer, "tagger"))  # taggers see only their rows
        assert changed(clean["runner"], group_params(trainer, "runner"))
    finally:
        trainer.close()


def test_lstm_groups_train():
    trainer = tag_trainer(["policy.lstm=true"])
    try:
        before = group_params(trainer, "runner")
        trainer.train_steps(2 * 5 * 32)
        assert changed(before, group_params(trainer, "runner"))
    finally:
        trainer.close()


# -- checkpoints --------------------------------------------------------------------------------
def test_checkpoint_round_trip_with_groups(tmp_path):
    trainer = tag_trainer(run_dir=tmp_path)
    try:
        trainer.train_steps(2 * 5 * 32)
        path = trainer.save_checkpoint()
        saved = {g: group_params(trainer, g) for g in ("tagger", "runner")}
        moments = trainer.learner.learners["runner"].optimizer.state_dict()
    finally:
        trainer.close()
    state = torch.load(path, weights_only=True)
    assert sorted(state["groups"]) == ["runner", "tagger"] and state["groups"]["tagger"]["slots"].tolist() == [0]
    fresh = tag_trainer(["train.seed=9"], run_dir=tmp_path / "other")
    try:
        fresh.load_checkpoint(path)
        assert all(not changed(saved[g], group_params(fresh, g)) for g in ("tagger", "runner"))
        loaded = fresh.learner.learners["runner"].optimizer.state_dict()
        assert loaded["step"] == moments["step"] > 0
        assert all(torch.equal(a, b) for a, b in zip(moments["exp_avg_sq"], loaded["exp_avg_sq"]))
    finally:
        fresh.close()
    shared = Trainer("tag", resolve_config(overrides=[*QUICK, "groups.all=[0,1,2,3,4]"]))
    try:
        with pytest.raises(Exception, match="holds agent groups, this run one shared policy"):
            shared.load_checkpoint(path)
    finally:
        shared.close()


# -- pools ------------------------------------------------------------------------------------------
def test_pool_sampling_modes(tmp_path):
    pool = Pool(tmp_path, "runner")
    rng = np.random.default_rng(0)
    assert pool.sample("uniform", rng) is None
    snaps = [pool.add(u, {"w": torch.full((2,), float(u))}) for u in (1, 2, 3)]
    assert [p.name for p in pool.snapshots()] == [s.name for s in snaps]
    assert {pool.sample("latest", rng).name for _ in range(20)} == {snaps[-1].name}
    draws = [pool.sample("uniform", rng).name for _ in range(600)]
    assert all(150 < draws.count(s.name) < 250 for s in snaps)
    pool.record(snaps[0], [1.0] * 30)  # the learners beat snapshot 1 every time
    pool.record(snaps[1], [0.0] * 30)  # and lose to snapshot 2 every time
    weights = pool.weights("prioritized")
    assert weights[1] > weights[2] > weights[0]
    draws = [pool.sample("prioritized", rng).name for _ in range(300)]
    assert draws.count(snaps[1].name) > draws.count(snaps[0].name) * 5
    with pytest.raises(GroupError, match="league.pool: unknown mode 'best'"):
        pool.sample("best", rng)


def test_frozen_group_is_refilled_from_the_pool(tmp_path):
    trainer = tag_trainer(
        [
            'league.frozen=["runner"]',
            'league.pool_source="tagger"',
            "league.snapshot_interval=1",
            "league.refresh_interval=2",
        ],
        run_dir=tmp_path,
    )
    try:
        trainer.train_steps(2 * 5 * 32 * 2)
        snaps = Pool(tmp_path / "pool", "tagger").snapshots()
        assert [p.name for p in snaps] == ["snap-00000001.pt", "snap-00000002.pt"]
        latest = torch.load(snaps[-1], weights_only=True)["model"]
        runner = trainer.agent.groups["runner"].state_dict()
        assert all(torch.equal(latest[k], runner[k]) for k in latest)  # refilled with the latest tagger
    finally:
        trainer.close()


def test_outcome_compares_group_returns():
    assert outcome({"tagger": 1.0, "runner": -0.25}, ["tagger"]) == 1.0
    assert outcome({"tagger": 0.0, "runner": 0.0}, ["tagger"]) == 0.5
    assert outcome({"tagger": 0.0, "runner": 0.5}, ["tagger"]) == 0.0


# -- matches and ratings --------------------------------------------------------------------------
def test_wilson_interval():
    low, high = wilson(50, 100)
    assert low < 0.5 < high and abs((0.5 - low) - (high - 0.5)) < 1e-9
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(10, 10)[1] == 1.0 and wilson(10, 10)[0] > 0.65


def test_ratings_update_and_persist_per_checkpoint_and_group(tmp_path):
    path = tmp_path / "league.sqlite"
    ratings = Ratings(path)
    ratings.record(MatchResult("a.pt", "b.pt", "tagger", 4, 1, 0, [1.0, 1.0, 0.5, 1.0, 1.0], opponent_side="runner"))
    table = {(row["name"], row["group"]): row for row in Ratings(path).table()}  # a new connection: from disk
    assert table[("a.pt", "tagger")]["mu"] > 25.0 > table[("b.pt", "runner")]["mu"]
    assert (table[("a.pt", "tagger")]["wins"], table[("a.pt", "tagger")]["draws"]) == (4, 1)
    assert table[("b.pt", "runner")]["losses"] == 4
    # b's tagger is another player than b's runner: its rating starts fresh, a's runner's too
    Ratings(path).record(MatchResult("b.pt", "a.pt", "tagger", 3, 0, 0, [1.0] * 3, opponent_side="runner"))
    games = {(r["name"], r["group"]): r["games"] for r in Ratings(path).table()}
    assert games == {("a.pt", "tagger"): 5, ("b.pt", "runner"): 5, ("b.pt", "tagger"): 3, ("a.pt", "runner"): 3}
    rows = Ratings(path).table()
    assert [r["group"] for r in rows] == ["runner", "runner", "tagger", "tagger"]  # each group ranked on its own
    assert rows[0]["ordinal"] >= rows[1]["ordinal"] and rows[2]["ordinal"] >= rows[3]["ordinal"]


@pytest.fixture(scope="module")
def tag_run(tmp_path_factory):
    load_commands()
    run_dir = tmp_path_factory.mktemp("runs") / "tag"
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "tag",
            "--run-dir",
            str(run_dir),
            "--total-steps",
            "1280",
            "--num-envs",
            "2",
            "--set",
            "train.num_steps=64",
            "--set",
            "train.checkpoint_interval=2",
            "--no-tensorboard",
        ],
    )
    assert result.exit_code == 0, result.output
    return run_dir


def test_eval_opponent_reports_counts_and_interval(tag_run):
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "tag",
            "--checkpoint",
            str(tag_run),
            "--opponent",
            "random",
            "--episodes",
            "4",
            "--side",
            "runner",
            "--league",
            str(tag_run),
        ],
    )
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["games"] == 4 == summary["wins"] + summary["draws"] + summary["losses"]
    low, high = summary["win_rate_ci95"]
    assert low <= summary["win_rate"] <= high and summary["side"] == "runner" and summary["b"] == "random"
    assert "95% CI" in result.stderr
    table = CliRunner().invoke(cli, ["league", str(tag_run)])
    assert table.exit_code == 0 and "random" in table.output and "ckpt-" in table.output


def test_winner_is_the_highest_mean_return_unless_the_env_declares_its_rule():
    from pufferbox.group_layout import GroupError, winner
    from pufferbox.train.groups import outcome
    from pufferbox.train.league import score

    assert winner({"a": 1.0, "b": 0.5}) == "a" and winner({"a": 0.0, "b": 0.0}) is None
    tag = get_registry().get("tag")
    # Tag: a runner's return is tag_penalty once tagged, so the taggers win only when every runner was tagged
    all_tagged, one_left = {"tagger": 4.0, "runner": -1.0}, {"tagger": 3.0, "runner": -0.75}
    assert (
        winner(all_tagged, tag.training.outcome, {}) == "tagger" and winner(one_left, tag.training.outcome, {}) == "runner"
    )
    assert winner({"tagger": 0.0, "runner": 0.0}, tag.training.outcome, {}) == "runner"  # under "higher return": a draw
    assert winner({"tagger": 6.0, "runner": -2.0}, tag.training.outcome, {"tag_penalty": -2.0}) == "tagger"
    assert score(one_left, "runner", tag.training.outcome, {}) == 1.0 and score(one_left, "runner") == 0.0
    assert (
        outcome(one_left, ["runner"], tag.training.outcome, {}) == 1.0
        and outcome(all_tagged, ["runner"], tag.training.outcome, {}) == 0.0
    )
    with pytest.raises(GroupError, match="not a group"):
        winner({"a": 1.0}, lambda returns, kwargs: "ghost", {})


def test_tag_matches_are_scored_by_its_rule_so_runners_can_win(tag_run):
    match = play_match(tag_run, "random", episodes=6, side="runner")
    assert match.draws == 0 and match.wins + match.losses == 6  # the rule has no draws: someone tagged all, or not


def test_eval_of_a_grouped_checkpoint_and_match_errors(tag_run):
    result = CliRunner().invoke(cli, ["eval", "tag", "--checkpoint", str(tag_run), "--episodes", "2"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["episodes"] == 2
    bad = CliRunner().invoke(cli, ["eval", "--checkpoint", str(tag_run), "--opponent", "random", "--side", "ghost"])
    assert bad.exit_code == 2 and "--side: unknown group 'ghost'" in bad.output
    match = play_match(tag_run, tag_run, episodes=3, side="tagger")
    assert match.games == 3 and match.a == match.b and match.a.endswith(".pt")


def test_kernel_tag_trains_two_groups_on_the_host_simulator():
    from pufferbox.cuda.hostsim import find_cxx

    if find_cxx() is None:
        pytest.skip("no C++ compiler to build the Tag kernel for the host")
    trainer = Trainer(
        "tag",
        resolve_config(
            overrides=[
                "vec.backend=cuda",
                "vec.device=host",
                "vec.num_envs=4",
                "train.num_steps=50",
                "train.checkpoint_interval=0",
                "policy.hidden_size=16",
            ]
        ),
    )
    try:
        assert trainer.collector.use_sampler  # the sampler kernel draws from the grouped policy's logits
        before = {g: group_params(trainer, g) for g in ("tagger", "runner")}
        metrics = trainer.train_steps(4 * 5 * 50 * 3)
        assert all(changed(before[g], group_params(trainer, g)) for g in ("tagger", "runner"))
        ended = [m for m in metrics if m["tagger/episode_return"] is not None]
        assert ended and all(m["runner/episode_return"] <= 0.0 <= m["tagger/episode_return"] for m in ended)
    finally:
        trainer.close()


def test_conformance_checks_declared_groups():
    import dataclasses

    from pufferbox.conformance import check_env_spec

    tag = get_registry().get("tag")
    assert [str(r) for r in check_env_spec(tag, steps=5, checks=["groups"])] == ["ok   groups"]
    broken = dataclasses.replace(
        tag, training=dataclasses.replace(tag.training, groups={"tagger": ["agent_0"], "runner": ["agent_1", "agent_2"]})
    )
    [result] = check_env_spec(broken, steps=5, checks=["groups"])
    assert not result.ok and "agent 'agent_3' is in no group" in result.detail
    [shared] = check_env_spec(get_registry().get("cartpole"), steps=5, checks=["groups"])
    assert shared.ok and "no groups declared" in shared.detail


@pytest.mark.parametrize(
    "env, own",
    [
        ("mpe/simple_speaker_listener", {"speaker": (3, 3), "listener": (11, 5)}),
        ("mpe/simple_world_comm", {"leadadversary": (34, 20), "adversary": (34, 5), "agent": (28, 5)}),
    ],
)
@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_roles_train_on_their_own_spaces(env, own, backend):
    """Each role's policy reads its own observation (no padding, no role one-hot) and has its own action
    head: the speaker 3 logits and the listener 5; rows are as wide as the widest role's observation."""
    spec = get_registry().get(env)
    if spec.unavailable_reason:
        pytest.skip(f"mpe2 not installed: {spec.unavailable_reason}")
    extra = [f"vec.backend={backend}"] + (["vec.num_workers=2"] if backend == "multiprocessing" else [])
    trainer = Trainer(env, resolve_config(overrides=[*QUICK, *extra]))
    try:
        assert trainer.layout.names == list(own)
        widest = max(width for width, _ in own.values())
        assert trainer.venv.obs_spec.flat_size == widest
        for name, (width, actions) in own.items():
            agent = trainer.agent.agents[name]
            assert agent.encoder.net[0].in_features == width and agent.actor.linear.out_features == actions
        before = {g: group_params(trainer, g) for g in own}
        trainer.train_steps(trainer.num_rows * 32)
        assert all(changed(before[g], group_params(trainer, g)) for g in own)
        rollout = trainer.collector.collect()
        rows = np.arange(len(rollout.batch["actions"])) if rollout.rows is None else rollout.rows
        slot = rows % trainer.agents_per_env
        obs = rollout.batch["obs"]
        for name, (width, actions) in own.items():
            mine = torch.from_numpy(np.isin(slot, trainer.layout.slots(name)))
            assert int(rollout.batch["actions"][mine].max()) < actions
            assert not obs[mine][..., width:].any(), f"{name}: the row past its own observation stays zero"
    finally:
        trainer.close()


def test_an_env_whose_agents_differ_gets_a_group_per_pair_of_spaces():
    """Without declared groups, agents with different spaces still get their own policies (one shared
    policy could not act for both); agents alike keep one shared policy."""
    from pufferbox_pettingzoo.plugin import make_mpe

    from pufferbox import EnvBuild, EnvSpec

    spec = EnvSpec(
        name="speaker_listener_undeclared",
        build=EnvBuild(binding=make_mpe, kwargs={"module": "simple_speaker_listener_v4"}),
    )
    if get_registry().get("mpe/simple_speaker_listener").unavailable_reason:
        pytest.skip("mpe2 not installed")
    layout = resolve_layout(spec, {}, None)
    assert layout is not None and layout.names == ["speaker", "listener"]
    assert [str(space) for space in layout.spaces["speaker"]] == ["Box(-inf, inf, (3,), float32)", "Discrete(3)"]
    assert resolve_layout(get_registry().get("mpe/simple_spread"), {}, None) is None


def test_a_role_acting_past_its_own_actions_is_one_line():
    from pufferbox.emulation import emulate
    from pufferbox.spaces import SpaceError

    spec = get_registry().get("mpe/simple_speaker_listener")
    if spec.unavailable_reason:
        pytest.skip(f"mpe2 not installed: {spec.unavailable_reason}")
    env = emulate(spec.make_raw(), "speaker_listener")
    env.reset(seed=1)
    with pytest.raises(SpaceError) as err:
        env.step({"speaker_0": 4, "listener_0": 4})
    assert "agent 'speaker_0': action 4 is outside the flat action space Discrete(3)" in str(err.value)


def test_padded_actions_past_an_agents_range_are_no_ops():
    pytest.importorskip("mpe2", reason="mpe2 not installed (pip install -e plugins/pettingzoo)")
    from mpe2 import simple_speaker_listener_v4
    from pufferbox_pettingzoo.uniform import PadObservations

    raws = [PadObservations(simple_speaker_listener_v4.parallel_env()) for _ in range(2)]
    obs = [raw.reset(seed=3)[0] for raw in raws]
    assert str(raws[0].action_space("speaker_0")) == "Discrete(5)"
    assert str(raws[0].original_action_space("speaker_0")) == "Discrete(3)"
    a = raws[0].step({"speaker_0": 4, "listener_0": 1})[0]
    b = raws[1].step({"speaker_0": 0, "listener_0": 1})[0]
    assert all(np.array_equal(a[k], b[k]) for k in a) and len(obs[0]) == 2


def test_groups_train_on_an_async_pool():
    trainer = tag_trainer(["vec.backend=multiprocessing", "vec.num_envs=4", "vec.num_workers=2", "vec.batch_size=2"])
    try:
        before = {g: group_params(trainer, g) for g in ("tagger", "runner")}
        trainer.train_steps(4 * 5 * 32 * 2)
        assert all(changed(before[g], group_params(trainer, g)) for g in ("tagger", "runner"))
        rollout = trainer.collector.collect()
        slots = rollout.rows % 5  # every segment knows its row, whichever order the pool filled them in
        assert sorted(slots.tolist()) == sorted(list(range(5)) * 4)
    finally:
        trainer.close()


def test_resume_continues_a_grouped_run(tmp_path):
    from pufferbox.train.runner import run

    first = run(
        "tag",
        overrides=[*QUICK, "train.total_steps=640", "train.checkpoint_interval=1"],
        run_dir=tmp_path,
        dashboard=False,
        tensorboard=False,
    )
    assert first.global_step == 640
    resumed = run(resume=tmp_path, overrides=["train.total_steps=1280"], dashboard=False, tensorboard=False)
    assert resumed.global_step == 1280
    with pytest.raises(Exception, match="holds agent groups, this run one shared policy"):
        run(
            resume=tmp_path,
            overrides=["train.total_steps=1920", "groups.all=[0,1,2,3,4]"],
            dashboard=False,
            tensorboard=False,
        )


@pytest.mark.slow
def test_groups_train_on_ray(local_ray):
    trainer = tag_trainer(["vec.backend=ray", "vec.num_workers=2"])
    try:
        before = {g: group_params(trainer, g) for g in ("tagger", "runner")}
        trainer.train_steps(2 * 5 * 32 * 2)
        assert all(changed(before[g], group_params(trainer, g)) for g in ("tagger", "runner"))
    finally:
        trainer.close()


def test_plot_draws_each_groups_curve(tag_run, tmp_path):
    from pufferbox.tournament.curves import read_curves as plot_command_reads
    from pufferbox.train.plot import plot_runs, read_curves

    curves = {label: curve for label, curve, _ in read_curves(tag_run)}
    assert plot_command_reads(tag_run) == read_curves(tag_run), "`pufferbox plot` draws the groups too"
    assert set(curves) == {tag_run.name, f"{tag_run.name}: runner", f"{tag_run.name}: tagger"}
    steps, _, returns = curves[f"{tag_run.name}: tagger"]
    assert steps and len(steps) == len(returns) and all(np.isfinite(returns))
    assert (tmp_path / "curves.png").samefile(plot_runs([tag_run], tmp_path / "curves.png"))


def test_league_play_rates_every_checkpoint_against_random(tag_run, tmp_path):
    import shutil

    run = tmp_path / "copy"
    shutil.copytree(tag_run, run, ignore=shutil.ignore_patterns("league.sqlite"))
    result = CliRunner().invoke(cli, ["league", str(run), "--play", "2"])
    assert result.exit_code == 0, result.output
    table = Ratings(run / "league.sqlite").table()
    players = {str(p) for p in (run / "checkpoints").glob("ckpt-*.pt")} | {"random"}
    assert {(r["name"], r["group"]) for r in table} == {(p, g) for p in players for g in ("tagger", "runner")}
    assert all(r["games"] == 2 * (len(players) - 1) for r in table)  # 2 episodes against each other player
    empty = CliRunner().invoke(cli, ["league", str(tmp_path)])
    assert empty.exit_code == 2 and "no league.sqlite yet" in empty.output


def test_two_resumes_of_a_grouped_checkpoint_train_identically(tmp_path):
    from pufferbox.train.runner import run

    steps = 2 * 5 * 32
    common = [*QUICK, "train.checkpoint_interval=2", "train.keep_checkpoints=10"]
    run(
        "tag",
        overrides=[*common, f"train.total_steps={4 * steps}"],
        run_dir=tmp_path / "split",
        dashboard=False,
        tensorboard=False,
        stop_after=2 * steps,
    )
    shutil.copytree(tmp_path / "split", tmp_path / "again")
    run(resume=tmp_path / "split", dashboard=False, tensorboard=False)
    run(resume=tmp_path / "again", dashboard=False, tensorboard=False)
    split = torch.load(tmp_path / "split/checkpoints/ckpt-00000004.pt", weights_only=True)
    again = torch.load(tmp_path / "again/checkpoints/ckpt-00000004.pt", weights_only=True)
    assert all(torch.equal(split["model"][k], again["model"][k]) for k in split["model"])


def test_groups_train_overlapped_with_v_trace_per_group(monkeypatch):
    """With train.overlap the next rollout runs during the update (policy lag 1); each learning group's
    segments are re-based on that group's own current policy (V-trace) before its PPO update."""
    import pufferbox.train.trainer as ppo

    retargeted = []
    real = ppo.vtrace_targets
    monkeypatch.setattr(ppo, "vtrace_targets", lambda agent, b, *a: retargeted.append(agent) or real(agent, b, *a))
    trainer = tag_trainer(["train.overlap=true"])
    try:
        before = {g: group_params(trainer, g) for g in ("tagger", "runner")}
        history = [trainer.train_update() for _ in range(3)]
        groups = trainer.agent.groups
        assert retargeted[:2] == [groups["tagger"], groups["runner"]] and len(retargeted) == 6
        assert [h["policy_lag"] for h in history] == [0.0, 1.0, 1.0]
        assert all(np.isfinite(h[f"{g}/policy_loss"]) for h in history for g in ("tagger", "runner"))
        assert all(changed(before[g], group_params(trainer, g)) for g in ("tagger", "runner"))
    finally:
        trainer.close()


@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_random_actions_of_a_vector_env_stay_in_each_agents_own_range(backend):
    """``action_space.sample()`` (what `pufferbox bench` and Gymnasium-style loops use) is legal for every
    role: each row within its own agent's actions."""
    import pufferbox.vector as vector

    spec = get_registry().get("mpe/simple_speaker_listener")
    if spec.unavailable_reason:
        pytest.skip(f"mpe2 not installed: {spec.unavailable_reason}")
    kwargs = {"num_workers": 2} if backend == "multiprocessing" else {}
    with vector.make(spec, backend=backend, num_envs=2, **kwargs) as venv:
        assert venv.action_space.nvec.tolist() == [3, 5, 3, 5]
        venv.action_space.seed(0)
        venv.reset(seed=0)
        for _ in range(30):
            venv.step(venv.action_space.sample())


def test_a_grouped_checkpoint_whose_heads_do_not_fit_is_one_line():
    """Checkpoints from before per-role spaces gave the speaker 5 (masked) logits; its own space has 3."""
    from pufferbox.train.groups import GroupError

    spec = get_registry().get("mpe/simple_speaker_listener")
    if spec.unavailable_reason:
        pytest.skip(f"mpe2 not installed: {spec.unavailable_reason}")
    trainer = Trainer("mpe/simple_speaker_listener", resolve_config(overrides=QUICK))
    try:
        state = snapshot.take(trainer)
        old = dict(state["model"])
        weight = old["groups.speaker.actor.linear.weight"]
        old["groups.speaker.actor.linear.weight"] = torch.zeros(5, weight.shape[1])
        old["groups.speaker.actor.linear.bias"] = torch.zeros(5)
        with pytest.raises(GroupError) as err:
            trainer.learner.load_weights({**state, "model": old})
        assert str(err.value).startswith("group 'speaker': the checkpoint's policy does not fit") and "\n" not in str(
            err.value
        )
    finally:
        trainer.close()
