"""The Ocean games' CUDA kernels: the same C header compiled for the GPU agrees with the CPU block byte
for byte (checked on the host simulator here, on a GPU by ``pytest -m gpu``), and nvcc builds it
without fused or approximate float instructions."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from pufferbox_ocean.plugin import games

from pufferbox.api import get_registry
from pufferbox.cuda.build import CORE_SOURCE, assemble, compile_check, find_nvcc
from pufferbox.cuda.consistency import check_env
from pufferbox.cuda.device import gpu_unavailable_reason
from pufferbox.cuda.hostsim import find_cxx

CUDA_GAMES = sorted(game.name for game in games() if game.cuda_type)
KWARGS = {game.name: game.check_kwargs for game in games()}


def test_the_games_with_kernels():
    assert {"pong", "breakout", "snake", "enduro", "arena", "go", "connect4", "tetris", "trash"} <= set(CUDA_GAMES)


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
        ref.step(rng.integers(0, ref.num_actions, (6, ref.num_agents)))
        ends |= set(ref.arrays["done"][:, 0].tolist())
    assert {1, 2} <= ends, ends


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
