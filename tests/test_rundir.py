"""Run directories survive misuse and faults: reuse, failed resume, two trainers, kills, SIGTERM, full or
read-only disks."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.train.checkpoint import latest_checkpoint, list_checkpoints, load_checkpoint, save_checkpoint

QUICK = ["--num-envs", "4", "--set", "train.num_steps=32", "--set", "train.checkpoint_interval=2", "--no-tensorboard"]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def pufferbox(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pufferbox", *args], capture_output=True, text=True, env=ENV, timeout=timeout
    )


def one_line_error(proc_or_result, *needles: str) -> str:
    code = getattr(proc_or_result, "returncode", None)
    code = proc_or_result.exit_code if code is None else code
    text = getattr(proc_or_result, "stderr", None) or proc_or_result.output
    assert code == 2, text
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), text
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def start_trainer(run_dir: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pufferbox",
            "train",
            "cartpole",
            "--run-dir",
            str(run_dir),
            "--total-steps",
            "10000000",
            *QUICK,
            "--set",
            "train.stop_on_solve=false",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=ENV,
    )


def wait_for_metric_lines(proc: subprocess.Popen, run_dir: Path, lines: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    path = run_dir / "metrics.jsonl"
    while not path.exists() or len(path.read_text().splitlines()) < lines:
        if proc.poll() is not None:
            pytest.fail(f"trainer exited {proc.returncode}: {proc.stdout.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("trainer wrote no metrics in time")
        time.sleep(0.1)


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file() and p.name != ".lock"
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    load_commands()
    run_dir = tmp_path_factory.mktemp("runs") / "done"
    result = CliRunner().invoke(
        cli, ["train", "cartpole", "--run-dir", str(run_dir), "--total-steps", "512", "--seed", "3", *QUICK]
    )
    assert result.exit_code == 0, result.output
    return run_dir


def test_train_refuses_a_run_dir_that_holds_a_run(finished, tmp_path):
    run_dir = tmp_path / "used"
    shutil.copytree(finished, run_dir)
    before = snapshot(run_dir)
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(run_dir), "--total-steps", "256", *QUICK])
    one_line_error(result, str(run_dir), "already holds a run", f"--resume {run_dir}", "another --run-dir")
    assert snapshot(run_dir) == before


def test_default_run_dirs_are_distinct_even_in_the_same_second(tmp_path):
    from pufferbox.train.runner import default_run_dir

    dirs = [default_run_dir("cartpole", tmp_path) for _ in range(3)]
    assert len(set(dirs)) == 3 and all(d.is_dir() for d in dirs)


def test_default_run_dir_of_a_family_env_nests_under_the_family(tmp_path):
    from pufferbox.train.runner import default_run_dir

    run_dir = default_run_dir("procgen/bigfish", tmp_path / "runs")  # runs/ and runs/procgen/ do not exist yet
    assert run_dir.is_dir() and run_dir.parent == tmp_path / "runs" / "procgen"
    assert run_dir.name.startswith("bigfish-")


def test_rotation_never_deletes_the_checkpoint_just_written(tmp_path):
    for update in (50, 60, 70):  # a stranger's higher-numbered checkpoints
        save_checkpoint({"update": update}, tmp_path, update, keep=3)
    path = save_checkpoint({"update": 2}, tmp_path, 2, keep=3)
    assert path.exists() and load_checkpoint(path)["update"] == 2


def test_concurrent_writes_of_one_update_never_collide_on_the_temp_file(tmp_path):
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for _ in range(10):
                save_checkpoint({"writer": i, "w": torch.zeros(20_000)}, tmp_path, 1, keep=3)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert load_checkpoint(tmp_path / "ckpt-00000001.pt")["w"].shape == (20_000,)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt-00000001.pt"]  # no temp files left


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--set", "policy.hidden_size=128"], "does not fit this config"),
        (["--set", "train.optimizer=muon"], "the run's muon; fix: resume with --set train.optimizer=adam"),
        (["--set", "train.no_such_key=1"], "no_such_key"),
        (["--backend", "multiprocessing", "--num-workers", "3"], "3"),
    ],
)
def test_failed_resume_leaves_the_run_dir_unchanged(finished, tmp_path, args, needle):
    run_dir = tmp_path / "resumed"
    shutil.copytree(finished, run_dir)
    before = snapshot(run_dir)
    result = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--total-steps", "768", *args])
    one_line_error(result, needle)
    assert snapshot(run_dir) == before
    result = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--total-steps", "768"])
    assert result.exit_code == 0, result.output  # a plain resume still works


def test_resume_removes_temp_files_a_killed_writer_left(finished, tmp_path):
    """Found by the chaos suite: a SIGKILL while a checkpoint is written leaves ``.ckpt-N.pt.XXXX.tmp``."""
    run_dir = tmp_path / "stale"
    shutil.copytree(finished, run_dir)
    stale = [run_dir / "checkpoints" / ".ckpt-00000003.pt.k1ll3d.tmp", run_dir / "metrics.jsonl.4242.tmp"]
    for path in stale:
        path.write_bytes(b"half a checkpoint")
    result = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--total-steps", "768"])
    assert result.exit_code == 0, result.output
    assert not any(path.exists() for path in stale)
    assert not list(run_dir.rglob("*.tmp"))


@pytest.mark.slow
def test_a_second_trainer_on_the_same_run_dir_is_refused_naming_the_holder(tmp_path):
    run_dir = tmp_path / "shared"
    first = start_trainer(run_dir)
    try:
        wait_for_metric_lines(first, run_dir, 1)
        second = pufferbox("train", "--resume", str(run_dir), "--total-steps", "100000", timeout=60)
        one_line_error(second, str(run_dir), f"pid {first.pid}")
        third = pufferbox("train", "cartpole", "--run-dir", str(run_dir), *QUICK, timeout=60)
        one_line_error(third, f"pid {first.pid}")
        assert first.poll() is None  # the first one is undisturbed
    finally:
        first.kill()
        first.communicate(timeout=30)


@pytest.mark.slow
def test_resume_after_a_kill_writes_each_update_once(tmp_path):
    run_dir = tmp_path / "killed"
    proc = start_trainer(run_dir, "--set", "train.checkpoint_interval=4")
    deadline = time.monotonic() + 90
    while True:  # freeze it between two checkpoints, so the kill leaves lines for updates a resume replays
        wait_for_metric_lines(proc, run_dir, 5)
        proc.send_signal(signal.SIGSTOP)
        done = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))["update"]
        written = len((run_dir / "metrics.jsonl").read_text().splitlines())
        if written > done or time.monotonic() > deadline:
            break
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert written > done
    total = (written + 2) * 128
    result = pufferbox("train", "--resume", str(run_dir), "--total-steps", str(total))
    assert result.returncode == 0, result.stdout + result.stderr
    updates = [json.loads(line)["update"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert updates == list(range(1, len(updates) + 1)) and updates[-1] == total // 128


@pytest.mark.slow
def test_sigterm_checkpoints_exits_143_and_resumes(tmp_path):
    run_dir = tmp_path / "terminated"
    proc = start_trainer(run_dir)
    wait_for_metric_lines(proc, run_dir, 1)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert "SIGTERM: saving a checkpoint" in out and "Traceback" not in out
    state = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert state["global_step"] == last["global_step"] > 0
    result = pufferbox("train", "--resume", str(run_dir), "--total-steps", str(last["global_step"] + 256))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{last['global_step'] + 256:,} steps" in result.stdout


def can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    return (
        subprocess.run(
            ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True
        ).returncode
        == 0
    )


needs_mount = pytest.mark.skipif(
    not can_mount(), reason="needs `unshare -m` and mount (root or CAP_SYS_ADMIN) to build a full or read-only filesystem"
)


def in_mount_namespace(script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=ENV, timeout=timeout)


@needs_mount
@pytest.mark.slow
def test_a_full_disk_is_a_one_line_error_naming_enospc_and_the_path(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    py = f"{sys.executable} -m pufferbox"
    proc = in_mount_namespace(
        f"mount -t tmpfs -o size=48k tmpfs {mnt} && {py} train cartpole --run-dir {mnt}/r "
        f"--total-steps 100000 {' '.join(QUICK)}"
    )
    line = one_line_error(proc, "ENOSPC", str(mnt / "r"))
    assert "Traceback" not in proc.stdout + proc.stderr, line


@needs_mount
@pytest.mark.slow
def test_a_read_only_run_dir_is_a_one_line_error(finished, tmp_path):
    store = tmp_path / "ro"
    shutil.copytree(finished, store / "run")
    py = f"{sys.executable} -m pufferbox"
    ro = f"mount --bind {store} {store} && mount -o remount,bind,ro {store}"
    proc = in_mount_namespace(f"{ro} && {py} train --resume {store}/run --total-steps 768")
    one_line_error(proc, "read-only file system (EROFS)", str(store / "run"))
    proc = in_mount_namespace(f"{ro} && {py} train cartpole --run-dir {store}/new {' '.join(QUICK)}")
    one_line_error(proc, "EROFS", str(store / "new"))
    assert list_checkpoints(store / "run" / "checkpoints")  # nothing lost


@pytest.mark.parametrize("explicit", [True, False])
def test_a_start_that_fails_leaves_no_run_directory(tmp_path, monkeypatch, explicit):
    monkeypatch.chdir(tmp_path)
    args = ["train", "cartpole", "--set", "train.no_such_key=1", *(["--run-dir", "mine"] if explicit else [])]
    result = CliRunner().invoke(cli, args)
    one_line_error(result, "no_such_key")
    assert not (tmp_path / "mine").exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.slow
def test_sigterm_with_worker_processes_closes_them(tmp_path):
    psutil = pytest.importorskip("psutil")
    run_dir = tmp_path / "workers"
    proc = start_trainer(run_dir, "--backend", "multiprocessing", "--num-workers", "2")
    wait_for_metric_lines(proc, run_dir, 1)
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert len(workers) >= 2
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, out
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"workers left running: {alive}"
    assert latest_checkpoint(run_dir / "checkpoints") is not None


@pytest.mark.slow  # a trainer, the 3 s grace and a resume: about 12 s
@pytest.mark.parametrize("overlap", ["false", "true"], ids=["sync", "overlap"])
def test_sigterm_with_a_stopped_worker_saves_the_last_update_within_seconds(tmp_path, overlap):
    """Issue 38, defect 4: a SIGSTOPped worker made SIGTERM wait out step_timeout (60 s) and exit 2
    without a checkpoint. Now the rollout waiting on it (in the main thread, or the overlap thread)
    is abandoned after the grace (3 s): the last completed update is saved, the workers are killed
    and reaped, exit 143, and the run resumes."""
    psutil = pytest.importorskip("psutil")
    run_dir = tmp_path / "stopped"
    proc = start_trainer(
        run_dir,
        *("--backend", "multiprocessing", "--num-workers", "2"),
        *("--set", "train.checkpoint_interval=100000", "--set", f"train.overlap={overlap}"),
    )
    workers = []
    try:
        wait_for_metric_lines(proc, run_dir, 2)
        children = psutil.Process(proc.pid).children(recursive=True)
        workers = [c for c in children if "resource_tracker" not in " ".join(c.cmdline())]
        assert len(workers) == 2
        workers[0].send_signal(signal.SIGSTOP)
        time.sleep(0.5)  # the trainer now waits on the stopped worker
        assert latest_checkpoint(run_dir / "checkpoints") is None  # no checkpoint before the signal
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        took = time.monotonic() - start
    finally:
        for worker in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                worker.kill()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert took < 15, f"SIGTERM took {took:.1f}s"
    assert "Traceback" not in out
    gone, alive = psutil.wait_procs(workers, timeout=0.5)
    assert not alive, f"workers left running after the trainer exited: {alive}"
    state = load_checkpoint(latest_checkpoint(run_dir / "checkpoints"))
    last = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert state["global_step"] == last["global_step"] > 0 and state["update"] == last["update"]
    result = pufferbox("train", "--resume", str(run_dir), "--total-steps", str(last["global_step"] + 256))
    assert result.returncode == 0, result.stdout + result.stderr
