"""The Ocean games' CUDA kernels: the same C header compiled for the GPU agrees with the CPU block byte
for byte (checked on the host simulator here, on a GPU by ``pytest -m gpu``), and nvcc builds it
without fused or approximate float instructions. Continuous games are among them: the check draws fixed
point words, and the backend quantizes floats on the device as the CPU block does."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from pufferbox_ocean.plugin import GAME_NAMES, games

import pufferbox.vector
from pufferbox.api import get_registry
from pufferbox.cuda.build import CORE_SOURCE, assemble, compile_check, find_nvcc
from pufferbox.cuda.consistency import check_env
from pufferbox.cuda.device import gpu_unavailable_reason
from pufferbox.cuda.hostsim import find_cxx

CUDA_GAMES = sorted(game.name for game in games() if game.cuda_type)
KWARGS = {game.name: game.check_kwargs for game in games()}
# 1 terminated, 2 truncated: the ends a short rollout of each game must reach
ENDS = {g.name: {e for e, can in ((1, g.reference.TERMINATES), (2, g.reference.TRUNCATES)) if can} for g in games()}


def continuous(game) -> bool:
    """Whether the game's actions are continuous (a Box of fixed point words on the CUDA path)."""
    env = game.reference()
    space = env.action_space(env.possible_agents[0]) if hasattr(env, "possible_agents") else env.action_space
    return isinstance(space, gymnasium.spaces.Box)


CONTINUOUS_GAMES = sorted(game.name for game in games() if game.cuda_type and continuous(game))


def test_every_game_has_a_kernel():
    """Continuous games included: their kernels read the same fixed point words as the CPU block."""
    missing = sorted(set(GAME_NAMES) - set(CUDA_GAMES))
    assert not missing, f"games without a kernel: {missing}; fix: cuda_type='<its C struct>' in each CGame record"


@pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler for the host simulator")
@pytest.mark.parametrize("name", CUDA_GAMES)
def test_kernel_equals_the_cpu_block_through_resets_and_truncations(name):
    spec = get_registry().get(f"ocean/{name}")
    report = check_env(spec, num_envs=6, steps=300, device="host", env_kwargs=KWARGS[name])
    assert report.ok, report.summary()
    # the rollout must have ended episodes both ways, or the final-observation path went unchecked
    impl = spec.build.cuda
    ref = impl.reference_class()(num_envs=6, **KWARGS[name])
    ref.reset(0)
    rng, ends = np.random.default_rng(0), set()
    for _ in range(300):
        ref.step(ref.random_actions(rng))
        ends |= set(ref.arrays["done"][:, 0].tolist())
    assert ENDS[name] <= ends, ends


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin")
@pytest.mark.parametrize("name", CUDA_GAMES)
def test_kernel_compiles_without_fused_or_approximate_float_ops(name):
    impl = get_registry().get(f"ocean/{name}").build.cuda
    ref = impl.reference_class()(num_envs=4)
    text = assemble(
        impl.source_text() + f'\n#include "{CORE_SOURCE.name}"\n', ref.constants(), search=(Path(impl.source).parent,)
    )
    ptx = compile_check(text, arch="sm_90", output="ptx").decode()
    assert ".entry ocean_step" in ptx
    inexact = set(re.findall(r"\b(fma\.\S+|\S+\.approx\.\S+|div\.full\.\S+|mad\.\S+\.f32)", ptx))
    assert not inexact, inexact


@pytest.mark.gpu
@pytest.mark.skipif(gpu_unavailable_reason() is not None, reason=f"needs a CUDA GPU: {gpu_unavailable_reason()}")
@pytest.mark.parametrize("name", CUDA_GAMES)
def test_kernel_equals_the_cpu_block_on_the_gpu(name):
    report = check_env(get_registry().get(f"ocean/{name}"), num_envs=64, steps=300, device="gpu", env_kwargs=KWARGS[name])
    assert report.ok, report.summary()


@pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler for the host simulator")
def test_a_multidiscrete_game_steps_on_the_cuda_backend_as_on_the_cpu():
    """Triple Triad's agents each send two actions (card slot, cell): the cuda backend's action buffer holds
    both, and the kernel's rows equal the CPU block's, step by step."""
    rng = np.random.default_rng(3)
    with (
        pufferbox.vector.make("ocean/tripletriad", backend="serial", num_envs=4) as cpu,
        pufferbox.vector.make("ocean/tripletriad", backend="cuda", device="host", num_envs=4) as gpu,
    ):
        assert tuple(cpu.single_action_space.nvec) == (5, 9)
        cpu.reset(seed=0)
        gpu.reset(seed=0)
        ended = 0
        for _ in range(40):
            actions = rng.integers(0, (5, 9), (cpu.num_agents, 2))
            cpu.send(actions)
            gpu.send(torch.from_numpy(actions))
            expected, got = cpu.recv(), gpu.recv()
            for want, have in zip(expected[:4], got[:4], strict=True):
                assert np.array_equal(np.asarray(want), have.numpy())
            ended += int(np.asarray(expected[2]).sum())
        assert ended  # games ended (and restarted) on both
        with pytest.raises(ValueError, match="one Discrete action per agent"):
            gpu.sample(torch.full((gpu.num_agents, 5), 0.2))


@pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler for the host simulator")
@pytest.mark.parametrize("name", CONTINUOUS_GAMES)
def test_a_continuous_game_steps_on_the_cuda_backend_as_on_the_cpu(name):
    """The same floats (past the ends of [-1, 1] and on ties between fixed point values too) to the CPU block
    and to the cuda backend, which quantizes them on the device: every row equal, step by step."""
    rng = np.random.default_rng(4)
    kwargs = KWARGS[name]
    with (
        pufferbox.vector.make(f"ocean/{name}", backend="serial", num_envs=3, env_kwargs=kwargs) as cpu,
        pufferbox.vector.make(f"ocean/{name}", backend="cuda", device="host", num_envs=3, env_kwargs=kwargs) as gpu,
    ):
        assert isinstance(gpu.single_action_space, gymnasium.spaces.Box) and not gpu.samples_actions
        cpu.reset(seed=0)
        gpu.reset(seed=0)
        shape = (cpu.num_agents, *gpu.single_action_space.shape)
        for step in range(60):
            actions = rng.uniform(-1.2, 1.2, shape).astype(np.float32)
            actions[step % shape[0]] = (rng.integers(-65536, 65536) + 0.5) / 65536  # a tie: to the even word
            cpu.send(actions)
            gpu.send(torch.from_numpy(actions))
            for want, have in zip(cpu.recv()[:4], gpu.recv()[:4], strict=True):
                assert np.array_equal(np.asarray(want), have.numpy())
