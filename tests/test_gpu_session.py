"""benchmarks/gpu_session.sh, the batch a lent GPU machine runs: its harness works on a CPU machine too."""

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
    # without a GPU the benchmark refuses with its one line and exit 2; the session records both and goes on
    assert "rc=2 after" in summary and "needs a GPU" in summary
    assert not (out / "running.log").exists()  # only a step still in flight leaves it
    with tarfile.open(out / "logs.tar.gz") as logs:
        assert [Path(m.name).name for m in logs.getmembers() if m.isfile()] == ["bench-cuda-sweep.log"]
