"""Local Ray's session dir is private (mkdtemp, 0700, foreign roots refused); a wrong cluster address fails fast."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest

from pufferbox.vector.base import VectorConfigError
from pufferbox.vector.ray import RayConnectError, check_reachable, private_temp_dir


def test_session_dirs_are_private_and_unpredictable(tmp_path):
    first, second = private_temp_dir(str(tmp_path)), private_temp_dir(str(tmp_path))
    assert first != second and os.path.basename(first).startswith("pbray-")
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o700 and os.stat(first).st_uid == os.getuid()


def test_a_root_writable_by_everyone_without_sticky_bit_is_refused(tmp_path):
    root = tmp_path / "open"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(VectorConfigError, match="writable by other users"):
        private_temp_dir(str(root))
    root.chmod(0o1777)  # like /tmp: others cannot remove or replace our entries
    assert os.path.isdir(private_temp_dir(str(root)))


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_a_root_owned_by_another_user_is_refused(tmp_path):
    root = tmp_path / "theirs"
    root.mkdir(mode=0o755)
    os.chown(root, 12345, 12345)
    with pytest.raises(VectorConfigError, match="owned by uid 12345"):
        private_temp_dir(str(root))


def test_unreachable_address_fails_within_the_timeout():
    start = time.monotonic()
    with pytest.raises(RayConnectError, match=r"cannot reach the Ray cluster at 127.0.0.1:1 .*--ray-address"):
        check_reachable("127.0.0.1:1", timeout=5)
    with pytest.raises(RayConnectError, match="ray://127.0.0.1:1"):
        check_reachable("ray://127.0.0.1:1", timeout=5)
    assert time.monotonic() - start < 15


@pytest.mark.parametrize("how", ["flag", "env"])
def test_train_with_a_wrong_ray_address_is_one_line_within_seconds(tmp_path, how):
    env = {**os.environ}
    args = [
        sys.executable,
        "-m",
        "pufferbox",
        "train",
        "cartpole",
        "--backend",
        "ray",
        "--num-envs",
        "2",
        "--run-dir",
        str(tmp_path / "r"),
    ]
    if how == "flag":
        args += ["--ray-address", "127.0.0.1:1"]
    else:
        env["RAY_ADDRESS"] = "127.0.0.1:1"
    start = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert time.monotonic() - start < 60
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot reach the Ray cluster at 127.0.0.1:1"), proc.stderr


def test_tournament_with_a_wrong_ray_address_leaves_no_board(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pufferbox",
            "tournament",
            "cartpole",
            "--pods",
            "1",
            "--total-steps",
            "1000",
            "--ray-address",
            "127.0.0.1:1",
            "--run-dir",
            str(tmp_path / "t"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "127.0.0.1:1" in proc.stderr, proc.stderr
    assert not (tmp_path / "t" / "leaderboard.sqlite").exists()


def test_ray_address_with_another_backend_is_one_line(tmp_path):
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands

    load_commands()
    result = CliRunner().invoke(
        cli, ["train", "cartpole", "--backend", "serial", "--ray-address", "127.0.0.1:1", "--run-dir", str(tmp_path / "r")]
    )
    assert result.exit_code == 2 and result.output.strip() == (
        "Error: --ray-address applies to --backend ray, not 'serial'; drop one of them (or add --learners N)"
    )
