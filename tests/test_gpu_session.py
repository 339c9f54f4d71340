"""benchmarks/gpu_session.sh, the batch a GPU machine runs: its harness works on a CPU machine too."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_session_runs_only_the_named_steps_and_keeps_each_log(tmp_path):
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "GPU_SESSION_INSTALL": "0",
        "GPU_SESSION_ONLY": "bench-cuda-sweep",
    }
    proc = subprocess.run(["bash", "benchmarks/gpu_session.sh", str(out)], cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0
    summary = (out / "summary.md").read_text()
    steps = [line[3:] for line in summary.splitlines() if line.startswith("## ")]
    assert steps == ["bench-cuda-sweep"]
    # without a GPU the benchmark refuses with its one line and exit 2; the batch records both and goes on
    assert "rc=2 after" in summary and "needs a GPU" in summary
    assert not (out / "running.log").exists()  # only a step still in flight leaves it
    with tarfile.open(out / "logs.tar.gz") as logs:
        assert [Path(m.name).name for m in logs.getmembers() if m.isfile()] == ["bench-cuda-sweep.log"]


def test_the_solve_step_comes_first_and_writes_its_table(tmp_path):
    # rehearsed on the CPU at a small budget: one update of CartPole's GPU profile, then one of Pong's
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "GPU_SESSION_INSTALL": "0",
        "GPU_SESSION_ONLY": "solve solve-throughput",
        "GPU_SOLVE_ENVS": "cartpole",
        "GPU_SOLVE_SEEDS": "1",
        "GPU_SOLVE_ARGS": "--set train.total_steps=131072 --set train.torch_threads=1",
        "GPU_PROFILE_STEPS": "131072",
    }
    proc = subprocess.run(["bash", "benchmarks/gpu_session.sh", str(out)], cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0
    summary = (out / "summary.md").read_text()
    assert [line[3:] for line in summary.splitlines() if line.startswith("## ")] == ["solve", "solve-throughput"]
    assert summary.count("rc=0 after") == 2
    session = (ROOT / "benchmarks/gpu_session.sh").read_text()
    assert session.index("step solve ") < session.index("step doctor")  # first after the install
    runs = json.loads((out / "solve.json").read_text())["runs"]
    assert [(r["env"], r["seed"], r["rc"], r["steps"], r["updates"]) for r in runs] == [("cartpole", 1, 0, 131072, 1)]
    assert runs[0]["learn_share"] is not None and "the GPU profile" in runs[0]["plan"]
    assert (out / "solve.md").read_text().startswith("| env | seed | reached | steps to measure | updates |")
    assert "runs/gpu-session-pong-gpu-profile: 131072 steps, steady" in summary  # Pong at its profile, summarized
