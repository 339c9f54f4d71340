"""`pufferbox sweep`: trials as training runs, resume after a kill, pruning, --show, bad input."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

optuna = pytest.importorskip("optuna", reason="optuna is the pufferbox[sweep] extra")

from pufferbox.cli import cli, load_commands  # noqa: E402
from pufferbox.sweep import sweep  # noqa: E402
from pufferbox.sweep.space import builtin_space, resolve_space  # noqa: E402
from pufferbox.train.config import ConfigError, resolve_config, resolve_run_config  # noqa: E402

TINY = ["--set", "train.total_steps=4096", "--set", "vec.num_envs=8", "--set", "train.checkpoint_interval=0"]


def invoke(*args: str):
    load_commands()
    return CliRunner().invoke(cli, ["sweep", *args])


def study_of(run_dir: Path):
    meta = tomllib.loads((run_dir / "sweep.toml").read_text())
    return optuna.load_study(study_name=meta["study_name"], storage=meta["storage"])


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("sweeps") / "cp"
    result = invoke("cartpole", "--trials", "3", "--run-dir", str(run_dir), "--pruner", "none", *TINY)
    assert result.exit_code == 0, result.output
    return run_dir


@pytest.mark.slow
def test_three_trials_are_ordinary_training_runs(three):
    study = study_of(three)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    defaults = resolve_config(resolve_config({"train": {"learning_rate": 3e-3}}))  # cartpole's plugin value
    assert study.trials[0].params["train.learning_rate"] == defaults["train"]["learning_rate"]  # trial 0 = defaults
    for t in study.trials:
        config = tomllib.loads((three / "trials" / str(t.number) / "config.toml").read_text())
        for name, value in t.params.items():
            section, _, key = name.partition(".")
            assert config[section][key] == pytest.approx(value)
        assert config["train"]["total_steps"] == 4096 and config["vec"]["num_envs"] == 8  # --set fixes them
        metrics = [json.loads(line) for line in (three / "trials" / str(t.number) / "metrics.jsonl").open()]
        assert metrics[-1]["global_step"] >= 4096
        # the default objective: steps to solve; unsolved trials score between budget and 2x budget
        assert 4096 <= t.value <= 2 * 4096
    assert len({t.params["train.learning_rate"] for t in study.trials}) == 3
    assert {t.user_attrs["worker"] for t in study.trials} == {f"{socket.gethostname()}:{os.getpid()}"}  # in-process


@pytest.mark.slow
def test_show_prints_best_trials_and_writes_a_plot(three):
    result = invoke("--show", str(three))
    assert result.exit_code == 0, result.output
    assert "cartpole: best 3 of 3 trials (3 complete)" in result.output
    assert "learning_rate=" in result.output
    png = three / "sweep.png"
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_finished_sweep_rerun_adds_nothing_and_more_trials_continue(three):
    result = invoke("cartpole", "--trials", "3", "--run-dir", str(three), "--pruner", "none", *TINY)
    assert result.exit_code == 0, result.output
    assert "(3 of 3 trials finished)" in result.output and len(study_of(three).trials) == 3


@pytest.mark.slow
def test_a_killed_sweep_continues_where_it_stopped(tmp_path):
    run_dir = tmp_path / "sw"
    cmd = [
        sys.executable,
        "-m",
        "pufferbox",
        "sweep",
        "cartpole",
        "--trials",
        "3",
        "--run-dir",
        str(run_dir),
        "--pruner",
        "none",
        "--set",
        "train.total_steps=12000",
        "--set",
        "vec.num_envs=8",
        "--set",
        "train.checkpoint_interval=0",
        "--set",
        "train.stop_on_solve=false",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while not (run_dir / "trials" / "1" / "metrics.jsonl").is_file() and time.time() < deadline:
            time.sleep(0.2)
        assert (run_dir / "trials" / "1" / "metrics.jsonl").is_file(), "trial 1 never started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    interrupted = study_of(run_dir).trials[1]
    assert interrupted.state.name == "RUNNING"  # what the kill left behind
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trial 1 was interrupted; its settings are queued again" in result.stdout
    trials = study_of(run_dir).trials
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert trials[2].params == interrupted.params  # the interrupted trial ran again with its settings
    assert "3 of 3 trials finished" in subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    assert len({str(t.params) for t in trials}) == 3  # the resumed sweep did not replay earlier draws


@pytest.mark.slow
def test_killing_a_parallel_sweep_stops_its_workers_and_rerun_requeues_both(tmp_path):
    import psutil

    run_dir = tmp_path / "sw"
    cmd = [
        sys.executable,
        "-m",
        "pufferbox",
        "sweep",
        "cartpole",
        "--trials",
        "2",
        "--parallel",
        "2",
        "--run-dir",
        str(run_dir),
        "--pruner",
        "none",
        "--set",
        "vec.num_envs=8",
        "--set",
        "train.checkpoint_interval=0",
        "--set",
        "train.stop_on_solve=false",
    ]
    # trials of ~30 updates: killed right after their first, and short enough to rerun (a continued sweep
    # keeps its fixed settings: its trials never mix budgets)
    cmd += ["--set", "train.total_steps=60000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and not all((run_dir / "trials" / n / "metrics.jsonl").is_file() for n in ("0", "1")):
            time.sleep(0.2)
        children = psutil.Process(proc.pid).children(recursive=True)
    finally:
        proc.kill()
        proc.wait()
    assert len(children) >= 2
    _, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"workers outlived the killed sweep: {alive}"
    assert [t.state.name for t in study_of(run_dir).trials] == ["RUNNING", "RUNNING"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    trials = study_of(run_dir).trials
    assert [t.state.name for t in trials] == ["FAIL", "FAIL", "COMPLETE", "COMPLETE"]
    assert sorted(map(str, (t.params for t in trials[2:]))) == sorted(map(str, (t.params for t in trials[:2])))
    assert trials[2].params["train.learning_rate"] in (
        trials[0].params["train.learning_rate"],
        trials[1].params["train.learning_rate"],
    )
    config = tomllib.loads((run_dir / "trials" / "2" / "config.toml").read_text())
    assert config["train"]["torch_threads"] == max(1, os.cpu_count() // 2)  # K trials share the cores


@pytest.mark.slow
def test_ctrl_c_stops_the_sweep_after_the_current_update(tmp_path):
    run_dir = tmp_path / "sw"
    cmd = [
        sys.executable,
        "-m",
        "pufferbox",
        "sweep",
        "cartpole",
        "--trials",
        "3",
        "--run-dir",
        str(run_dir),
        "--pruner",
        "none",
        "--set",
        "train.total_steps=200000",
        "--set",
        "vec.num_envs=8",
        "--set",
        "train.checkpoint_interval=0",
        "--set",
        "train.stop_on_solve=false",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    metrics, deadline = run_dir / "trials" / "0" / "metrics.jsonl", time.time() + 240
    while not (metrics.is_file() and metrics.read_text()) and time.time() < deadline:  # training, not starting
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output
    assert "trial 0: interrupted; run the same command again to continue the sweep" in output
    trials = study_of(run_dir).trials
    assert [t.state.name for t in trials] == ["FAIL", "WAITING"]  # no further trial started; trial 0 re-queued
    assert trials[1].system_attrs["fixed_params"] == trials[0].params  # how Optuna stores a queued trial
    assert not (run_dir / "trials" / "1").exists()


@pytest.mark.slow
def test_a_hopeless_trial_is_pruned_and_stops_training(tmp_path):
    common = ["train.total_steps=16384", "vec.num_envs=8", "train.checkpoint_interval=0", "train.stop_on_solve=false"]
    sweep("cartpole", 1, tmp_path / "sw", overrides=common, objective="return", prune_startup=1, log=lambda s: None)
    # a learning rate of 1e-9 cannot learn: its curve stays below the first trial's and the pruner stops it
    # (queued as the next trial's parameters: a continued sweep keeps its fixed settings)
    study_of(tmp_path / "sw").enqueue_trial({"train.learning_rate": 1e-9}, skip_if_exists=False)
    sweep("cartpole", 2, tmp_path / "sw", overrides=common, objective="return", prune_startup=1, log=lambda s: None)
    trials = study_of(tmp_path / "sw").trials
    assert [t.state.name for t in trials] == ["COMPLETE", "PRUNED"]
    steps = [json.loads(line)["global_step"] for line in (tmp_path / "sw" / "trials" / "1" / "metrics.jsonl").open()]
    assert steps[-1] < 16384 and not list((tmp_path / "sw" / "trials" / "1").glob("checkpoints/*.pt"))


@pytest.mark.slow
def test_two_objectives_report_the_pareto_front(tmp_path):
    result = invoke("cartpole", "--trials", "3", "--run-dir", str(tmp_path / "mo"), "--objective", "return,steps", *TINY)
    assert result.exit_code == 0, result.output
    study = study_of(tmp_path / "mo")
    assert len(study.directions) == 2 and all(t.state.name == "COMPLETE" for t in study.trials)
    assert all(512 <= t.params["train.total_steps"] <= 4096 for t in study.trials)  # the cost is searched
    assert all(t.values[1] >= t.params["train.total_steps"] for t in study.trials)
    assert "Pareto front" in result.output


@pytest.mark.slow
def test_parallel_trials_run_in_worker_processes(tmp_path):
    result = invoke(
        "cartpole", "--trials", "2", "--parallel", "2", "--run-dir", str(tmp_path / "par"), *TINY, "--pruner", "hyperband"
    )
    assert result.exit_code == 0, result.output
    study = study_of(tmp_path / "par")
    assert [t.state.name for t in study.trials] in (["COMPLETE", "COMPLETE"], ["COMPLETE", "PRUNED"])
    assert all((tmp_path / "par" / "trials" / str(n) / "metrics.jsonl").is_file() for n in (0, 1))
    workers = {t.user_attrs["worker"] for t in study.trials}
    assert len(workers) == 2 and f"{socket.gethostname()}:{os.getpid()}" not in workers


@pytest.mark.slow
def test_config_file_sets_every_trial_and_its_space_table_is_recorded(tmp_path):
    config = tmp_path / "sweep.toml"
    config.write_text(
        "[train]\nnum_steps = 16\n\n[sweep.space]\nlearning_rate = {low = 1e-3, high = 2e-3}\n"
        'gamma = 0.9\nent_coef = false\n"vec.num_envs" = {choices = [4]}\n'
    )
    result = invoke(
        "cartpole",
        "--trials",
        "1",
        "--run-dir",
        str(tmp_path / "sw"),
        "--config",
        str(config),
        "--set",
        "train.total_steps=256",
        "--pruner",
        "none",
    )
    assert result.exit_code == 0, result.output
    meta = tomllib.loads((tmp_path / "sw" / "sweep.toml").read_text())
    assert meta["space"]["train.learning_rate"] == {"low": 1e-3, "high": 2e-3, "log": False}
    assert meta["space"]["vec.num_envs"] == {"choices": [4]}
    assert "train.gamma" not in meta["space"] and "train.ent_coef" not in meta["space"]
    trial = tomllib.loads((tmp_path / "sw" / "trials" / "0" / "config.toml").read_text())
    assert trial["train"]["gamma"] == 0.9 and trial["vec"]["num_envs"] == 4
    assert 1e-3 <= trial["train"]["learning_rate"] <= 2e-3  # the defaults' 3e-3 is outside: sampled instead
    assert trial["train"]["num_steps"] in (8, 16, 32)  # the space is centred on the file's num_steps


def test_space_is_centred_on_the_plugin_defaults():
    config = resolve_run_config({"train": {"learning_rate": 1e-3, "num_steps": 32, "ent_coef": 0.0}})
    space = builtin_space(config)
    lr = space["train.learning_rate"]
    assert lr.log and lr.low == pytest.approx(2.5e-4) and lr.high == pytest.approx(4e-3)
    assert space["train.num_steps"].choices == (16, 32, 64)
    assert space["train.ent_coef"].low == 0.0 and not space["train.ent_coef"].log
    assert all(p.contains(config.setting(n)) for n, p in space.items())


def test_space_table_overrides_removes_and_fixes():
    config = resolve_run_config()
    table = {
        "learning_rate": {"low": 1e-4, "high": 1e-3, "log": True},
        "ent_coef": False,
        "vec": {"num_envs": {"choices": [4, 8]}},
        "gamma": 0.9,
    }
    space = resolve_space(config, table, fixed={"train.clip_coef"})
    assert (space["train.learning_rate"].low, space["train.learning_rate"].high) == (1e-4, 1e-3)
    assert "train.ent_coef" not in space and "train.gamma" not in space and "train.clip_coef" not in space
    assert space["vec.num_envs"].choices == (4, 8)


@pytest.mark.parametrize(
    "table, message",
    [
        ({"learnin_rate": {"low": 1e-4, "high": 1e-3}}, "unknown key; did you mean learning_rate?"),
        ({"learning_rate": {"low": 1e-3, "high": 1e-4}}, "low (0.001) must be below high (0.0001)"),
        ({"learning_rate": {"low": 0.0, "high": 1e-3, "log": True}}, "a log range needs low > 0"),
        ({"learning_rate": {"low": 1e-4}}, "give low and high"),
        ({"update_epochs": {"low": 1.5, "high": 4}}, "expected int, got float"),
        ({"num_steps": {"choices": []}}, "choices must be a non-empty list"),
        ({"learning_rate": {"min": 1e-4}}, "unknown field 'min'"),
    ],
)
def test_bad_space_entries_fail_with_one_line(table, message):
    with pytest.raises(ConfigError, match=None) as info:
        resolve_space(resolve_run_config(), table)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "args, message",
    [
        (["cartpole", "--trials", "0"], "Error: --trials 0: must be at least 1"),
        (["cartpole", "--trials", "2", "--parallel", "0"], "Error: --parallel 0: must be at least 1"),
        (["cartpole", "--objective", "speed"], "Error: --objective speed: unknown objective"),
        (["squared", "--objective", "return,steps,steps"], "Error: --objective return,steps,steps: unknown objective"),
        (["cartpole", "--pruner", "sometimes"], "Error: --pruner sometimes: choose one of median, hyperband, none"),
        (["nosuchenv"], "Error: "),
        ([], "Error: sweep: name an env"),
    ],
)
def test_bad_input_is_one_error_line(tmp_path, args, message):
    result = invoke(*args, "--run-dir", str(tmp_path / "sw"))
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1].startswith(message), result.output
    assert not (tmp_path / "sw").exists()


def test_bad_space_file_and_used_directories(tmp_path):
    bad = tmp_path / "space.toml"
    bad.write_text("[sweep.space]\nlearnin_rate = {low = 1e-4, high = 3e-3, log = true}\n")
    result = invoke("cartpole", "--config", str(bad), "--run-dir", str(tmp_path / "sw"))
    assert result.exit_code == 2 and "Error: sweep.space: train.learnin_rate: unknown key" in result.output
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine")
    result = invoke("cartpole", "--run-dir", str(used))
    assert result.exit_code == 2 and "is not empty and holds no sweep" in result.output
    assert (used / "notes.txt").read_text() == "mine"
    result = invoke("--show", str(used))
    assert result.exit_code == 2 and "not a sweep directory" in result.output


def test_continuing_with_another_objective_is_refused(tmp_path):
    run_dir = tmp_path / "sw"
    run_dir.mkdir()
    (run_dir / "sweep.toml").write_text(
        'env = "cartpole"\nobjective = ["steps"]\nstorage = "sqlite:///x"\nstudy_name = "sw"\n'
    )
    result = invoke("cartpole", "--run-dir", str(run_dir), "--objective", "return", "--storage", "sqlite:///x")
    assert result.exit_code == 2 and "this sweep has objective ['steps'], not ['return']" in result.output


def test_without_optuna_the_error_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # import optuna raises ImportError
    result = invoke("cartpole", "--run-dir", str(tmp_path / "sw"))
    assert result.exit_code == 2
    assert result.output.strip() == "Error: sweep needs optuna, which is not installed; pip install 'pufferbox[sweep]'"


def test_a_second_sweep_in_the_same_directory_is_refused(tmp_path):
    from pufferbox.sweep.study import DirectoryLock, SweepError

    lock = DirectoryLock(tmp_path)
    try:
        with pytest.raises(SweepError, match="another sweep is running in this directory"):
            DirectoryLock(tmp_path)
    finally:
        lock.release()


@pytest.mark.slow
def test_trials_run_as_ray_tasks(tmp_path, local_ray):
    import os

    result = sweep(
        "cartpole",
        2,
        tmp_path / "ray",
        parallel=2,
        ray_address="local",
        pruner="none",
        overrides=["train.total_steps=2048", "vec.num_envs=4"],
        log=lambda s: None,
    )
    trials = result.study.trials
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    for t in trials:  # each trial trained in a Ray worker, not in this process
        metrics = [json.loads(line) for line in (tmp_path / "ray" / "trials" / str(t.number) / "metrics.jsonl").open()]
        assert metrics[-1]["global_step"] >= 2048
        assert t.user_attrs["worker"].rsplit(":", 1)[1] != str(os.getpid())
