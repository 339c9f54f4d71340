"""The memory a vector env of some size takes, checked before any of it is allocated.

Every command that builds envs (``train``, ``bench``, ``autotune``, ``check``, ``eval``) goes through
:meth:`~pufferbox.vector.base.VectorEnv.setup_layout`, which calls :func:`refuse_oversized_envs` before
the batch spaces, the buffers or an env exist: an absurd ``--num-envs`` is one line naming the sizes
and the memory available instead of a process the kernel's OOM killer ends (or a neighbour).

Example:
    >>> needs = env_memory_needed(flat_size=4, obs_itemsize=4, act_bytes=8, act_elems=1, rows=10, batch_rows=10, emulated=0)
    >>> sorted(needs)
    ['batch spaces', 'env buffers']
"""

from __future__ import annotations

import resource

__all__ = [
    "EMULATED_ENV_BYTES",
    "WORKER_PROCESS_BYTES",
    "available_memory",
    "env_memory_needed",
    "read_int",
    "refuse_oversized_envs",
]

# A lower bound on one emulated env's own objects (a Gymnasium CartPole and its emulator take about 5 KiB
# of Python objects, PettingZoo's tic-tac-toe about 11 KiB; real games far more).
EMULATED_ENV_BYTES = 4096
# A lower bound on one env worker process (a Python interpreter with numpy: 25-40 MiB when spawned; a
# forked one shares its parent's pages until it writes them, so less is counted).
WORKER_PROCESS_BYTES = 16 * 2**20
GIB = 2**30


def read_int(path: str) -> int | None:
    """The integer in a one-number file (cgroup and proc files), None if absent or not a number ("max")."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def address_space_left() -> int | None:
    """Bytes of address space this process may still map under ``ulimit -v`` (RLIMIT_AS), None without one."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status") as f:
            size = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    except (OSError, ValueError):
        size = 0
    return max(0, limit - size)


def available_memory() -> int | None:
    """Bytes this process can still allocate: ``MemAvailable`` of ``/proc/meminfo``, less where a cgroup
    (a container's ``--memory``) or ``ulimit -v`` caps it lower; None where none is known (not Linux)."""
    known = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    known.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError):
        pass
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),  # cgroup v2
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),  # v1
    ):
        limit, usage = read_int(limit_file), read_int(usage_file)
        if limit is not None and usage is not None and limit < 2**60:
            known.append(max(0, limit - usage))
    left = address_space_left()
    if left is not None:
        known.append(left)
    return min(known) if known else None


def env_memory_needed(
    flat_size: int,
    obs_itemsize: int,
    act_bytes: int,
    act_elems: int,
    rows: int,
    batch_rows: int,
    emulated: int,
    processes: int = 0,
) -> dict[str, int]:
    """Bytes a vector env of ``rows`` agent rows takes (a lower bound): its buffers (observations twice:
    the rows and the final observations; actions; rewards and three flags), the batch spaces of its
    ``batch_rows`` (low, high and two bound flags per observation element; 16 bytes per action element)
    ``emulated`` envs' own objects and ``processes`` worker processes."""
    needs = {
        "env buffers": rows * (2 * flat_size * obs_itemsize + act_bytes + 4 + 3),
        "batch spaces": batch_rows * (flat_size * (2 * obs_itemsize + 2) + 16 * act_elems),
    }
    if emulated:
        needs["emulated envs"] = emulated * EMULATED_ENV_BYTES
    if processes:
        needs["worker processes"] = processes * WORKER_PROCESS_BYTES
    return needs


def refuse_oversized_envs(name: str, num_envs: int, needs: dict[str, int], error: type[Exception]) -> None:
    """``error`` in one line when ``needs`` (name -> bytes) exceed the memory available."""
    free, total = available_memory(), sum(needs.values())
    if free is None or total <= free:
        return
    parts = ", ".join(f"{what} {size / GIB:,.1f} GiB" for what, size in needs.items())
    raise error(
        f"{name}: {num_envs:,} envs need at least {total / GIB:,.1f} GiB ({parts}) but this machine has "
        f"{free / GIB:,.1f} GiB memory available; fix: lower --num-envs"
        + (" or --num-workers" if "worker processes" in needs else "")
    )
