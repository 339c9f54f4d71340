"""benchmarks/bench_random_returns.py: the random-action floor of a return check, in the trainer's unit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_random_returns as bench


def test_random_cartpole_scores_what_random_cartpole_is_known_to_score(capsys):
    bench.main(["cartpole", "--steps", "20000", "--seeds", "1", "2"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["seed"] for r in rows] == [1, 2]
    for row in rows:
        assert row["steps"] % row["num_envs"] == 0 and 19_000 < row["steps"] <= 20_000
        assert row["episodes"] > 500
        # uniformly random CartPole-v1 lasts about 22 steps, one reward per step
        assert 17 < row["mean_return"] < 28
        assert row["mean_length"] == pytest.approx(row["mean_return"])
        assert 0 < row["sem_return"] < 1
    assert rows[0]["mean_return"] != rows[1]["mean_return"]  # the seed reaches the actions and the envs


def test_the_plugins_training_settings_apply(capsys):
    bench.main(["cartpole", "--steps", "512", "--set", "vec.num_envs=8"])
    assert json.loads(capsys.readouterr().out)["num_envs"] == 8


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "Error: unknown env 'nope'"),
        (["cartpole", "--steps", "0"], "Error: --steps must be at least 1, got 0"),
        (["cartpole", "--set", "vec.num_envs=zero"], "Error: "),
    ],
)
def test_bad_input_is_a_one_line_error(argv, message):
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)
