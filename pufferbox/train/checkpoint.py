"""Checkpoint files: atomic writes, the last K kept, loads that cannot run pickled code.

A checkpoint is a dict of plain tensors, numbers and strings (state dicts, RNG states as
uint8 tensors), saved with ``torch.save`` to a uniquely named ``.ckpt-<update>.pt.*.tmp`` in the same
folder, fsynced, then renamed over ``ckpt-<update>.pt`` with ``os.replace``: a crash
mid-write leaves only a stray ``.tmp`` and every earlier checkpoint intact.
Loading uses ``torch.load(weights_only=True)``.

Example:
    >>> import tempfile, torch
    >>> d = tempfile.mkdtemp()
    >>> path = save_checkpoint({"step": 3, "w": torch.ones(2)}, d, update=3)
    >>> load_checkpoint(path)["step"], latest_checkpoint(d) == path
    (3, True)
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

from pufferbox.train.config import ConfigError

__all__ = ["save_checkpoint", "load_checkpoint", "latest_checkpoint", "list_checkpoints", "CheckpointError"]

NAME = re.compile(r"^ckpt-(\d+)\.pt$")


class CheckpointError(ConfigError):
    """No usable checkpoint where one was asked for (a user error: one line, exit 2)."""


def list_checkpoints(directory: str | Path) -> list[Path]:
    """Checkpoints in ``directory``, oldest first (by update number)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(directory: str | Path) -> Path | None:
    found = list_checkpoints(directory)
    return found[-1] if found else None


def fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some filesystems do not open directories
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(state: dict[str, Any], directory: str | Path, update: int, keep: int = 3) -> Path:
    """Write ``state`` atomically as ``directory/ckpt-<update>.pt``; delete all but the newest ``keep``.

    The checkpoint just written is never deleted, whatever numbers other files in ``directory`` carry.
    The state is serialized in memory first, so a full disk surfaces as ``OSError(ENOSPC)`` from the
    write (torch's own writer reports it as ``unexpected pos``).
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"ckpt-{update:08d}.pt"
    buffer = io.BytesIO()
    torch.save(state, buffer)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(buffer.getbuffer())
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; checkpoints are shared like any output file
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(directory)
    if keep > 0:
        for old in list_checkpoints(directory)[:-keep]:
            if old != final:
                old.unlink(missing_ok=True)
    return final


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint file, or the newest one of a run dir / checkpoint dir."""
    path = Path(path)
    if path.is_dir():
        found = latest_checkpoint(path / "checkpoints") or latest_checkpoint(path)
        if found is None:
            raise CheckpointError(f"{path}: no checkpoint (ckpt-*.pt) in it or in its checkpoints/ folder")
        path = found
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:
        raise CheckpointError(f"{path}: not a loadable pufferbox checkpoint ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
