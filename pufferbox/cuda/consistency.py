"""CPU reference vs kernel: same seed, same actions, every array (but the scratch ones) compared per env, agent, feature.

Integers and flags must match exactly; floats within :data:`FLOAT_ULPS` units in the last place
(kernels are built without FMA and use the reference's operation order, so 0 is typical).
Episode statistics gathered on the device (:mod:`pufferbox.cuda.episodes`) are read every
:data:`EPISODE_READ_EVERY` steps and must equal their numpy twin's exactly.
``device="host"`` runs the kernel source compiled for the CPU (no GPU needed).

Example:
    >>> report = check_env(get_registry().get("tag"), device="host", steps=20)  # doctest: +SKIP
    >>> report.ok, report.summary()                                           # doctest: +SKIP
    (True, 'tag: 20 steps x 8 envs, 0 mismatches (floats within 4 ULP)')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pufferbox.cuda.device import NoGPUError, gpu_unavailable_reason
from pufferbox.episodes import Episodes

__all__ = ["FLOAT_ULPS", "Mismatch", "Report", "check_env", "ulp_distance"]

FLOAT_ULPS = 4
EPISODE_READ_EVERY = 16


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between float32 arrays (ordered-integer trick; NaN vs number: huge)."""
    ia = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    ib = np.asarray(b, np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, np.int64(-(2**31)) - ia, ia)
    ib = np.where(ib < 0, np.int64(-(2**31)) - ib, ib)
    return np.abs(ia - ib)


@dataclass
class Mismatch:
    step: int
    array: str
    env: int
    agent: int | None
    feature: int | None
    cpu: Any
    gpu: Any
    ulps: int | None

    def __str__(self) -> str:
        where = (
            f"env {self.env}"
            + (f" agent {self.agent}" if self.agent is not None else "")
            + (f" feature {self.feature}" if self.feature is not None else "")
        )
        ulp = f" ({self.ulps} ULP)" if self.ulps is not None else ""
        return f"step {self.step} {self.array}[{where}]: cpu={self.cpu!r} kernel={self.gpu!r}{ulp}"


@dataclass
class Report:
    env: str
    device: str
    num_envs: int
    steps: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.mismatches

    def summary(self, limit: int = 10) -> str:
        if self.error:
            return f"{self.env}: {self.error}"
        head = (
            f"{self.env} ({self.device}): {self.steps} steps x {self.num_envs} envs, {len(self.mismatches)} "
            f"mismatches (integers exact, floats within {FLOAT_ULPS} ULP)"
        )
        return "\n".join([head, *(f"  {m}" for m in self.mismatches[:limit])])


def compare(step: int, name: str, cpu: np.ndarray, kernel: np.ndarray, agents: int, obs_dim: int) -> list[Mismatch]:
    if cpu.dtype == np.float32:
        ulps = ulp_distance(cpu, kernel)
        bad = ulps > FLOAT_ULPS
    else:
        ulps, bad = None, cpu != kernel
    out = []
    for env, col in np.argwhere(bad):
        agent, feature = (
            (col // obs_dim, col % obs_dim)
            if name in ("observations", "final_observations")
            else ((col, None) if cpu.shape[1] == agents else (None, int(col)))
        )
        out.append(
            Mismatch(
                step,
                name,
                int(env),
                None if agent is None else int(agent),
                None if feature is None else int(feature),
                cpu[env, col].item(),
                kernel[env, col].item(),
                None if ulps is None else int(ulps[env, col]),
            )
        )
    return out


def compare_episodes(step: int, cpu: Episodes, kernel: Episodes) -> list[Mismatch]:
    """Episodes since the last read, per env in finishing order: returns and lengths exactly equal."""

    def by_env(episodes: Episodes) -> dict[int, list[tuple]]:
        out: dict[int, list[tuple]] = {}
        for env, ret, length in zip(episodes.env_ids.tolist(), episodes.returns.tolist(), episodes.lengths.tolist()):
            out.setdefault(env, []).append((ret, length))
        return out

    cpu_envs, kernel_envs = by_env(cpu), by_env(kernel)
    return [
        Mismatch(step, "episodes", env, None, None, cpu_envs.get(env, []), kernel_envs.get(env, []), None)
        for env in sorted(set(cpu_envs) | set(kernel_envs))
        if cpu_envs.get(env) != kernel_envs.get(env)
    ]


def check_env(
    spec: Any,
    num_envs: int = 8,
    steps: int = 200,
    seed: int = 0,
    device: str = "gpu",
    env_kwargs: dict | None = None,
    max_mismatches: int = 100,
) -> Report:
    """Step the CPU reference and the kernel with the same uniformly random actions (a continuous game's:
    fixed point words in [-action_one, action_one], :meth:`BatchedReference.random_actions`).

    ``device="gpu"`` raises :class:`NoGPUError` (one line, "no CUDA GPU: ...") without a GPU.
    """
    import torch

    from pufferbox.cuda.episodes import ReferenceEpisodes
    from pufferbox.cuda.runtime import KernelEnv

    if spec.build.implementation != "cuda" or spec.build.cuda is None:
        raise ValueError(
            f"env {spec.name!r} has no CUDA kernel (implementation={spec.build.implementation!r}); "
            "`pufferbox envs` lists the cuda ones"
        )
    if device == "gpu":
        reason = gpu_unavailable_reason()
        if reason is not None:
            raise NoGPUError(f"{reason}; run on a GPU machine, or check the kernel source on the CPU with device='host'")
    kwargs = {**spec.build.kwargs, **(env_kwargs or {})}
    kernel = KernelEnv(spec.build.cuda, num_envs=num_envs, env_kwargs=kwargs, seed=seed, device=device)
    ref = spec.build.cuda.reference_class()(num_envs=num_envs, **kwargs)
    ref.reset(seed)
    report = Report(spec.name, device, num_envs)
    rng = np.random.default_rng(seed)
    episodes, expected = ReferenceEpisodes(num_envs, ref.num_agents), []  # Episodes of each step since the last read
    actions_tensor = kernel.tensor("actions")
    for step in range(steps):
        actions = ref.random_actions(rng)
        actions_tensor.copy_(torch.from_numpy(actions))
        kernel.step()
        ref.step(actions)
        report.steps = step + 1
        for name in ref.argument_order:
            if name in ref.scratch_arrays:
                continue
            report.mismatches += compare(step, name, ref.arrays[name], kernel.pull(name), ref.num_agents, ref.obs_dim)
        report.mismatches += compare(
            step,
            "final_observations",
            ref.final_observations,
            kernel.pull("final_observations"),
            ref.num_agents,
            ref.obs_dim,
        )
        expected.append(episodes.update(ref.arrays["rewards"], ref.arrays["done"]))
        if (step + 1) % EPISODE_READ_EVERY == 0 or step + 1 == steps:
            report.mismatches += compare_episodes(step, Episodes.concat(expected), kernel.episodes.collect())
            expected = []
        if len(report.mismatches) >= max_mismatches:
            break
    return report
