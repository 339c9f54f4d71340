"""Faults in workers surface fast and clearly, and nothing (processes, shared memory) leaks."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import psutil
import pytest

import pufferbox.vector as vector
from pufferbox.vector.multiprocessing import WorkerError
from pufferbox.vector.testenvs import env_spec_for


def live_children() -> list[psutil.Process]:
    """Live child processes, except multiprocessing's resource tracker (one per interpreter, by design)."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(p.cmdline()):
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def segment_exists(name: str) -> bool:
    return os.path.exists(f"/dev/shm/{name.lstrip('/')}")


def run_until_error(venv, max_seconds: float) -> tuple[BaseException, float]:
    venv.async_reset(seed=0)
    start = time.monotonic()
    with pytest.raises(WorkerError) as err:
        while time.monotonic() - start < max_seconds + 5:
            venv.recv()
            venv.send(np.zeros(venv.batch_size, dtype=np.int64))
    return err.value, time.monotonic() - start


def test_env_exception_names_env_worker_and_traceback() -> None:
    venv = vector.make(
        env_spec_for("faulty", fail_at=3, fail_env_seed=5), backend="multiprocessing", num_envs=8, num_workers=4
    )
    name = venv.resources.shared.name
    error, elapsed = run_until_error(venv, 1.0)
    message = str(error)
    assert elapsed < 1.0
    assert "env 5 in worker 2" in message
    assert "ValueError: deliberate failure at step 3" in message
    assert "Traceback (most recent call last)" in message and "testenvs.py" in message
    assert venv.closed and not live_children() and not segment_exists(name)


@pytest.mark.parametrize("failing_env,where", [(1, "env 1 in the main process"), (3, "env 3 in worker 0")])
def test_main_envs_errors_name_the_env_and_its_process(failing_env: int, where: str) -> None:
    venv = vector.make(
        env_spec_for("faulty", fail_at=3, fail_env_seed=failing_env),
        backend="multiprocessing",
        num_envs=4,
        num_workers=1,
        main_envs=2,
    )
    name = venv.resources.shared.name
    error, _ = run_until_error(venv, 1.0)
    message = str(error)
    assert where in message and "ValueError: deliberate failure at step 3" in message
    assert "Traceback (most recent call last)" in message and "testenvs.py" in message
    assert venv.closed and not live_children() and not segment_exists(name)


def test_serial_env_exception_is_a_worker_error_that_keeps_the_env_s_own() -> None:
    venv = vector.make(env_spec_for("faulty", fail_at=3, fail_env_seed=2), backend="serial", num_envs=4)
    venv.reset(seed=0)
    with pytest.raises(WorkerError) as err:
        for _ in range(5):
            venv.step(np.zeros(4, dtype=np.int64))
    message = str(err.value)
    assert message.startswith("faulty: env 2 in the main process (pid ")
    assert "raised ValueError: deliberate failure at step 3" in message and "testenvs.py" in message
    assert isinstance(err.value.__cause__, ValueError)  # library callers still reach the env's exception
    venv.close()


def test_main_envs_close_reaps_workers_and_frees_shared_memory() -> None:
    venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=1, main_envs=2, native=False)
    name = venv.resources.shared.name
    venv.reset(seed=0)
    venv.send(np.zeros(4, dtype=np.int64))  # close with the worker's step in flight
    venv.close()
    assert not live_children() and not segment_exists(name)
    venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=1, main_envs=2, native=False)
    name = venv.resources.shared.name
    venv.reset(seed=0)
    del venv  # never closed: garbage collection frees it
    gc.collect()
    assert not live_children() and not segment_exists(name)


def test_env_that_cannot_be_built_fails_clearly() -> None:
    bad = env_spec_for("faulty", fail_at=1)
    bad.build.kwargs["unknown_kwarg"] = 1
    with pytest.raises(Exception, match="unknown_kwarg"):
        vector.make(bad, backend="multiprocessing", num_envs=2, num_workers=2)
    assert not live_children()


def test_killed_worker_is_detected_within_5s() -> None:
    venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, batch_size=2)
    name = venv.resources.shared.name
    venv.async_reset(seed=0)
    venv.recv()
    os.kill(venv.pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker 1 \(pid \d+, envs 2-3\) was killed by signal 9 \(SIGKILL\)"):
        while time.monotonic() - start < 10:
            venv.send(np.zeros(2, dtype=np.int64))
            venv.recv()
    assert time.monotonic() - start < 5
    assert not live_children() and not segment_exists(name)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.parametrize("parent_handler", [False, True])
def test_a_reset_after_a_worker_died_names_the_worker(sig, parent_handler) -> None:
    """Found by the chaos suite (seed 12): a worker killed just before the trainer re-seeds its envs at a
    checkpoint made the seed's ``pipe.send`` raise BrokenPipeError, which click reads as its own stdout
    closing: exit 1 without a word. The reset now raises the WorkerError naming the worker. With a Python
    SIGTERM handler in the parent (``ray.init`` installs ``sys.exit(15)``) a forked worker still dies by the
    signal, not by "exited with status 15" (seen in CI after a test had started Ray in the process)."""
    previous = signal.signal(signal.SIGTERM, lambda s, f: sys.exit(s)) if parent_handler else None
    try:
        venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2)
    finally:
        if parent_handler:
            signal.signal(signal.SIGTERM, previous)
    name = venv.resources.shared.name
    venv.reset(seed=0)
    os.kill(venv.pids[0], sig)
    venv.resources.processes[0].join(10)  # it has exited before the reset (the race the chaos run hit)
    with pytest.raises(WorkerError, match=rf"worker 0 \(pid \d+, envs 0-1\) was killed by signal {int(sig)}"):
        venv.reset(seed=1)
    assert not live_children() and not segment_exists(name)


def test_env_killing_its_worker_is_detected() -> None:
    venv = vector.make(env_spec_for("faulty", fail_at=2, mode="kill"), backend="multiprocessing", num_envs=2, num_workers=2)
    error, elapsed = run_until_error(venv, 5.0)
    assert "killed by signal 9" in str(error) and elapsed < 5
    assert not live_children()


def test_100_create_close_cycles_leave_nothing() -> None:
    names = []
    for i in range(100):
        venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2)
        names.append(venv.resources.shared.name)
        if i % 10 == 0:
            venv.reset(seed=i)
            venv.step(np.zeros(4, dtype=np.int64))
        venv.close()
    assert not live_children()
    assert not [n for n in names if segment_exists(n)]


def test_garbage_collection_reaps_workers() -> None:
    venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2)
    venv.reset(seed=0)
    name = venv.resources.shared.name
    del venv
    gc.collect()
    assert not live_children() and not segment_exists(name)


@pytest.mark.slow
def test_ctrl_c_reaps_workers_and_shared_memory() -> None:
    script = textwrap.dedent("""
        import faulthandler, signal, numpy as np, sys
        faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's stack dump if exit hangs
        # As in a terminal: a test run launched in the background (`cmd &`) starts with SIGINT
        # ignored, which Python and this child would inherit, and Ctrl-C would do nothing.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import pufferbox.vector as vector
        venv = vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2)
        venv.reset(seed=0)
        print(venv.resources.shared.name, *venv.pids, flush=True)
        while True:
            venv.step(np.zeros(4, dtype=np.int64))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    name, *pids = proc.stdout.readline().split()
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        proc.kill()
        _, err = proc.communicate()
        workers = {p: psutil.Process(p).status() for p in map(int, pids) if psutil.pid_exists(p)}
        pytest.fail(f"still running 30 s after Ctrl-C; workers {workers}; its stacks:\n{err[-6000:]}")
    assert code != 0, proc.stderr.read()
    time.sleep(0.2)
    alive = [p for p in map(int, pids) if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive and not segment_exists(name)
