"""``pufferbox bench`` / ``autotune`` print real measurements and reject bad options in one line."""

from __future__ import annotations

import json

from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.throughput import autotune, candidate_configs, command_line

load_commands()


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_bench_json_has_the_fields() -> None:
    result = run(
        "bench",
        "cartpole",
        "--backend",
        "multiprocessing",
        "--num-envs",
        "4",
        "--num-workers",
        "2",
        "--batch-size",
        "2",
        "--seconds",
        "0.3",
        "--json",
        "--no-native",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"sps", "backend", "num_envs", "num_workers", "batch_size"} <= set(data)
    assert data["backend"] == "multiprocessing" and data["num_workers"] == 2 and data["batch_size"] == 2
    assert data["sps"] > 0


def test_bench_text_reports_steps_per_second() -> None:
    result = run("bench", "cartpole", "--num-envs", "64", "--seconds", "0.2")
    assert result.exit_code == 0, result.output
    assert "steps/s" in result.output and "native=True" in result.output


def test_bad_options_give_one_line_errors() -> None:
    result = run("bench", "cartpole", "--backend", "multiprocessing", "--num-envs", "6", "--num-workers", "4")
    assert result.exit_code == 2
    assert result.output.strip() == "Error: num_envs (6) must be a multiple of num_workers (4)"
    result = run("bench", "cartpol")
    assert result.exit_code == 2 and "did you mean cartpole" in result.output
    result = run("bench", "cartpole", "--num-workers", "2")
    assert result.exit_code == 2 and "serial backend has one worker" in result.output


def test_autotune_ranks_and_prints_a_runnable_command() -> None:
    configs = [
        dict(backend="serial", num_envs=1),
        dict(backend="serial", num_envs=64),
        dict(backend="multiprocessing", num_envs=4, num_workers=2, batch_size=2),
    ]
    results = autotune("cartpole", seconds=0.2, configs=configs)
    assert [r["sps"] for r in results] == sorted((r["sps"] for r in results), reverse=True)
    best = results[0]["command"].split()
    assert best[:3] == ["pufferbox", "bench", "cartpole"]
    assert run(*best[1:], "--seconds", "0.1").exit_code == 0
    assert (
        command_line("x", dict(backend="multiprocessing", num_envs=8, num_workers=2, batch_size=4))
        == "pufferbox bench x --backend multiprocessing --num-envs 8 --num-workers 2 --batch-size 4"
    )
    assert all(c["num_envs"] % c.get("num_workers", 1) == 0 for c in candidate_configs(cpus=2))
