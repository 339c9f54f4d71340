"""``league.random_opponent``: in a share of episodes one group of an env plays uniformly random legal
actions for the whole episode and is masked out of training (:class:`RandomSeats`)."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner
from gymnasium import spaces

from pufferbox.cli import cli, load_commands
from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.collector import RandomSeats

PLAIN = ObservationSpec(spaces.Box(0, 1, (2,)))
MASKED = ObservationSpec(
    spaces.Dict({"board": spaces.Box(0, 1, (2,), np.float32), "action_mask": spaces.Box(0, 1, (4,), np.int8)})
)


def rows_with_mask(legal: list[int], rows: int) -> np.ndarray:
    one = MASKED.flatten({"board": np.zeros(2, np.float32), "action_mask": np.array(legal, np.int8)})
    return np.repeat(one[None], rows, axis=0)


def test_one_group_per_env_plays_legal_random_actions_untrained():
    seats = RandomSeats(1.0, np.array([0, 1]), 50, MASKED, ActionSpec(spaces.Discrete(4)), seed=3)
    rows = np.arange(100)
    obs = rows_with_mask([0, 1, 0, 1], 100)
    actions = np.zeros(100, np.int64)  # the policy's choice: always 0, illegal here
    masks = seats.apply(rows, obs, np.ones(100, bool), actions, np.ones(100, bool))
    chosen = ~masks
    assert chosen.reshape(50, 2).sum(1).tolist() == [1] * 50  # exactly one seat of every env
    assert set(chosen.reshape(50, 2).argmax(1).tolist()) == {0, 1}  # either seat
    assert set(actions[chosen].tolist()) == {1, 3}  # uniform over the legal choices only
    assert (actions[~chosen] == 0).all()  # the other seat's actions are the policy's


def test_the_random_seat_holds_for_the_whole_episode_and_is_redrawn_at_the_next():
    seats = RandomSeats(
        0.5, np.array([0, 1]), 64, ObservationSpec(spaces.Box(0, 1, (2,))), ActionSpec(spaces.Discrete(3)), 0
    )
    rows, obs = np.arange(128), np.zeros((128, 2), np.float32)
    first = ~seats.apply(rows, obs, np.ones(128, bool), np.zeros(128, np.int64), np.ones(128, bool))
    assert 10 < first.reshape(64, 2).any(1).sum() < 54  # about half of the envs
    for _ in range(5):  # mid-episode: the same seats, whatever the draws
        again = ~seats.apply(rows, obs, np.zeros(128, bool), np.zeros(128, np.int64), np.ones(128, bool))
        assert (again == first).all()
    redrawn = ~seats.apply(rows, obs, np.ones(128, bool), np.zeros(128, np.int64), np.ones(128, bool))
    assert not (redrawn == first).all()


def test_waiting_rows_stay_masked_and_a_pool_batch_maps_to_its_envs():
    seats = RandomSeats(
        1.0, np.array([0, 0, 1]), 4, ObservationSpec(spaces.Box(0, 1, (2,))), ActionSpec(spaces.Discrete(2)), 1
    )
    rows = np.array([6, 7, 8, 9, 10, 11])  # envs 2 and 3 of a pool
    waiting = np.array([True, False, True, True, True, False])
    masks = seats.apply(rows, np.zeros((6, 2), np.float32), np.ones(6, bool), np.zeros(6, np.int64), waiting)
    group = seats.random_group[[2, 3]]
    chosen = np.array([0, 0, 1]) == group[:, None]
    assert (masks == (waiting & ~chosen.reshape(-1))).all()


def test_random_opponent_without_groups_is_one_line_before_the_run_dir(tmp_path):
    load_commands()
    run = tmp_path / "run"
    args = ["train", "cartpole", "--run-dir", str(run), "--total-steps", "512", "--set", "league.random_opponent=0.5"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "league.random_opponent=0.5" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not run.exists()


def test_self_play_trains_with_a_random_opponent(tmp_path):
    load_commands()
    run = tmp_path / "c4"
    args = ["train", "ocean/connect4", "--run-dir", str(run), "--total-steps", "4096", "--num-envs", "8"]
    args += ["--set", "train.num_steps=64", "--set", "league.random_opponent=0.5", "--no-tensorboard"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert (run / "checkpoints").is_dir()
