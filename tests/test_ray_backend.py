"""The Ray backend matches serial exactly, and every actor of a pool gets work."""

from __future__ import annotations

import os

import psutil
import pytest
from test_multiprocessing import assert_same, trajectories  # tests/ is on sys.path (rootdir-relative imports)

import pufferbox.vector as vector
from pufferbox.vector.base import VectorConfigError
from pufferbox.vector.testenvs import env_spec_for

ray = pytest.importorskip("ray")


@pytest.mark.slow
@pytest.mark.parametrize(
    "env,kwargs",
    [
        ("cartpole", dict(num_workers=2)),
        ("cartpole", dict(num_workers=4, batch_size=2)),
        ("countdown", dict(num_workers=4, batch_size=4)),
    ],
)
def test_ray_matches_serial(local_ray, env: str, kwargs: dict) -> None:
    spec = env_spec_for(env) if env == "countdown" else env
    n_actions = 3 if env == "countdown" else 2
    with vector.make(spec, backend="serial", num_envs=8, native=False) as serial:
        expected = trajectories(serial, 25, n_actions)
    with vector.make(spec, backend="ray", num_envs=8, native=False, **kwargs) as venv:
        got = trajectories(venv, 25, n_actions)
        counts = venv.step_counts()
    assert_same(expected, got)
    assert min(counts) > 0, f"idle actors in the pool: steps per actor {counts}"


@pytest.mark.slow
def test_ray_local_start_is_loopback_without_home_files(local_ray) -> None:
    nodes = ray.nodes()
    assert [n["NodeManagerAddress"] for n in nodes] == ["127.0.0.1"]
    listening = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            listening |= {c.laddr.ip for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            continue
    assert listening, "found no listening Ray sockets to check"
    assert listening <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, f"Ray listens beyond loopback: {listening}"
    home = os.path.expanduser("~")
    assert not os.path.exists(os.path.join(home, ".ray", "auth_token"))
    with pytest.raises(VectorConfigError, match="no zero-copy"):
        vector.make("cartpole", backend="ray", num_envs=2, num_workers=2, zero_copy=True)


@pytest.mark.slow
@pytest.mark.parametrize("keep", [False, True])
def test_local_ray_session_files_removed_at_exit(tmp_path, keep: bool) -> None:
    """A process that started a local Ray leaves no private session dir behind (unless asked to keep logs)."""
    import subprocess
    import sys

    script = (
        "import os, pufferbox.vector as v\n"
        "with v.make('cartpole', backend='ray', num_envs=2, num_workers=1, native=False) as venv:\n"
        "    venv.reset(seed=0)\n"
        "import pufferbox.vector.ray as r\n"
        "print(r.local_temp_dir, oct(os.stat(r.local_temp_dir).st_mode & 0o777))\n"
    )
    import shutil
    import tempfile

    root = tempfile.mkdtemp(prefix="pbt-", dir="/tmp")  # short: Unix socket paths are limited to 107 bytes
    env = {**os.environ, "PUFFERBOX_KEEP_RAY_LOGS": "1" if keep else "0", "PUFFERBOX_RAY_TMPDIR": root}
    env.pop("RAY_ADDRESS", None)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        temp_dir, mode = done.stdout.split()[-2:]
        assert os.path.dirname(temp_dir) == root and os.path.basename(temp_dir).startswith("pbray-")
        assert mode == "0o700"  # private: Ray makes sockets/ and logs/ inside it world-writable
        assert os.path.isdir(temp_dir) == keep, f"{temp_dir} exists: {os.path.isdir(temp_dir)}, expected {keep}"
    finally:
        shutil.rmtree(root, ignore_errors=True)
