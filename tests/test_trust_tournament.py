"""SIGTERM to a tournament driver (issue 54, defect 10): it stops after the slices in flight with one line
and exit 143, as `train` does, instead of Ray's crash dump and exit 15; the board resumes."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

pytest.importorskip("ray", reason="the tournament runs on Ray (pip install 'pufferbox[ray]')")

SLICE = 4096


def entries(run_dir: Path) -> int:
    try:
        with sqlite3.connect(f"file:{run_dir / 'leaderboard.sqlite'}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.slow  # a local Ray cluster in a subprocess (about a minute)
@pytest.mark.timeout(300)
def test_sigterm_stops_the_tournament_after_the_slices_in_flight_with_143(tmp_path):
    run_dir = tmp_path / "t"
    args = [sys.executable, "-m", "pufferbox", "tournament", "cartpole", "--pods", "2", "--total-steps"]
    args += [str(100 * SLICE), "--slice-steps", str(SLICE), "--eval-episodes", "2", "--run-dir", str(run_dir)]
    ray_root = tempfile.mkdtemp(prefix="pbt-", dir="/tmp")  # short (socket paths) and ours to delete
    env = {**os.environ, "RAY_ADDRESS": "", "PUFFERBOX_RAY_TMPDIR": ray_root}
    proc = subprocess.Popen(args, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 180
        while entries(run_dir) < 1 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1]
        before = entries(run_dir)
        proc.send_signal(signal.SIGTERM)  # to the driver alone, as `docker stop` sends it to PID 1
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signal.SIGTERM, out + err
        assert "SIGTERM: the tournament stops after the slices in flight" in out, out
        assert "tournament stopped" in out and "--resume" in out, out
        assert "Traceback" not in err and "SIGTERM received" not in err, err
        assert entries(run_dir) >= before  # the slices in flight were recorded, nothing lost
    finally:
        if proc.poll() is None:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            proc.wait()
        shutil.rmtree(ray_root, ignore_errors=True)
