"""Run directories: one trainer at a time, never reused by accident, disk faults named.

A run directory belongs to one run. :func:`claim_run_dir` takes an exclusive ``flock`` on
``RUN_DIR/.lock`` (held until the process exits, so a killed trainer never leaves a stale
lock) and refuses a directory that already holds a run unless it is being resumed.
:func:`trim_metrics` drops the metric lines of updates that a resume will replay, and
:func:`disk_error` turns ENOSPC / read-only / permission faults into one-line errors.

Example:
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> lock = claim_run_dir(d, resume=False)
    >>> claim_run_dir(d, resume=False)                       # doctest: +ELLIPSIS
    Traceback (most recent call last):
    pufferbox.train.rundir.RunDirError: ...: in use by another trainer (pid ...); wait for it ... --run-dir
    >>> lock.release()
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from pufferbox.train.config import ConfigError

__all__ = [
    "RunDirError",
    "RunDirLost",
    "StorageError",
    "RunDirGuard",
    "RunDirLock",
    "claim_run_dir",
    "new_run_dir",
    "discard_empty_run_dir",
    "discard_failed_start",
    "holds_run",
    "trim_metrics",
    "disk_error",
]

LOCK_NAME = ".lock"
HELD_FDS: set[int] = set()  # lock fds of this process; forked workers close their copies


def close_inherited_locks() -> None:
    # A forked worker shares the lock's open file description: closing its copy (never LOCK_UN, which
    # would unlock the parent too) means the lock ends with the trainer even if a worker outlives it.
    for fd in HELD_FDS:
        try:
            os.close(fd)
        except OSError:
            pass
    HELD_FDS.clear()


os.register_at_fork(after_in_child=close_inherited_locks)


class RunDirError(ConfigError):
    """The run directory cannot be used as asked (a user error: one line, exit 2)."""


class RunDirLost(RunDirError):
    """The run directory was deleted or replaced under a live run (nothing resumable is left of it)."""


class RunDirGuard:
    """Notices a run directory deleted (``rm -rf RUN_DIR``) or replaced while the run writes it.

    Called with each update's metrics before the writers (it raises :class:`RunDirLost`, so nothing is
    written into a directory that is no longer the run's), and once more before a run reports its
    checkpoint. The run is lost when ``RUN_DIR`` is gone, is another directory (inode), or has no
    ``config.toml`` (a resume needs it).
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        st = os.stat(self.run_dir)
        self.identity = (st.st_dev, st.st_ino)
        self.previous_hook: Any = None

    def lost(self) -> bool:
        try:
            st = os.stat(self.run_dir)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self.identity or not (self.run_dir / "config.toml").is_file()

    def check(self) -> None:
        if self.lost():
            raise RunDirLost(
                f"{self.run_dir}: the run directory was deleted or replaced during training (its config.toml is "
                "gone); nothing more was written and no checkpoint of this run can be resumed: start a new run"
            )

    def __call__(self, metrics: dict) -> None:
        self.check()

    def quiet_writer_threads(self) -> None:
        """From now until :meth:`restore_threads`, a writer thread (TensorBoard's) failing because the run dir is gone
        prints no traceback: :meth:`check` reports the loss in one line."""
        previous = self.previous_hook = threading.excepthook

        def hook(args: Any) -> None:
            if not (issubclass(args.exc_type, OSError) and self.lost()):
                previous(args)

        threading.excepthook = hook

    def close(self) -> None:  # a writer's: nothing to flush
        pass

    def restore_threads(self) -> None:
        if self.previous_hook is not None:
            threading.excepthook, self.previous_hook = self.previous_hook, None


class RunDirLock:
    """An exclusive, non-blocking ``flock`` on ``RUN_DIR/.lock`` that records the holder's pid."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOCK_NAME
        self.fd: int | None = None
        self.fresh = False  # the directory was empty when claimed (a failed start may remove it)

    def acquire(self) -> RunDirLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunDirError(
                f"{self.path.parent}: in use by another trainer (pid {holder}); "
                f"wait for it to finish or pick another --run-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        HELD_FDS.add(fd)
        return self

    def release(self) -> None:
        # The file stays: unlinking it would let a third process lock a new inode while a second holds the old one.
        if self.fd is not None:
            HELD_FDS.discard(self.fd)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def holds_run(run_dir: str | Path) -> bool:
    """True if ``run_dir`` has a config, a checkpoint or metrics of an earlier run."""
    run_dir = Path(run_dir)
    metrics = run_dir / "metrics.jsonl"
    ckpts = run_dir / "checkpoints"
    return (
        (run_dir / "config.toml").exists()
        or (metrics.exists() and metrics.stat().st_size > 0)
        or (ckpts.is_dir() and any(p.name.startswith("ckpt-") for p in ckpts.iterdir()))
    )


def claim_run_dir(run_dir: str | Path, *, resume: bool) -> RunDirLock:
    """Create (if needed) and lock ``run_dir``; unless ``resume``, refuse one that holds a run or anything else
    (a foreign directory: the run would mix its files with someone's, and a failed start would leave them)."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    fresh = not any(p.name != LOCK_NAME for p in run_dir.iterdir())
    if not resume:
        refuse_foreign(run_dir)
    elif failed_start(run_dir):  # nothing to resume: say how to retry it
        raise RunDirError(
            f"{run_dir}: its run failed before its first checkpoint, so there is nothing to resume; start it again "
            f"with `pufferbox train {recorded_env(run_dir)} --run-dir {run_dir}` (that replaces the failed start)"
        )
    elif not holds_run(run_dir):  # before the lock file: a resume of someone's folder writes nothing into it
        raise RunDirError(f"{run_dir}: not a run directory with config.toml and checkpoints/ckpt-*.pt")
    lock = RunDirLock(run_dir).acquire()
    lock.fresh = fresh
    if not resume and failed_start(run_dir):  # locked: no live trainer is still starting in it
        clear_failed_start(run_dir)
        lock.fresh = True
    if not resume and holds_run(run_dir):
        lock.release()
        raise RunDirError(f"{run_dir}: already holds a run; continue it with `--resume {run_dir}` or pick another --run-dir")
    return lock


# What a run writes before its first checkpoint (and worker-error.txt, the traceback of the env that broke it).
FAILED_START_FILES = ("config.toml", "metrics.jsonl", "worker-error.txt")
FAILED_START_DIRS = ("tb", "checkpoints")


def failed_start(run_dir: Path) -> bool:
    """True if ``run_dir`` holds only what a run writes before its first checkpoint (a start that failed or
    was killed): ``--run-dir`` may take it again, ``--resume`` has nothing to continue."""
    names = {p.name for p in run_dir.iterdir() if p.name != LOCK_NAME and not p.name.startswith(".tmp")}
    if not names or not names <= {*FAILED_START_FILES, *FAILED_START_DIRS}:
        return False
    ckpts = run_dir / "checkpoints"
    return not (ckpts.is_dir() and any(p.name.startswith("ckpt-") for p in ckpts.iterdir()))


def clear_failed_start(run_dir: Path) -> None:
    """Remove a failed start's files, so ``--run-dir`` starts the run again in an empty directory."""
    for name in FAILED_START_FILES:
        (run_dir / name).unlink(missing_ok=True)
    for name in FAILED_START_DIRS:
        shutil.rmtree(run_dir / name, ignore_errors=True)


def recorded_env(run_dir: Path) -> str:
    """The env ``run_dir``'s config.toml names (``[run] env``), or ``ENV`` where it names none."""
    import tomllib

    try:
        env = tomllib.loads((run_dir / "config.toml").read_text()).get("run", {}).get("env")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        env = None
    return env if isinstance(env, str) and env else "ENV"


def refuse_foreign(run_dir: Path) -> None:
    """A non-empty directory holding no run is refused before anything (the lock file) is written into it."""
    others = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK_NAME)
    if others and not holds_run(run_dir) and not failed_start(run_dir):
        raise RunDirError(
            f"{run_dir}: not empty (it holds {', '.join(others[:3])}{', ...' if len(others) > 3 else ''}) and is no "
            "pufferbox run; --run-dir takes a new or empty directory"
        )


def discard_empty_run_dir(run_dir: Path) -> None:
    """Remove ``run_dir`` if it holds nothing but empty folders and the lock file (a start that failed)."""
    try:
        for path in sorted(run_dir.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if path.is_dir():
                path.rmdir()
            elif path.name == LOCK_NAME and path.parent == run_dir:
                path.unlink()
            else:
                return
        run_dir.rmdir()
    except OSError:  # not empty after all, or not ours to remove: leave it
        pass


def discard_failed_start(run_dir: Path) -> None:
    """Remove a new run directory whose run learned nothing and saved no checkpoint: what the run itself
    wrote (config, metrics, TensorBoard events) and then the directory, unless it holds anything else."""
    if (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").glob("ckpt-*.pt")):
        return
    for name in ("config.toml", "metrics.jsonl"):
        (run_dir / name).unlink(missing_ok=True)
    shutil.rmtree(run_dir / "tb", ignore_errors=True)
    discard_empty_run_dir(run_dir)


def new_run_dir(env: str, root: str | Path = "runs") -> Path:
    """Create a fresh ``root/ENV-TIMESTAMP[-N]`` atomically: two runs started in the same second get two dirs.
    A family's env (``procgen/bigfish``) gets ``root/procgen/bigfish-TIMESTAMP``."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    (Path(root) / env).parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        path = Path(root) / (f"{env}-{stamp}" if n == 1 else f"{env}-{stamp}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RunDirError(f"{root}: no free run directory name for {env}-{stamp}; pass --run-dir")


def trim_metrics(path: str | Path, update: int) -> None:
    """Keep only the lines of updates ``<= update`` (a resume from that update replays the rest).

    A torn last line (the process was killed mid-write) is dropped too. Rewritten atomically.
    """
    path = Path(path)
    if not path.exists():
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if int(record.get("update", 0)) <= update:
            kept.append(line + "\n")
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text("".join(kept))
    os.replace(tmp, path)


DISK_FAULTS = {
    errno.ENOSPC: "no space left on device (ENOSPC); free some space or pick another --run-dir (earlier "
    "checkpoints are intact: continue with --resume)",
    errno.EDQUOT: "disk quota exceeded (EDQUOT); free some space or pick another --run-dir",
    errno.EROFS: "read-only file system (EROFS); pick a writable --run-dir",
    errno.EACCES: "permission denied (EACCES); pick a --run-dir you can write to",
    errno.EPERM: "operation not permitted (EPERM); pick a --run-dir you can write to",
}


class StorageError(RunDirError):
    """The storage under the run failed (full, read-only, no permission): no fault of the run's settings."""


def disk_error(exc: OSError, run_dir: str | Path) -> StorageError | None:
    """A one-line :class:`StorageError` for a storage fault, naming the path; ``None`` for other errors."""
    reason = DISK_FAULTS.get(exc.errno or 0)
    if reason is None:
        return None
    return StorageError(f"{exc.filename or run_dir}: {reason}")
