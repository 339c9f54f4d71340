"""Shared-memory buffers for process backends: one segment, numpy views, checked size.

One ``SharedMemory`` segment holds every array (the :class:`~pufferbox.buffers.Buffers`
plus the backend's control arrays), each 64-byte aligned so workers never share a
cache line with their neighbours' flags. :func:`check_shm_room` refuses sizes that
``/dev/shm`` cannot hold (Docker gives containers 64 MB by default) with the fix.

Example:
    >>> seg = SharedArrays.create({"a": ((4,), np.dtype(np.float32))})
    >>> seg.arrays["a"][:] = 1.0
    >>> seg.destroy()
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.vector.base import VectorConfigError

SHM_DIR = "/dev/shm"
SEGMENT_PREFIX = "pufferbox_"


def segment_name(pid: int | None = None) -> str:
    """A fresh segment name, ``pufferbox_<creator pid>_<random>``: a leaked segment names its creator.

    Example:
        >>> segment_name(42).startswith("pufferbox_42_")
        True
    """
    return f"{SEGMENT_PREFIX}{os.getpid() if pid is None else pid}_{secrets.token_hex(6)}"


ALIGN = 64
Layout = dict[str, tuple[tuple[int, ...], np.dtype]]


def check_shm_room(nbytes: int, shm_dir: str = SHM_DIR) -> None:
    """Raise a VectorConfigError with the fix when ``shm_dir`` has less than ``nbytes`` free."""
    if not os.path.isdir(shm_dir):
        return  # not Linux-style shared memory; let the OS decide
    free = shutil.disk_usage(shm_dir).free
    if nbytes > free:
        raise VectorConfigError(
            f"shared memory too small: the buffers need {nbytes / 2**20:.1f} MiB but {shm_dir} has "
            f"{free / 2**20:.1f} MiB free; raise it (`docker run --shm-size=8g`, compose `shm_size: 8gb`) "
            f"or use fewer envs / smaller observations"
        )


def backend_layout(obs_spec: ObservationSpec, act_spec: ActionSpec, rows: int, num_workers: int) -> Layout:
    """The multiprocessing backend's segment: every row's :class:`Buffers` arrays, then per worker
    a command flag and a has-episodes flag, and one ``closing`` flag."""
    layout: Layout = dict(Buffers.layout(obs_spec, act_spec, rows))
    layout["flags"] = ((num_workers,), np.dtype(np.int32))
    layout["has_info"] = ((num_workers,), np.dtype(np.int32))
    layout["closing"] = ((1,), np.dtype(np.int32))
    return layout


def buffers_of(arrays: dict[str, np.ndarray]) -> Buffers:
    """The :class:`Buffers` views among a segment's arrays."""
    return Buffers(**{name: arrays[name] for name in Buffers.__dataclass_fields__})


def offsets(layout: Layout) -> tuple[dict[str, int], int]:
    out, pos = {}, 0
    for name, (shape, dtype) in layout.items():
        out[name] = pos
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        pos += (size + ALIGN - 1) // ALIGN * ALIGN
    return out, max(pos, ALIGN)


class Segment(shared_memory.SharedMemory):
    """A segment that stays mapped while any array view of it lives (see :func:`view`)."""

    def __del__(self) -> None:
        with contextlib.suppress(BufferError, OSError):  # views outlive it: they unmap it when they go
            self.close()


def view(buf: memoryview, shape: tuple[int, ...], dtype: np.dtype, offset: int) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.empty(shape, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=count, offset=offset).reshape(shape)


class SharedArrays:
    """Named numpy arrays in one shared-memory segment (created here, attached in workers)."""

    def __init__(self, shm: shared_memory.SharedMemory, layout: Layout, owner: bool):
        self.shm, self.layout, self.owner = shm, layout, owner
        pos, _ = offsets(layout)
        # np.frombuffer holds an export of the segment's buffer while any view lives, so destroy()
        # cannot unmap memory another thread still reads (np.ndarray(buffer=...) holds none).
        buf = shm.buf
        assert buf is not None  # None only after close()
        self.arrays: dict[str, np.ndarray] = {
            name: view(buf, shape, dtype, pos[name]) for name, (shape, dtype) in layout.items()
        }

    @classmethod
    def create(cls, layout: Layout) -> SharedArrays:
        _, nbytes = offsets(layout)
        check_shm_room(nbytes)
        try:
            shm = Segment(name=segment_name(), create=True, size=nbytes)
        except OSError as exc:
            raise VectorConfigError(
                f"cannot allocate {nbytes / 2**20:.1f} MiB of shared memory ({exc}); raise "
                f"/dev/shm (`docker run --shm-size=8g`, compose `shm_size: 8gb`)"
            ) from exc
        return cls(shm, layout, owner=True)

    @classmethod
    def attach(cls, name: str, layout: Layout) -> SharedArrays:
        # Python 3.11 registers attached segments with the resource tracker too; multiprocessing
        # children share the creator's tracker, whose set of names makes that a no-op.
        return cls(Segment(name=name), layout, owner=False)

    @property
    def name(self) -> str:
        return self.shm.name

    def destroy(self) -> None:
        """Drop the views, unmap, and (creator only) unlink the segment."""
        self.arrays = {}
        try:
            self.shm.close()
        except BufferError:
            pass  # a view is still held (a thread mid-step): the mapping goes with the last one; unlink anyway
        if self.owner:
            try:
                self.shm.unlink()
            except FileNotFoundError:
                pass


def describe(arrays: dict[str, Any]) -> str:
    return ", ".join(f"{k}{tuple(v.shape)}" for k, v in arrays.items())
