"""KernelEnv: one kernel env simulating ``num_envs`` envs, on the GPU or on the host simulator.

The first reset runs on the CPU reference (as in WarpDrive) and its arrays are pushed once;
after that a step is only kernel launches on device-resident arrays: the env's step kernels,
the episode statistics kernel (:mod:`pufferbox.cuda.episodes`), the observe kernel (or the env's
final observe kernel) writing into ``final_observations`` (every env's observation before any
reset, so a learner can bootstrap a truncated episode from its last observation), the core reset
kernel restoring done envs from their saved initial state, the observe kernel.

Example:
    >>> from pufferbox.registry import get_registry                         # doctest: +SKIP
    >>> env = KernelEnv(get_registry().get("tag").build.cuda, num_envs=2000)      # doctest: +SKIP
    >>> env.tensor("actions").random_(0, 5); env.step()                     # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pufferbox.cuda.build import CORE_SOURCE, assemble
from pufferbox.cuda.episodes import DEFAULT_SLOTS, EpisodeTracker
from pufferbox.cuda.reference import BatchedReference
from pufferbox.cuda.rng import mix32
from pufferbox.cuda.spec import CudaImplementation

__all__ = ["KernelEnv", "CORE_KERNELS", "agent_geometry", "env_geometry"]

CORE_KERNELS = ("pb_reset_words", "pb_reset_bytes", "pb_sample_categorical", "pb_track_episodes")
MAX_BLOCK = 1024
ENV_BLOCK = 64  # env-per-thread kernels: CUDA CartPole's best on an H200 (bench_cuda.py's sweep, RESULTS.md)


def agent_geometry(num_envs: int, per_env: int, max_block: int = MAX_BLOCK) -> tuple[tuple[int, int], int]:
    """Grid ``(num_envs, blocks per env)`` and block size: one thread per agent (or word)."""
    block = max(1, min(per_env, max_block))
    return (num_envs, -(-per_env // block)), block


def env_geometry(rows: int, block: int = 256) -> tuple[tuple[int, int], int]:
    """Grid and block for one thread per row (single-agent envs, the sampler)."""
    block = max(1, min(block, -(-rows // 32) * 32))
    return (-(-rows // block), 1), block


class KernelEnv:
    """Device arrays + compiled kernels of one env kind. ``device`` is ``"gpu"`` or ``"host"``.

    ``episode_slots``: finished episodes kept per env between :meth:`EpisodeTracker.collect` calls.
    ``max_block`` caps the threads per block of agent-per-thread envs (one env spans
    ``ceil(agents / max_block)`` blocks); ``env_block`` is the block size of env-per-thread envs.
    """

    def __init__(
        self,
        impl: CudaImplementation,
        num_envs: int,
        env_kwargs: dict | None = None,
        seed: int = 0,
        device: str = "gpu",
        max_block: int = MAX_BLOCK,
        episode_slots: int = DEFAULT_SLOTS,
        env_block: int = ENV_BLOCK,
    ):
        if device == "gpu":
            from pufferbox.cuda.data import DataManager
            from pufferbox.cuda.function import FunctionManager

            self.data: Any = DataManager()
            self.functions: Any = FunctionManager()
        elif device == "host":
            from pufferbox.cuda.hostsim import HostDataManager, HostFunctionManager

            self.data, self.functions = HostDataManager(), HostFunctionManager()
        else:
            raise ValueError(f"device must be 'gpu' or 'host', got {device!r}")
        self.impl, self.device = impl, device
        self.reference: BatchedReference = impl.reference_class()(num_envs=num_envs, **(env_kwargs or {}))
        ref = self.reference
        ref_phases = (tuple(ref.step_kernels), ref.observe_kernel, ref.final_observe_kernel)
        if ref_phases != (tuple(impl.step_kernels), impl.observe_kernel, impl.final_observe_kernel):
            raise TypeError(
                f"{type(ref).__name__} phases {ref.step_kernels}/{ref.observe_kernel}/{ref.final_observe_kernel} do not "
                f"match the kernels {impl.step_kernels}/{impl.observe_kernel}/{impl.final_observe_kernel}"
            )
        self.num_envs, self.num_agents = num_envs, ref.num_agents
        self.obs_dim, self.num_actions = ref.obs_dim, ref.num_actions
        ref.reset(seed)
        for name in ref.argument_order:
            self.data.push(name, ref.arrays[name])
        for name in ref.reset_arrays:
            self.data.push("initial/" + name, ref.initial[name])
        self.data.push("final_observations", ref.arrays["observations"])
        self.data.push("sampler/counters", np.zeros(num_envs * ref.num_agents, np.uint32))
        self.sampler_key = np.uint32(mix32(np.uint32(seed ^ 0x5EED)))
        source = impl.source_text() + f'\n#include "{CORE_SOURCE.name}"\n'
        self.text = assemble(source, ref.constants(), search=(_folder(impl.source),))
        self.functions.compile(self.text, [*impl.kernel_names, *CORE_KERNELS])
        self.args = [self.data.pointer(name) for name in ref.argument_order]
        # the observe kernel run once more before the reset, its observations argument swapped
        self.final_args = [self.data.pointer("final_observations"), *self.args[1:]]
        self.set_block_size(max_block, env_block)
        self.episodes = EpisodeTracker(
            self.data, self.functions, num_envs, ref.num_agents, env_geometry(num_envs), slots=episode_slots
        )
        self.reset_launches = []
        for name in ref.reset_arrays:
            arr = ref.arrays[name]
            kernel = {4: "pb_reset_words", 1: "pb_reset_bytes"}.get(arr.dtype.itemsize)
            if kernel is None:
                raise TypeError(f"reset array {name!r} has {arr.dtype}; use 32-bit or 8-bit types")
            grid, block = agent_geometry(num_envs, arr.shape[1], max_block)
            self.reset_launches.append(
                (
                    kernel,
                    grid,
                    block,
                    [
                        self.data.pointer(name),
                        self.data.pointer("initial/" + name),
                        self.data.pointer("done"),
                        np.int32(arr.shape[1]),
                    ],
                )
            )

    def set_block_size(self, max_block: int = MAX_BLOCK, env_block: int = ENV_BLOCK) -> None:
        """Launch geometry of the step and observe kernels (a threads-per-block sweep changes only this)."""
        if self.impl.layout == "agent_per_thread":
            self.grid, self.block = agent_geometry(self.num_envs, self.num_agents, max_block)
        else:
            self.grid, self.block = env_geometry(self.num_envs, env_block)

    def tensor(self, name: str) -> Any:
        """The device array as a torch tensor sharing its memory (``(num_envs, per_env)`` words)."""
        return self.data.tensor(name)

    def step(self) -> None:
        """Advance every env by the actions already in ``tensor("actions")``; no host transfer."""
        for kernel in self.impl.step_kernels:
            self.functions.launch(kernel, self.grid, self.block, self.args)
        self.episodes.launch(self.data.pointer("rewards"), self.data.pointer("done"))
        final_observe = self.impl.final_observe_kernel or self.impl.observe_kernel
        self.functions.launch(final_observe, self.grid, self.block, self.final_args)
        for kernel, grid, block, args in self.reset_launches:
            self.functions.launch(kernel, grid, block, args)
        self.functions.launch(self.impl.observe_kernel, self.grid, self.block, self.args)

    def sample_actions(self, probs_pointer: np.uintp) -> None:
        """Categorical draw per agent from ``probs`` (rows = envs * agents, float32) into ``actions``."""
        if self.reference.action_one:
            raise ValueError(
                f"{type(self.reference).__name__}: the sampler kernel draws discrete actions, this env's are "
                "continuous; fix: sample from the policy's distribution and send the floats"
            )
        if self.reference.action_slots != 1:
            raise ValueError("the sampler kernel draws one Discrete action per agent, not a MultiDiscrete one")
        rows = self.num_envs * self.num_agents
        grid, block = env_geometry(rows)
        self.functions.launch(
            "pb_sample_categorical",
            grid,
            block,
            [
                probs_pointer,
                self.data.pointer("actions"),
                self.data.pointer("sampler/counters"),
                self.sampler_key,
                np.int32(rows),
                np.int32(self.num_actions),
            ],
        )

    def pull(self, name: str) -> np.ndarray:
        return self.data.pull(name)


def _folder(path: Any) -> Any:
    from pathlib import Path

    return Path(path).parent
