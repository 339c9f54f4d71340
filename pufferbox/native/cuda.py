"""A C game on the GPU: its header compiled as a CUDA kernel, one thread per env.

The kernel runs the very functions the CPU block runs (``c/ocean_kernels.cuh`` calls ``NAME_step`` and
``NAME_reset``; ``OCEAN_FN`` makes them host-and-device), and the kernel's CPU reference is the CPU
block's compiled C on the same arrays, so ``pufferbox check NAME --cuda`` compares the game structs byte
for byte. ``--backend cuda`` then trains the game with the PPO step on the GPU too.

A continuous game (every action size 0) runs the same kernel: its action words hold the fixed point
values the C step reads (``round(clip(a, -1, 1) * 65536)``, :mod:`pufferbox.native.actions`), which the
backend computes from the policy's floats on the device (:mod:`pufferbox.cuda.actions`); a mix of
discrete and continuous elements is refused, as by the CPU block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pufferbox.cuda.reference import BatchedReference
from pufferbox.cuda.spec import CudaImplementation
from pufferbox.native.actions import ACTION_ONE, quantize_actions
from pufferbox.native.block import UINT64_MASK, check_action_layout
from pufferbox.native.build import SDK_DIR

__all__ = ["CGameCuda", "CGameCudaReference", "KERNELS", "game_cuda"]

KERNELS = SDK_DIR / "ocean_kernels.cuh"


@dataclass(frozen=True)
class CGameCuda(CudaImplementation):
    """A game's kernel: its header and the shared kernel template, with the game's names filled in
    (the header by its absolute path; ``ocean.h`` and the template from the SDK's folder)."""

    game: str = ""
    type_name: str = ""
    header: str = ""

    def __reduce__(self) -> tuple:  # its reference class is made per game: pickle how to make it again
        ref = self.reference
        return game_cuda, (ref.extension, self.header, self.game, ref.single, self.type_name)

    def source_text(self) -> str:
        return (
            '#include "pufferbox_common.cuh"\n'
            f'#include "{self.header}"\n'
            f"#define OCEAN_TYPE {self.type_name}\n"
            f"#define OCEAN_STEP {self.game}_step\n"
            f"#define OCEAN_RESET {self.game}_reset\n"
            '#include "ocean_kernels.cuh"\n'
        )


class CGameCudaReference(BatchedReference):
    """The kernel's CPU reference: the CPU block's C code stepping these arrays (subclassed per game)."""

    state_arrays = ("env", "obs", "final_obs")
    step_kernels = ("ocean_step",)
    observe_kernel = "ocean_observe"
    final_observe_kernel = "ocean_observe_final"
    game: ClassVar[str]
    single: ClassVar[type]
    extension: ClassVar[Callable[[], Any]]  # the compiled module, loaded on first use

    def __init__(self, num_envs: int = 1, **kwargs: Any):
        extension = type(self).extension()
        self.env_size, agents, obs_bytes, act_len, act_n, _, n_metrics = extension.games()[self.game]
        single = self.single(**kwargs)
        space = single.action_space(single.possible_agents[0]) if hasattr(single, "possible_agents") else single.action_space
        continuous = check_action_layout(self.game, act_len, act_n, space)  # a mix of both kinds: refused
        params = np.array(single.params(), dtype=np.int64)
        self.num_envs, self.num_agents, self.obs_dim = num_envs, agents, obs_bytes // 4
        self.num_actions = 0 if continuous else int(act_n[0])
        # MultiDiscrete or continuous: ACTION_SLOTS words per agent; continuous words are fixed point
        self.action_sizes = tuple(int(n) for n in act_n) if act_len > 1 or continuous else ()
        self.action_one = ACTION_ONE if continuous else 0
        self.n_metrics = max(n_metrics, 1)
        self.allocate()
        a = self.arrays
        self.ended_env = np.zeros(num_envs, np.int64)
        records = (  # the CPU kernel's episode bookkeeping, which the GPU does in pufferbox's own kernel
            np.zeros(num_envs * agents), np.zeros(num_envs, np.int64), self.ended_env, np.zeros((num_envs, agents)),
            np.zeros(num_envs, np.int64), np.zeros((num_envs, self.n_metrics)),
        )  # fmt: skip
        self.kernel = extension.Kernel(
            self.game, num_envs, a["env"], params, a["obs"], a["rewards"], a["terminals"], a["truncations"],
            a["final_obs"], *records,
        )  # fmt: skip
        if self.kernel.configure():
            raise ValueError(f"{self.game}: a parameter is out of the C game's range")

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

    def step(self, actions: np.ndarray, autoreset: bool = True) -> None:
        """As :meth:`BatchedReference.step`; a continuous game also takes floats, quantized as the block does."""
        if self.action_one and np.asarray(actions).dtype.kind == "f":
            actions = quantize_actions(actions, name=self.game)
        super().step(actions, autoreset)

    def ocean_step(self) -> None:
        a = self.arrays
        ended = self.kernel.step(np.ascontiguousarray(a["actions"], dtype=np.int64))
        if ended < 0:
            bad = a["actions"].reshape(-1)[-ended - 1]
            valid = f"[-{ACTION_ONE}, {ACTION_ONE}] (fixed point)" if self.action_one else "[0, choices)"
            raise ValueError(f"{self.game}: action word {bad} is outside {valid}; fix: send actions of its action space")
        a["done"][:] = 0
        envs = self.ended_env[:ended]
        a["done"][envs, 0] = np.where(a["terminals"][envs, 0] != 0, 1, 2)

    def ocean_observe(self) -> None:
        self.arrays["observations"][:] = self.arrays["obs"]
        self.arrays["masks"][:] = 1

    def ocean_observe_final(self) -> None:
        self.arrays["observations"][:] = self.arrays["final_obs"]


def game_cuda(extension: Callable[[], Any], header: str, game: str, single: type, type_name: str) -> CGameCuda:
    """The CudaImplementation of ``game`` (its reference class is made here, named after the game);
    ``extension()`` returns the compiled module the CPU reference steps."""
    attrs = {"game": game, "single": single, "extension": staticmethod(extension), "__module__": __name__}
    reference = type(f"{type_name}CudaReference", (CGameCudaReference,), attrs)
    return CGameCuda(
        source=KERNELS,
        reference=reference,
        step_kernels=CGameCudaReference.step_kernels,
        observe_kernel=CGameCudaReference.observe_kernel,
        final_observe_kernel=CGameCudaReference.final_observe_kernel,
        layout="env_per_thread",
        game=game,
        type_name=type_name,
        header=header,
    )
