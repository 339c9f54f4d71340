"""The Ocean games on the GPU: each game's C header compiled as a CUDA kernel, one thread per env.

The kernel runs the very functions the CPU block runs (``c/ocean_kernels.cuh`` calls ``NAME_step`` and
``NAME_reset``; ``OCEAN_FN`` makes them host-and-device), and the kernel's CPU reference is the CPU
block's compiled C on the same arrays, so ``pufferbox check ocean/NAME --cuda`` compares the game
structs byte for byte. ``--backend cuda`` then trains the game with the PPO step on the GPU too.

Example:
    >>> from pufferbox_ocean.games.pong import Pong
    >>> impl = ocean_cuda("pong", Pong, "Pong")
    >>> impl.kernel_names
    ('ocean_step', 'ocean_observe', 'ocean_observe_final')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pufferbox.api import BatchedReference, CudaImplementation
from pufferbox_ocean import _games
from pufferbox_ocean.block import LAYOUTS, UINT64_MASK

KERNELS = Path(__file__).parent / "c" / "ocean_kernels.cuh"


@dataclass(frozen=True)
class OceanCuda(CudaImplementation):
    """A game's kernel: its header and the shared kernel template, with the game's names filled in."""

    game: str = ""
    type_name: str = ""

    def source_text(self) -> str:
        return (
            '#include "pufferbox_common.cuh"\n'
            f'#include "{self.game}.h"\n'
            f"#define OCEAN_TYPE {self.type_name}\n"
            f"#define OCEAN_STEP {self.game}_step\n"
            f"#define OCEAN_RESET {self.game}_reset\n"
            '#include "ocean_kernels.cuh"\n'
        )


class OceanReference(BatchedReference):
    """The kernel's CPU reference: the CPU block's C code stepping these arrays (subclassed per game)."""

    state_arrays = ("env", "obs", "final_obs")
    step_kernels = ("ocean_step",)
    observe_kernel = "ocean_observe"
    final_observe_kernel = "ocean_observe_final"
    game: ClassVar[str]
    single: ClassVar[type]

    def __init__(self, num_envs: int = 1, **kwargs: Any):
        self.env_size, agents, obs_bytes, act_len, act_n, _, n_metrics = LAYOUTS[self.game]
        params = np.array(self.single(**kwargs).params(), dtype=np.int64)
        self.num_envs, self.num_agents, self.obs_dim, self.num_actions = num_envs, agents, obs_bytes // 4, int(act_n[0])
        self.action_sizes = tuple(int(n) for n in act_n) if act_len > 1 else ()  # MultiDiscrete: ACTION_SLOTS words
        self.n_metrics = max(n_metrics, 1)
        self.allocate()
        a = self.arrays
        self.ended_env = np.zeros(num_envs, np.int64)
        records = (  # the CPU kernel's episode bookkeeping, which the GPU does in pufferbox's own kernel
            np.zeros(num_envs * agents), np.zeros(num_envs, np.int64), self.ended_env, np.zeros((num_envs, agents)),
            np.zeros(num_envs, np.int64), np.zeros((num_envs, self.n_metrics)),
        )  # fmt: skip
        self.kernel = _games.Kernel(
            self.game, num_envs, a["env"], params, a["obs"], a["rewards"], a["terminals"], a["truncations"],
            a["final_obs"], *records,
        )  # fmt: skip
        if self.kernel.configure():
            raise ValueError(f"ocean {self.game}: a parameter is out of the C game's range")

    def state_layout(self) -> dict:
        rows = self.num_agents * self.obs_dim
        return {
            "env": (self.env_size, np.dtype(np.uint8)),
            "obs": (rows, np.dtype(np.float32)),
            "final_obs": (rows, np.dtype(np.float32)),
        }

    def constants(self) -> dict:
        return {**super().constants(), "ENV_BYTES": self.env_size, "OCEAN_METRICS": self.n_metrics}

    def init_state(self, seed: int) -> None:
        self.kernel.reset(np.array([(seed + i) & UINT64_MASK for i in range(self.num_envs)], dtype=np.uint64))
        self.arrays["done"][:] = 0

    def ocean_step(self) -> None:
        a = self.arrays
        ended = self.kernel.step(np.ascontiguousarray(a["actions"], dtype=np.int64))
        if ended < 0:
            raise ValueError(f"ocean {self.game}: an action is out of range")
        a["done"][:] = 0
        envs = self.ended_env[:ended]
        a["done"][envs, 0] = np.where(a["terminals"][envs, 0] != 0, 1, 2)

    def ocean_observe(self) -> None:
        self.arrays["observations"][:] = self.arrays["obs"]
        self.arrays["masks"][:] = 1

    def ocean_observe_final(self) -> None:
        self.arrays["observations"][:] = self.arrays["final_obs"]


def ocean_cuda(game: str, single: type, type_name: str) -> OceanCuda:
    """The CudaImplementation of ``game`` (its reference class is made here, named after the game)."""
    reference = type(f"{type_name}CudaReference", (OceanReference,), {"game": game, "single": single})
    return OceanCuda(
        source=KERNELS,
        reference=reference,
        step_kernels=OceanReference.step_kernels,
        observe_kernel=OceanReference.observe_kernel,
        final_observe_kernel=OceanReference.final_observe_kernel,
        layout="env_per_thread",
        game=game,
        type_name=type_name,
    )
