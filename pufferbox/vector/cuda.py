"""The ``cuda`` backend: a kernel env whose arrays never leave the GPU.

Observations, rewards, terminals, truncations and masks come back as torch CUDA tensors that
share the kernels' memory (no copies); ``send`` takes a CUDA tensor of actions (copied on the
device; a continuous game's floats are quantized there, :mod:`pufferbox.cuda.actions`). On a machine
without a GPU or PyCUDA the constructor raises a one-line :class:`VectorConfigError` naming the CPU
backends to use instead.

Episode statistics: the :class:`~pufferbox.episodes.Episodes` in ``recv`` is always empty,
because filling it per step would copy from the device every step. Every step a kernel
accumulates each env's return and length on the GPU and logs finished episodes there
(:mod:`pufferbox.cuda.episodes`); :meth:`CudaVectorEnv.episode_stats` drains the log with two
device→host copies and returns an ``Episodes``, as the CPU backends' ``recv`` does, holding every
episode finished since the previous call. A trainer calls it once per rollout; ``episode_slots`` (default 32) bounds
the episodes an env may finish between calls (older ones are dropped and counted in
``episodes_dropped``).

Truncation: :meth:`CudaVectorEnv.final_observations` is a device tensor of every row's
observation before this step's resets (the observe kernel run once more, into its own array),
so a learner bootstraps a truncated episode from its last observation without a host copy.

``device="host"`` runs the same kernel sources on the CPU (:mod:`pufferbox.cuda.hostsim`, one
thread at a time: slow, for tests of this backend on machines without a GPU).

Example (GPU only):
    >>> venv = pufferbox.vector.make("tag", backend="cuda", num_envs=2000)   # doctest: +SKIP
    >>> obs, info = venv.reset(seed=0); obs.device.type                      # doctest: +SKIP
    'cuda'
    >>> for _ in range(128): venv.send(venv.sample(probs))                   # doctest: +SKIP
    >>> venv.episode_stats().select(slice(0, 1))                             # doctest: +SKIP
    Episodes(env_ids=[3], returns=[0.2], lengths=[41])
"""

from __future__ import annotations

from typing import Any

from pufferbox.cuda.actions import quantize_into
from pufferbox.cuda.device import gpu_unavailable_reason
from pufferbox.cuda.episodes import DEFAULT_SLOTS
from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.vector.base import EnvFactory, VectorConfigError, VectorEnv

__all__ = ["CudaVectorEnv"]


class CudaVectorEnv(VectorEnv):
    """All envs in one :class:`~pufferbox.cuda.runtime.KernelEnv`; ``batch_size`` must equal ``num_envs``."""

    backend = "cuda"
    samples_actions = True

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int = 1,
        batch_size: int | None = None,
        seed: int = 0,
        episode_slots: int = DEFAULT_SLOTS,
        device: str = "gpu",
        **unused: Any,
    ):
        spec = factory.spec
        if unused:
            raise VectorConfigError(f"cuda backend got unsupported options: {', '.join(sorted(unused))}")
        if spec.build.implementation != "cuda" or spec.build.cuda is None:
            raise VectorConfigError(
                f"env {spec.name!r} has no CUDA kernel (implementation={spec.build.implementation!r}): "
                "use --backend serial or multiprocessing"
            )
        if device not in ("gpu", "host"):
            raise VectorConfigError(
                f"cuda backend device must be 'gpu' or 'host' (kernels simulated on the CPU), got {device!r}"
            )
        reason = gpu_unavailable_reason() if device == "gpu" else None
        if reason is not None:
            raise VectorConfigError(
                f"{reason.replace('no CUDA GPU: ', 'no CUDA GPU found (', 1)}): run on a GPU "
                f"machine, or use --backend serial/multiprocessing with the CPU reference"
            )
        if batch_size not in (None, num_envs):
            raise VectorConfigError("the cuda backend steps all envs at once: batch_size must equal num_envs")
        if episode_slots < 1:
            raise VectorConfigError(
                f"episode_slots must be >= 1 (episodes kept per env between episode_stats() calls), got {episode_slots}"
            )
        from pufferbox.cuda.runtime import KernelEnv

        self.setup_layout(factory, num_envs, None)
        self.kernel = KernelEnv(
            spec.build.cuda,
            num_envs=num_envs,
            env_kwargs={**spec.build.kwargs, **factory.kwargs},
            seed=seed,
            episode_slots=episode_slots,
            device=device,
        )
        self.actions = self.kernel.tensor("actions").view(-1)
        # a continuous game's words are fixed point, quantized from the policy's floats here on the device;
        # the sampler kernel draws discrete choices only, so the trainer samples such actions itself
        self.action_one = self.kernel.reference.action_one
        self.samples_actions = not self.action_one
        import torch

        self.scratch = (
            torch.empty(self.actions.shape, dtype=torch.float64, device=self.actions.device) if self.action_one else None
        )
        rows = num_envs * self.kernel.num_agents
        self.views = {
            name: self.kernel.tensor(name).view(rows, -1)
            if name.endswith("observations")
            else self.kernel.tensor(name).view(rows)
            for name in ("observations", "rewards", "terminals", "truncations", "masks", "final_observations")
        }
        self.env_ids = torch.arange(num_envs, device=self.actions.device)

    def async_reset(self, seed: int | None = 0) -> None:
        """Envs were reset when the kernel env was built; a reset here is a no-op by design (WarpDrive)."""

    def send(self, actions: Any) -> None:
        """Step every env; ``actions`` is best a tensor on the kernels' device (anything else is copied there).

        A continuous game's actions are floats: clipped to [-1, 1] and rounded to its fixed point on the
        device, exactly as the CPU block does (:func:`pufferbox.cuda.actions.quantize_into`; NaN becomes 0)."""
        import torch

        if self.scratch is not None:
            quantize_into(actions, self.action_one, self.actions, self.scratch)
        else:
            self.actions.copy_(torch.as_tensor(actions).reshape(-1), non_blocking=True)
        self.kernel.step()

    def recv(self) -> tuple:
        v = self.views
        return (
            v["observations"],
            v["rewards"],
            v["terminals"].bool(),
            v["truncations"].bool(),
            NO_EPISODES,
            self.env_ids,
            v["masks"].bool(),
        )

    def final_observations(self) -> Any:
        """Every row's observation before the last step's resets (a device tensor, rows x obs)."""
        return self.views["final_observations"]

    def episode_stats(self) -> Episodes:
        """The episodes finished since the last call (the once-per-rollout drain of the device log).

        Two device→host copies however many steps passed: call it once per rollout, not per step.
        """
        return self.kernel.episodes.collect()

    @property
    def device(self) -> Any:
        """The torch device of the kernels' arrays (``cuda:N``, or ``cpu`` for ``device="host"``)."""
        return self.actions.device

    def state_tensor(self, name: str) -> Any:
        """Kernel state array ``name`` (``(num_envs, per_env)``) as a tensor sharing its memory, or None.

        Lets a trainer count env events on the device, e.g. Tag's per-step ``tagged`` flags.
        """
        return self.kernel.tensor(name) if name in self.kernel.reference.state_arrays else None

    @property
    def episodes_dropped(self) -> int:
        """Episodes lost because an env finished more than ``episode_slots`` between two reads."""
        return self.kernel.episodes.dropped

    def sample(self, probs: Any) -> Any:
        """Sample actions on the device from ``probs`` (rows x actions, float32, contiguous) into the action buffer."""
        import numpy as np

        self.kernel.sample_actions(np.uintp(probs.data_ptr()))
        return self.actions

    def close(self, **kwargs: Any) -> None:
        self.__dict__.pop("kernel", None)  # drop the kernels' device arrays now, not at garbage collection
