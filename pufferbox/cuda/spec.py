"""What a ``cuda`` plugin declares: :class:`CudaImplementation` and the kernel argument convention.

Every kernel of an env takes the same pointer arguments, in this order: the standard arrays
(:data:`STANDARD_ARRAYS`), then the env's state arrays (``reference.state_arrays``). Shapes are
per env: ``observations`` ``(num_agents * obs_dim)``, ``actions`` ``(num_agents * action_slots)`` (one
word per discrete action: one per agent, or several for a MultiDiscrete space, ``reference.action_sizes``;
or per continuous element, a fixed point value in [-``reference.action_one``, ``reference.action_one``]),
``rewards``/``terminals``/``truncations``/``masks`` ``(num_agents)``, ``done`` ``(1)`` (0 running, 1
terminated, 2 truncated).

A step runs ``step_kernels`` in order, then ``observe_kernel`` with ``final_observations`` in
place of ``observations`` (the last observation of an episode that ends, for the bootstrap of a
truncated one), then restores ``reference.reset_arrays`` of done envs from the copy saved at the
first reset (the core reset kernel), then ``observe_kernel``. So the observe kernel must be safe to
run twice in a step: apart from the observations it may only write what it writes the same way
both times (masks, the done flags it reports).
The CPU reference (``reference``, a :class:`~pufferbox.cuda.reference.BatchedReference`) runs
the same phases in numpy with the same float32 arithmetic.

Example:
    >>> from pufferbox.cuda.spec import CudaImplementation
    >>> impl = CudaImplementation(source="my.cu", reference="mypkg:MyReference",
    ...                           step_kernels=("my_step",), observe_kernel="my_observe")
    >>> impl.layout
    'agent_per_thread'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CudaImplementation", "STANDARD_ARRAYS", "STANDARD_DTYPES", "LAYOUTS"]

STANDARD_ARRAYS = ("observations", "actions", "rewards", "terminals", "truncations", "masks", "done")
STANDARD_DTYPES: dict[str, np.dtype] = {
    "observations": np.dtype(np.float32),
    "actions": np.dtype(np.int32),
    "rewards": np.dtype(np.float32),
    "terminals": np.dtype(np.uint8),
    "truncations": np.dtype(np.uint8),
    "masks": np.dtype(np.uint8),
    "done": np.dtype(np.int32),
}
# agent_per_thread: grid (num_envs, blocks per env), one thread per agent (WarpDrive's layout).
# env_per_thread: single-agent envs, envs spread over blocks of 256 threads.
LAYOUTS = ("agent_per_thread", "env_per_thread")


@dataclass(frozen=True)
class CudaImplementation:
    """A kernel env: its CUDA C source, kernel names and CPU reference.

    Attributes:
        source: path of the ``.cu`` file (``#include "pufferbox_common.cuh"`` is resolved
            from :mod:`pufferbox.cuda`'s kernel folder).
        reference: the numpy twin, a ``BatchedReference`` subclass or ``"module:Class"``.
        step_kernels: kernels run in order every step (a kernel boundary is a sync point
            across all blocks of an env, so phases that read what others wrote are split).
        observe_kernel: writes observations and masks after done envs were restored.
        layout: one of :data:`LAYOUTS`.
        events: ``{state array: metric}`` for state arrays that flag an event of the current step
            (e.g. Tag's ``{"tagged": "tag_rate"}``); a trainer reports each as events per env and step.
        final_observe_kernel: writes ``final_observations`` (passed as its observations argument)
            instead of a second run of ``observe_kernel``: for envs whose step kernels start the next
            episode themselves and keep the last observation of the ended one in their own state.
    """

    source: str | Path
    reference: Any
    step_kernels: tuple[str, ...]
    observe_kernel: str
    layout: str = "agent_per_thread"
    events: Mapping[str, str] = field(default_factory=dict)
    final_observe_kernel: str | None = None

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        if not self.step_kernels:
            raise ValueError("step_kernels must name at least one kernel")

    @property
    def kernel_names(self) -> tuple[str, ...]:
        return (*self.step_kernels, self.observe_kernel, *filter(None, [self.final_observe_kernel]))

    def reference_class(self) -> type:
        from pufferbox.registry import resolve

        return resolve(self.reference)

    def source_text(self) -> str:
        return Path(self.source).read_text()
