"""Learners over a Ray cluster (``--learners N --ray-address ADDR``, pufferbox/train/ray_learners.py), on a
cluster of this host (``ray.cluster_utils.Cluster``: a head without CPUs, so the learner actor runs on a
node of its own).

(a) a 2-learner run whose rank 1 is a Ray actor trains exactly what the same run with a local learner
process does (which tests/test_learners.py checks against one learner on the whole batch); SIGTERM stops
both after the same update, exit 143, and ends the actor; (b) losing the
actor's node mid-run ends the run in one line, exit 2, with a checkpoint that resumes on Ray (the actor
gets the checkpoint's bytes); (c) settings the cluster cannot run are one line, exit 2, and leave no run dir.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import psutil
import pytest
import torch

from pufferbox.train.checkpoint import latest_checkpoint, load_checkpoint

pytest.importorskip("ray", reason="the Ray learners need ray (pip install -e '.[ray]')")
from ray.cluster_utils import Cluster


def run_env() -> dict[str, str]:
    """The environment a run starts with: this process's (the cluster fixture's Ray root included)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


RUN = ["--no-tensorboard", "--set", "train.torch_threads=1", "--set", "train.learner_timeout=30"]


@pytest.fixture(scope="module")
def cluster():
    """A head that runs no actors (0 CPUs) and one node of 1 CPU: room for one learner actor. Its files
    live in a private root (``$RAY_TMPDIR``, as conftest's ``ray_cluster``): a Ray that an earlier test
    module started and removed must leave nothing this cluster or the runs that join it pick up."""
    root = tempfile.mkdtemp(prefix="pbcl-", dir="/tmp")  # short: Unix socket paths are limited to 107 bytes
    os.mkdir(os.path.join(root, "ray"))
    saved = {key: os.environ.get(key) for key in ("RAY_TMPDIR", "RAY_AUTH_MODE")}
    os.environ.update(RAY_TMPDIR=root, RAY_AUTH_MODE="disabled")  # the runs' subprocesses inherit both
    cluster = None
    try:
        cluster = Cluster(
            initialize_head=True,
            connect=False,
            head_node_args={"num_cpus": 0, "include_dashboard": False, "temp_dir": os.path.join(root, "s")},
        )
        cluster.add_node(num_cpus=1)
        yield cluster
    finally:
        if cluster is not None:
            cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(root, ignore_errors=True)


def train(run_dir, *args: str, wait: bool = True) -> subprocess.CompletedProcess | subprocess.Popen:
    cmd = [sys.executable, "-m", "pufferbox", "train", "--run-dir", str(run_dir), *RUN, *args]  # args override RUN
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=run_env())
    return subprocess.run(cmd, capture_output=True, text=True, env=run_env(), timeout=240)


def final_state(run_dir) -> tuple[dict, list[dict]]:
    state = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return state, lines


@pytest.mark.slow
def test_a_learner_on_ray_trains_what_a_local_learner_process_does(cluster, tmp_path):
    steps = ["cartpole", "--learners", "2", "--total-steps", str(3 * 64 * 32)]  # 3 updates of 64 envs x 32 steps
    on_ray = train(tmp_path / "ray", *steps, "--ray-address", cluster.address)
    assert on_ray.returncode == 0, on_ray.stdout + on_ray.stderr
    local = train(tmp_path / "local", *steps)
    assert local.returncode == 0, local.stdout + local.stderr
    (ray_state, ray_lines), (local_state, local_lines) = final_state(tmp_path / "ray"), final_state(tmp_path / "local")
    assert ray_state["global_step"] == local_state["global_step"] == 3 * 64 * 32
    assert all(line["approx_kl"] > 0 for line in ray_lines)  # each update moved the policy: not two copies of the start
    for name, value in local_state["model"].items():
        torch.testing.assert_close(ray_state["model"][name], value, rtol=0, atol=0)
    for key in ("global_step", "episode_return", "policy_loss", "value_loss", "approx_kl"):
        assert [line.get(key) for line in ray_lines] == [line.get(key) for line in local_lines], key


def actor_pids(node) -> list[int]:
    """The learner actors running on ``node`` of the cluster (its raylet's children)."""
    raylet = psutil.Process(node.all_processes["raylet"][0].process.pid)
    return [p.pid for p in raylet.children(recursive=True) if "LearnerActor" in " ".join(p.cmdline())]


def wait_for_actor_and_updates(cluster, proc: subprocess.Popen, run_dir, count: int):
    """The node whose learner actor trains, once ``count`` updates are in metrics.jsonl."""
    metrics, deadline = run_dir / "metrics.jsonl", time.monotonic() + 120
    while not metrics.exists() or len(metrics.read_text().splitlines()) < count:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    [node] = [node for node in cluster.worker_nodes if actor_pids(node)]
    return node


@pytest.mark.slow
def test_sigterm_stops_the_learner_actors_after_the_same_update_and_exits_143(cluster, tmp_path):
    run_dir = tmp_path / "run"
    args = ["cartpole", "--learners", "2", "--total-steps", "100000000", "--ray-address", cluster.address]
    proc = train(run_dir, *args, wait=False)
    node = wait_for_actor_and_updates(cluster, proc, run_dir, 2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    assert "Traceback" not in out + err and "Error" not in err, err
    state, lines = final_state(run_dir)
    assert state["global_step"] == lines[-1]["global_step"] > 0  # both learners stopped after the same update
    deadline = time.monotonic() + 10
    while actor_pids(node) and time.monotonic() < deadline:  # the actor is ended with the run, its bundle freed
        time.sleep(0.1)
    assert not actor_pids(node)


@pytest.mark.slow
def test_a_lost_node_ends_the_run_in_one_line_and_its_checkpoint_resumes_on_ray(cluster, tmp_path):
    run_dir = tmp_path / "run"
    args = ["cartpole", "--learners", "2", "--total-steps", "100000000", "--ray-address", cluster.address]
    proc = train(run_dir, *args, wait=False)
    node = wait_for_actor_and_updates(cluster, proc, run_dir, 3)
    [pid] = actor_pids(node)
    lost_at = time.monotonic()
    cluster.remove_node(node)  # its raylet and every worker process on it
    out, err = proc.communicate(timeout=90)
    assert time.monotonic() - lost_at < 30  # within seconds, not after train.learner_timeout
    assert proc.returncode == 2, out + err
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: learner 1 (Ray actor pid {pid} on node "), err
    assert " died (" in errors[0] and "--resume" in errors[0] and "Traceback" not in out + err, err
    state, lines = final_state(run_dir)
    assert state["global_step"] == lines[-1]["global_step"] > 0  # the last completed update, as recorded
    cluster.add_node(num_cpus=1)  # a replacement node
    target = lines[-1]["global_step"] + 2 * 64 * 32
    resumed = subprocess.run(
        [sys.executable, "-m", "pufferbox", "train", "--resume", str(run_dir), "--ray-address", cluster.address]
        + ["--total-steps", str(target), "--no-tensorboard"],
        capture_output=True,
        text=True,
        env=run_env(),
        timeout=240,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{target:,} steps" in resumed.stdout
    assert load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))["global_step"] == target


@pytest.mark.parametrize(
    "args, message",
    [
        (["--learners", "3", "--num-envs", "6"], "Error: train.learners=3: the Ray cluster found no room for 2 learner(s)"),
        (["--learners", "2", "--backend", "ray"], "Error: train.learners=2: not with --backend ray"),  # checked first
    ],
)
def test_settings_the_cluster_cannot_run_are_one_line_exit_2(cluster, tmp_path, args, message):
    result = train(tmp_path / "r", "cartpole", "--ray-address", cluster.address, *args, "--set", "train.learner_timeout=3")
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and errors[0].startswith(message), result.stdout + result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "r").exists()


def test_ray_client_addresses_are_refused_in_one_line(cluster, tmp_path):
    result = train(tmp_path / "r", "cartpole", "--learners", "2", "--ray-address", f"ray://{cluster.address}")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().startswith("Error: train.learners_on=ray: the learners connect back to rank 0")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "vec, device, bundle",
    [
        ({"backend": "serial", "num_envs": 8}, "cpu", {"CPU": 1.0}),
        ({"backend": "multiprocessing", "num_envs": 8, "num_workers": 4}, "cpu", {"CPU": 3.0}),  # 2 workers each
        ({"backend": "multiprocessing", "num_envs": 8, "num_workers": 0}, "cuda", {"CPU": 1.0, "GPU": 1.0}),
    ],
)
def test_a_learners_bundle_holds_its_core_its_share_of_the_workers_and_its_gpu(vec, device, bundle):
    from pufferbox.train.config import RunConfig
    from pufferbox.train.ray_learners import learner_bundle

    run = RunConfig.from_dict({"train": {"learners": 2}, "vec": vec})
    assert learner_bundle(run.train, run.vec, cuda=device == "cuda") == bundle
