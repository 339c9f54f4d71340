"""Data-parallel learners (``--learners N``, pufferbox/train/distributed.py) on the CPU with gloo.

(a) two learners, each on half of a fixed batch, end the PPO update with the parameters of one learner
on the whole batch; (b) a 2-learner CartPole run solves and its checkpoint resumes with one learner;
(c) a learner killed mid-run ends the run in one line, exit 2, with a resumable checkpoint;
(d) settings that cannot run are one line, exit 2, before any learner starts; (e) the learners pool their
observation/reward statistics (a checkpoint counts both learners' samples) and run overlapped.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import torch
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.train.checkpoint import latest_checkpoint, load_checkpoint
from pufferbox.train.config import TrainConfig, resolve_config
from pufferbox.train.distributed import Team, free_address, join_group
from pufferbox.train.learner import Learner
from pufferbox.train.trainer import Trainer

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
SETTINGS = ["vec.num_envs=4", "train.num_steps=32", "train.num_minibatches=4", "train.update_epochs=3"]


def fixed_batch_and_agent(case: str) -> tuple[dict, torch.nn.Module, TrainConfig]:
    """A CartPole rollout of 4 envs (and the policy that acted): ``masked``: some transitions masked;
    ``lstm``: a recurrent policy (minibatches of whole segments: some of a learner's are empty)."""
    trainer = Trainer("cartpole", resolve_config(overrides=SETTINGS + (["policy.lstm=true"] if case == "lstm" else [])))
    try:
        batch = {k: v.clone() for k, v in trainer.collector.collect().batch.items()}
    finally:
        trainer.close()
    if case == "masked":  # absent agents in the second half: the learners then hold unequal numbers of samples
        batch["masks"][3, 5:20] = False
    return batch, trainer.agent, trainer.tc


def half_update(rank: int, address: str, inputs: str, tc: TrainConfig, out: str) -> None:
    """Learner ``rank`` of two (a spawned process): the PPO update on its half of the batch in ``inputs``
    (a file: tensors passed to a process directly would share the parent's memory)."""
    torch.set_num_threads(1)
    batch, agent = torch.load(inputs, weights_only=False)
    join_group(rank, 2, address, "cpu", 60.0)
    team = Team(rank, 2, torch.device("cpu"))
    learner = Learner(agent, tc, seed=tc.seed, team=team)
    half = {k: v[2 * rank : 2 * rank + 2] for k, v in batch.items()}
    stats = learner.update(half, progress=0.25)
    torch.save({"model": agent.state_dict(), "stats": stats}, out)
    team.close()


@pytest.mark.parametrize("case", ["plain", "masked", "lstm"])
def test_two_learners_on_half_batches_train_the_parameters_of_one_on_the_whole(tmp_path, case):
    torch.manual_seed(0)
    batch, agent, tc = fixed_batch_and_agent(case)
    start = {k: v.clone() for k, v in agent.state_dict().items()}
    whole = Learner(agent, tc, seed=tc.seed)
    expected = whole.update(batch, progress=0.25)
    trained = {k: v.clone() for k, v in agent.state_dict().items()}
    agent.load_state_dict(start)
    torch.save((batch, agent), tmp_path / "inputs.pt")
    context, address = torch.multiprocessing.get_context("spawn"), free_address()
    procs = []
    for rank in (0, 1):
        out = str(tmp_path / f"rank{rank}.pt")
        procs.append(context.Process(target=half_update, args=(rank, address, str(tmp_path / "inputs.pt"), tc, out)))
        procs[-1].start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    got = [torch.load(tmp_path / f"rank{rank}.pt") for rank in (0, 1)]
    moved = max(float((trained[k] - start[k]).abs().max()) for k in start)
    assert moved > 1e-3  # the update changed the policy: the comparison below is not between two copies of it
    for name, value in trained.items():
        torch.testing.assert_close(got[0]["model"][name], got[1]["model"][name], rtol=0, atol=0)  # identical
        torch.testing.assert_close(got[0]["model"][name], value, rtol=1e-5, atol=1e-6)  # float rounding
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"):
        assert got[0]["stats"][key] == pytest.approx(expected[key], rel=1e-3, abs=1e-6), key


def test_a_two_learner_cartpole_run_solves_and_resumes_with_one_learner(tmp_path):
    from pufferbox.train.runner import run

    run_dir = tmp_path / "run"
    result = run(
        "cartpole",
        overrides=["train.stop_on_solve=true", "train.total_steps=400000", "train.torch_threads=1"],
        flags={"train.learners": 2},
        run_dir=run_dir,
        dashboard=False,
        tensorboard=False,
    )
    assert result.solved_at_step is not None, result.summary()
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [line["global_step"] for line in lines]
    # the global step counts both learners' envs: 64 envs (32 each) x 32 steps per update
    assert steps[0] == 64 * 32 and all(b - a == steps[0] for a, b in itertools.pairwise(steps))
    state = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    assert state["global_step"] == result.global_step == steps[-1]
    resumed = run(
        resume=run_dir,
        overrides=["train.stop_on_solve=false"],  # it is solved already: train on to the new budget
        flags={"train.learners": 1, "train.total_steps": steps[-1] + 4096},
        dashboard=False,
    )
    assert resumed.global_step == steps[-1] + 4096 and resumed.checkpoint is not None
    again = run(resume=run_dir, flags={"train.learners": 2, "train.total_steps": steps[-1] + 8192}, dashboard=False)
    assert again.global_step == steps[-1] + 8192  # and back to two learners


def test_gradient_buckets_start_their_all_reduces_while_backward_still_runs(tmp_path):
    import torch.distributed as dist

    from pufferbox.train.distributed import GradientBuckets

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'group'}", rank=0, world_size=1)
    try:
        net = torch.nn.Sequential(
            torch.nn.Linear(64, 512), torch.nn.Tanh(), torch.nn.Linear(512, 512), torch.nn.Linear(512, 4)
        )
        params = list(net.parameters())
        started = []  # buckets on their way when the first layer's weight gradient came in (before it counts)
        params[0].register_post_accumulate_grad_hook(lambda _: started.append(len(buckets.flats)))
        buckets = GradientBuckets(Team(0, 1, torch.device("cpu")), params, bucket_bytes=512 * 512 * 4)
        assert buckets.buckets == [[5, 4, 3, 2], [1, 0]]  # backward's order: last layer first
        loss = net(torch.randn(8, 64)).square().mean()
        buckets.start(loss)
        loss.backward()
        expected = [p.grad.clone() for p in params]
        mean_loss = buckets.finish()
        assert started == [1]  # the two later layers' bucket was sent before backward reached the first layer
        assert float(mean_loss) == pytest.approx(float(loss.detach()))
        for param, grad in zip(params, expected):  # one learner: the mean is its own gradient
            torch.testing.assert_close(param.grad, grad)
        net(torch.randn(8, 64)).sum().backward()  # a backward outside a data-parallel step leaves them alone
        assert len(buckets.flats) == 2
    finally:
        dist.destroy_process_group()


def test_learners_pool_their_normalizer_statistics_and_a_resume_keeps_them(tmp_path):
    from pufferbox.train.runner import run

    run_dir = tmp_path / "run"
    norm = ["train.norm_obs=true", "train.norm_reward=true", "train.torch_threads=1"]
    first = run("cartpole", overrides=norm, flags={"train.learners": 2, "train.total_steps": 4 * 2048}, run_dir=run_dir)
    stats = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))["normalizer"]
    one = run("cartpole", overrides=norm, flags={"train.total_steps": 4 * 2048}, run_dir=tmp_path / "one")
    alone = load_checkpoint(latest_checkpoint(tmp_path / "one" / "checkpoints"))["normalizer"]
    assert one.global_step == first.global_step
    for key in ("obs.0.count", "reward.count"):  # every observation and reward of both learners' 32 envs
        assert float(stats[key]) == pytest.approx(float(alone[key]), abs=1e-3), key  # not rank 0's half
    resumed = run(resume=run_dir, flags={"train.learners": 1, "train.total_steps": first.global_step + 2048})
    again = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))["normalizer"]
    assert resumed.global_step == first.global_step + 2048
    start = float(alone["reward.count"]) - one.global_step  # what a run's first step adds (the envs' resets)
    assert float(again["reward.count"]) == pytest.approx(float(stats["reward.count"]) + 2048 + start, abs=1e-3)


def learner_pids(parent: subprocess.Popen, timeout: float = 60) -> list[int]:
    """The pids of the trainer's learner processes (its children running ``learner_process``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p.pid for p in psutil.Process(parent.pid).children() if "spawn_main" in " ".join(p.cmdline())]
        if found:
            return found
        time.sleep(0.1)
    pytest.fail("no learner process started")


def test_a_killed_learner_ends_the_run_in_one_line_with_a_resumable_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    proc = start_learner_run(run_dir)
    [child] = learner_pids(proc)
    metrics = run_dir / "metrics.jsonl"
    wait_for_updates(proc, run_dir, 3)
    killed_at = time.monotonic()
    os.kill(child, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - killed_at < 15  # within seconds, not after train.learner_timeout
    assert proc.returncode == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: learner 1 (pid {child}) was killed by SIGKILL"), err
    assert "--resume" in lines[0] and "Traceback" not in out + err
    state = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    last = json.loads(metrics.read_text().splitlines()[-1])
    assert state["global_step"] == last["global_step"] > 0  # the last completed update, as recorded
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    resumed = subprocess.run(
        [sys.executable, "-m", "pufferbox", "train", "--resume", str(run_dir), "--learners", "1"]
        + ["--total-steps", str(last["global_step"] + 2048), "--no-tensorboard"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{last['global_step'] + 2048:,} steps" in resumed.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--learners", "0"], "Error: train.learners: must be >= 1"),
        (["--learners", "2", "--num-envs", "3"], "Error: vec.num_envs=3 does not split over train.learners=2"),
        (["--learners", "2", "--backend", "ray"], "Error: train.learners=2: not with --backend ray"),
        (
            ["--learners", "2", "--set", "train.overlap=true", "--set", "train.norm_obs=true"],
            "Error: train.learners=2: not with train.overlap and norm_obs/norm_reward together",
        ),
        (["--learners", "2", "--device", "cuda"], "Error: train.learners=2: each learner trains on a GPU of its own"),
        (["--learners", "2", "--device", "cuda:1"], "Error: train.device=cuda:1: with --learners 2, learner R trains on"),
    ],
)
def test_settings_several_learners_cannot_run_are_one_line_exit_2(tmp_path, monkeypatch, args, message):
    if "cuda" in args:  # a machine with one GPU, as the learners' check sees it (it runs before CUDA is touched)
        import pufferbox.train.assembly as assembly

        monkeypatch.setattr(assembly, "pick_device", lambda name: torch.device("cuda"))
        monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    load_commands()
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(tmp_path / "r"), *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), result.output
    assert not (tmp_path / "r").exists()


def start_learner_run(run_dir, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "pufferbox", "train", "cartpole", "--learners", "2", "--run-dir", str(run_dir)]
    cmd += ["--total-steps", "100000000", "--no-tensorboard", "--set", "train.torch_threads=1", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def wait_for_updates(proc: subprocess.Popen, run_dir, count: int) -> None:
    metrics, deadline = run_dir / "metrics.jsonl", time.monotonic() + 90
    while not metrics.exists() or len(metrics.read_text().splitlines()) < count:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)


@pytest.mark.parametrize("overlap", [False, True])  # overlapped: each learner's next rollout is in flight
def test_sigterm_stops_every_learner_after_the_same_update_and_exits_143(tmp_path, overlap):
    run_dir = tmp_path / "run"
    proc = start_learner_run(run_dir, "--set", f"train.overlap={str(overlap).lower()}")
    [child] = learner_pids(proc)
    wait_for_updates(proc, run_dir, 2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    assert "Traceback" not in out + err and "Error" not in err, err
    state = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert state["global_step"] == last["global_step"] > 0
    assert not psutil.pid_exists(child)  # rank 1 ended with the run and was reaped


def test_a_learner_that_stops_answering_ends_the_run_after_the_timeout(tmp_path):
    run_dir = tmp_path / "run"
    # 10 s: the timeout also bounds the learners' first meeting, which a loaded machine's spawn can take 6 s to reach
    proc = start_learner_run(run_dir, "--set", "train.learner_timeout=10")
    [child] = learner_pids(proc)
    wait_for_updates(proc, run_dir, 2)
    os.kill(child, signal.SIGSTOP)
    stopped_at = time.monotonic()
    out, err = proc.communicate(timeout=90)
    assert time.monotonic() - stopped_at < 40
    assert proc.returncode == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: learner 1 (pid {child}, stopped"), err
    assert "stopped answering" in lines[0] and "--resume" in lines[0], err
    assert latest_checkpoint(run_dir / "checkpoints") is not None
    assert not psutil.pid_exists(child)  # the stopped learner was killed and reaped
