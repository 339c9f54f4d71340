"""Step deadlines: a hung env or a stopped worker raises a named error, and nothing is left behind.

Each multiprocessing case runs in a subprocess with a hard time limit, so a regression shows as
a failed test (with the child's output) instead of a hung test run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import pufferbox.vector as vector
from pufferbox.vector.base import VectorConfigError, WorkerTimeoutError
from pufferbox.vector.testenvs import env_spec_for

PRELUDE = textwrap.dedent("""
    import json, os, signal, time
    import numpy as np
    import psutil
    import pufferbox.vector as vector
    from pufferbox.vector.base import WorkerTimeoutError
    from pufferbox.vector.testenvs import env_spec_for

    def report(venv, error, elapsed, extra=None):
        alive = [p for p in venv.pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        segment = os.path.exists("/dev/shm/" + SEGMENT.lstrip("/"))
        print(json.dumps({"error": type(error).__name__, "message": str(error), "elapsed": elapsed,
                          "alive": alive, "segment": segment, "closed": venv.closed, **(extra or {})}))
""")


def run_child(body: str, limit: float = 60.0) -> dict:
    """Run ``PRELUDE + body`` in a fresh interpreter; its last stdout line is a JSON report."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True, timeout=limit
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"child still running after {limit} s: the deadline did not fire\n{exc.stderr}")
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_hung_env_raises_a_timeout_naming_worker_pid_and_envs() -> None:
    out = run_child("""
        venv = vector.make(env_spec_for("faulty", fail_at=3, mode="hang", fail_env_seed=5),
                           backend="multiprocessing", num_envs=8, num_workers=4, step_timeout=1.0)
        SEGMENT = venv.resources.shared.name
        pid = venv.pids[2]
        venv.async_reset(seed=0)
        start = time.monotonic()
        try:
            while True:
                venv.recv()
                venv.send(np.zeros(8, dtype=np.int64))
        except WorkerTimeoutError as error:
            report(venv, error, time.monotonic() - start, {"pid": pid})
    """)
    assert out["error"] == "WorkerTimeoutError"
    assert f"worker 2 (pid {out['pid']}, envs 4-5)" in out["message"] and "step_timeout=1s" in out["message"]
    assert "vec.step_timeout" in out["message"]  # the fix
    assert 1.0 <= out["elapsed"] < 6.0
    assert out["closed"] and not out["alive"] and not out["segment"]  # workers killed, segment unlinked


def test_a_stopped_worker_stops_an_async_pool_instead_of_training_on_the_rest() -> None:
    """SIGSTOP one of four workers of a pool: the others keep answering, but the deadline still fires."""
    out = run_child("""
        venv = vector.make("cartpole", backend="multiprocessing", num_envs=8, num_workers=4, batch_size=2,
                           native=False, step_timeout=1.5)
        SEGMENT = venv.resources.shared.name
        venv.async_reset(seed=0)
        for _ in range(20):
            venv.recv()
            venv.send(np.zeros(2, dtype=np.int64))
        stopped = venv.pids[1]
        os.kill(stopped, signal.SIGSTOP)
        start, batches = time.monotonic(), 0
        try:
            while True:
                venv.recv()
                venv.send(np.zeros(2, dtype=np.int64))
                batches += 1
        except WorkerTimeoutError as error:
            report(venv, error, time.monotonic() - start, {"pid": stopped, "batches": batches})
    """)
    assert out["error"] == "WorkerTimeoutError"
    assert f"worker 1 (pid {out['pid']}, envs 2-3)" in out["message"] and "stopped" in out["message"]
    assert out["batches"] > 0  # the healthy workers did go on meanwhile ...
    assert out["elapsed"] < 6.0  # ... but only until the stopped one's deadline
    assert out["closed"] and not out["alive"] and not out["segment"]


def test_a_stopped_worker_times_out_a_synchronous_step_and_a_reset() -> None:
    out = run_child("""
        venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, step_timeout=1.0)
        SEGMENT = venv.resources.shared.name
        venv.reset(seed=0)
        os.kill(venv.pids[0], signal.SIGSTOP)
        venv.send(np.zeros(4, dtype=np.int64))  # commands go out; the stopped worker never answers
        start = time.monotonic()
        try:
            venv.async_reset(seed=1)  # waits for the step in flight first
        except WorkerTimeoutError as error:
            report(venv, error, time.monotonic() - start)
    """)
    assert out["error"] == "WorkerTimeoutError" and "worker 0" in out["message"]
    assert out["elapsed"] < 6.0 and out["closed"] and not out["alive"] and not out["segment"]


def test_healthy_slow_steps_within_the_deadline_are_not_errors() -> None:
    with vector.make(
        env_spec_for("uneven", mean_step_s=0.05), backend="multiprocessing", num_envs=2, num_workers=2, step_timeout=2.0
    ) as venv:
        venv.reset(seed=0)
        for _ in range(10):
            venv.step([0, 1])


@pytest.mark.parametrize("backend", ["multiprocessing", "ray"])
@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_step_timeout_must_be_positive(backend: str, value: float) -> None:
    with pytest.raises(VectorConfigError, match="step_timeout must be > 0 seconds"):
        vector.make("cartpole", backend=backend, num_envs=2, num_workers=1, step_timeout=value)


@pytest.mark.slow
def test_ray_actor_that_hangs_raises_a_timeout(local_ray) -> None:
    venv = vector.make(
        env_spec_for("faulty", fail_at=2, mode="hang", fail_env_seed=3),
        backend="ray",
        num_envs=4,
        num_workers=2,
        step_timeout=2.0,
    )
    venv.async_reset(seed=0)
    with pytest.raises(WorkerTimeoutError, match=r"worker 1 \(pid \d+, envs 2-3\) did not answer within step_timeout=2s"):
        for _ in range(10):
            venv.recv()
            venv.send([0, 0, 0, 0])
    assert venv.closed and venv.actors == []


def test_a_killed_main_process_takes_hung_workers_and_the_segment_with_it() -> None:
    """SIGKILL of the main process while a worker hangs in an env step: no orphan, no /dev/shm segment."""
    import os
    import signal
    import time

    import psutil

    script = textwrap.dedent("""
        import numpy as np, time
        import pufferbox.vector as vector
        from pufferbox.vector.testenvs import env_spec_for
        venv = vector.make(env_spec_for("faulty", fail_at=2, mode="hang"), backend="multiprocessing",
                           num_envs=2, num_workers=2)
        venv.reset(seed=0)
        venv.step([0, 0])
        venv.send(np.zeros(2, dtype=np.int64))  # the workers hang in this step
        print(venv.resources.shared.name, *venv.pids, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pids: list[str] = []
    try:
        name, *pids = proc.stdout.readline().split()
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        alive, segment = pids, True
        while time.monotonic() < deadline and (alive or segment):
            time.sleep(0.2)
            alive = [
                p for p in map(int, pids) if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
            ]
            segment = os.path.exists(f"/dev/shm/{name.lstrip('/')}")
        assert not alive, f"orphaned workers {alive}"
        assert not segment, f"shared memory segment {name} left behind"
    finally:
        proc.kill()
        for pid in map(int, pids):  # a failed run must not leave its hung workers behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
