"""Continuous C games on the CUDA path: the kernel's action words hold the fixed point the C step reads
(``round(clip(a, -1, 1) * 65536)``), the consistency check draws such words and compares the kernel with
the CPU block byte for byte (here on the host simulator), the cuda backend quantizes a policy's floats on
the device exactly as ``quantize_actions`` does (ties to even, clipping), and the trainer samples such
actions from the policy, never with the discrete sampler kernel. The GPU tests run with ``pytest -m gpu``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferbox.vector as vector
from pufferbox.cuda.actions import quantize_into
from pufferbox.cuda.build import CORE_SOURCE, assemble, compile_check, find_nvcc
from pufferbox.cuda.consistency import check_env
from pufferbox.cuda.device import gpu_unavailable_reason
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.native import ACTION_ONE, CGame, CGameLibrary, SingleAgentReference, quantize_actions
from pufferbox.native.actions import continuous_action_space
from pufferbox.native.build import find_cc
from pufferbox.train.act import discrete_sampler

needs_compilers = pytest.mark.skipif(
    find_cc() is None or find_cxx() is None, reason="no C/C++ compiler for the block and the host simulator"
)
needs_gpu = pytest.mark.skipif(gpu_unavailable_reason() is not None, reason=f"needs a CUDA GPU: {gpu_unavailable_reason()}")

# Drift: a walk in fixed point (exact integers) that ends at +-limit (terminated) or after 12 steps
# (truncated); the observation shows where it is, the second element as the C step read it, and a double
# that sums its squares (float arithmetic on the actions, which host and device must round alike).
HEADER = """#include "ocean.h"
static const int64_t DRIFT_ACT_N[2] = {SIZES};
#define DRIFT_GAME OCEAN_GAME(drift, Drift, 1, 3 * sizeof(float), 2, DRIFT_ACT_N, 1, 0)
typedef struct { OceanRng rng; int64_t t, pos, limit; double moved; } Drift;
OCEAN_FN int drift_configure(Drift *env, const int64_t *params) { env->limit = params[0]; return params[0] < 1; }
OCEAN_FN void drift_reset(Drift *env, float *obs)
{
    env->t = 0; env->pos = 0; env->moved = 0.0; obs[0] = 0.0f; obs[1] = 0.0f; obs[2] = 0.0f;
}
OCEAN_FN int drift_step(Drift *env, const int64_t *a, float *obs, float *r, uint8_t *te, uint8_t *tr, double *m)
{
    (void)m;
    const double turn = (double)a[1] / OCEAN_ACTION_ONE;
    env->t += 1;
    env->pos += a[0];
    env->moved += turn * turn;
    obs[0] = (float)((double)env->pos / OCEAN_ACTION_ONE / (double)env->limit);
    obs[1] = (float)turn;
    obs[2] = (float)env->moved;
    r[0] = (float)(-0.5 * turn);
    te[0] = env->pos >= env->limit * OCEAN_ACTION_ONE || env->pos <= -env->limit * OCEAN_ACTION_ONE;
    tr[0] = !te[0] && env->t >= 12;
    return te[0] || tr[0];
}
"""


class Drift(SingleAgentReference):
    """A walk in [-limit, limit] driven by the first action element; 12 steps at most."""

    PARAMS = ("limit",)
    metadata = {"render_modes": []}

    def __init__(self, limit: int = 2, render_mode: str | None = None):
        self.limit = limit
        self.observation_space = spaces.Box(-np.inf, np.inf, (3,), dtype=np.float32)
        self.action_space = continuous_action_space(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.t, self.pos, self.moved = 0, 0, 0.0
        return np.zeros(3, dtype=np.float32), {}

    def step(self, action):
        a = quantize_actions(action)
        turn = float(a[1]) / ACTION_ONE
        self.t += 1
        self.pos += int(a[0])
        self.moved += turn * turn
        obs = np.array([self.pos / ACTION_ONE / self.limit, turn, self.moved], dtype=np.float32)
        terminated = abs(self.pos) >= self.limit * ACTION_ONE
        return obs, float(np.float32(-0.5 * turn)), terminated, not terminated and self.t >= 12, {}


def drift_spec(tmp_path: Path, act_n: str = "0, 0", module: str = "drift_games"):
    folder = tmp_path / module / "c"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "drift.h").write_text(HEADER.replace("SIZES", act_n))
    games = CGameLibrary(module, folder)
    return games.spec(CGame("drift", Drift, 1.0, "a walk", cuda_type="Drift"), "drift")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PUFFERBOX_CACHE", str(tmp_path / "cache"))


# ties (k + 1/2) / 65536 go to the even k; values past +-1 are clipped; infinities too
TIES = [(k + 0.5) / ACTION_ONE for k in range(-6, 6)] + [1 - 0.5 / ACTION_ONE, -1 + 0.5 / ACTION_ONE]
EDGES = [0.0, -0.0, 1.0, -1.0, 1.5, -7.25, 1e30, -1e30, np.inf, -np.inf, 1e-45, 0.3 / ACTION_ONE, 0.7 / ACTION_ONE]


def samples(dtype: torch.dtype) -> torch.Tensor:
    """Ties, edges and random values in [-1.5, 1.5], as ``dtype`` (float16 holds few of them exactly)."""
    rng = np.random.default_rng(5)
    values = np.concatenate([TIES, EDGES, rng.uniform(-1.5, 1.5, 2000), rng.uniform(-1, 1, 500) * 2.0**-14])
    return torch.from_numpy(values).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("out_dtype", [torch.int32, torch.int64])
def test_the_device_quantization_equals_quantize_actions_bit_for_bit(dtype, out_dtype):
    values = samples(dtype)
    out = torch.full((values.numel(),), 12345, dtype=out_dtype)
    got = quantize_into(values, ACTION_ONE, out)
    assert got is out
    expected = quantize_actions(values.to(torch.float64).numpy())  # the float64 value of each element: exact
    np.testing.assert_array_equal(out.numpy().astype(np.int64), expected)
    if dtype in (torch.float64, torch.float32):  # ties and clipping are in these samples: check they were met
        head = out[: len(TIES) + 4].tolist()
        assert head[:12] == [-6, -4, -4, -2, -2, 0, 0, 2, 2, 4, 4, 6]  # half to even, not half away from 0
        assert head[12:14] == [ACTION_ONE, -ACTION_ONE] and head[14:16] == [0, 0]


def test_the_device_quantization_takes_any_shape_and_integers_and_writes_nan_as_zero():
    out = torch.zeros(6, dtype=torch.int32)
    scratch = torch.empty(6, dtype=torch.float64)
    quantize_into(np.array([[0.25, -3.0], [np.nan, 1.0], [0.5 / ACTION_ONE, -1.5 / ACTION_ONE]]), ACTION_ONE, out, scratch)
    assert out.tolist() == [16384, -ACTION_ONE, 0, ACTION_ONE, 0, -2]  # NaN: 0, never an out-of-range word
    quantize_into(torch.tensor([0, 1, -1, 2, -5, 0]), ACTION_ONE, out)  # integers are values, as the block takes them
    assert out.tolist() == quantize_actions(np.array([0, 1, -1, 2, -5, 0])).tolist()
    with pytest.raises(ValueError, match=r"got 5 continuous action values, the envs read 6; fix: ") as info:
        quantize_into(torch.zeros(5), ACTION_ONE, out)
    assert "\n" not in str(info.value)


@needs_compilers
def test_a_continuous_game_kernel_equals_the_cpu_block_on_the_host_through_both_endings(tmp_path):
    spec = drift_spec(tmp_path)
    report = check_env(spec, num_envs=5, steps=90, device="host")
    assert report.ok, report.summary()
    ref = spec.build.cuda.reference_class()(num_envs=5)
    assert (ref.action_one, ref.action_slots, ref.num_actions) == (ACTION_ONE, 2, 0)
    ref.reset(0)
    rng, ends, words = np.random.default_rng(0), set(), []
    for _ in range(90):  # the check's draws: uniform fixed point words, the ends and the middle among them
        actions = ref.random_actions(rng)
        words.append(actions)
        ref.step(actions)
        ends |= set(ref.arrays["done"][:, 0].tolist())
    drawn = np.concatenate(words)
    assert drawn.dtype == np.int32 and drawn.min() == -ACTION_ONE and drawn.max() == ACTION_ONE
    assert {-ACTION_ONE, 0, ACTION_ONE} <= set(drawn.ravel().tolist()) and len(np.unique(drawn)) > 500
    assert {1, 2} <= ends, ends  # terminated and truncated episodes both went through the kernel


@needs_compilers
@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin")
def test_a_continuous_game_kernel_compiles_with_nvcc(tmp_path):
    impl = drift_spec(tmp_path).build.cuda
    ref = impl.reference_class()(num_envs=4)
    source = impl.source_text() + f'\n#include "{CORE_SOURCE.name}"\n'
    ptx = compile_check(assemble(source, ref.constants(), search=(Path(impl.source).parent,)), output="ptx").decode()
    assert ".entry ocean_step" in ptx and "fma." not in ptx


@needs_compilers
def test_the_kernel_reference_takes_floats_as_the_block_does(tmp_path):
    cls = drift_spec(tmp_path).build.cuda.reference_class()
    floats, words = cls(num_envs=3), cls(num_envs=3)
    floats.reset(0)
    words.reset(0)
    actions = np.array([[0.3, 2.0], [-0.5 / ACTION_ONE, 2.5 / ACTION_ONE], [-9.0, -0.123]], dtype=np.float32)
    floats.step(actions)
    words.step(quantize_actions(actions))
    np.testing.assert_array_equal(floats.arrays["env"], words.arrays["env"])
    assert floats.arrays["obs"][1, 1] == np.float32(2 / ACTION_ONE)  # 2.5 went to the even 2


@needs_compilers
def test_a_mix_of_discrete_and_continuous_elements_has_no_kernel_either(tmp_path):
    spec = drift_spec(tmp_path, "0, 3", "drift_mixed_games")
    with pytest.raises(ValueError, match=r"drift: ACT_N mixes continuous \(0\) and discrete elements \[0, 3\]; fix:"):
        spec.build.cuda.reference_class()(num_envs=1)


@needs_compilers
@pytest.mark.parametrize("device", ["host", pytest.param("gpu", marks=[pytest.mark.gpu, needs_gpu])])
def test_the_cuda_backend_quantizes_floats_and_steps_as_the_cpu_block(tmp_path, device):
    spec = drift_spec(tmp_path)
    rng = np.random.default_rng(1)
    with (
        vector.make(spec, backend="serial", num_envs=4) as cpu,
        vector.make(spec, backend="cuda", device=device, num_envs=4) as gpu,
    ):
        assert gpu.single_action_space == continuous_action_space(2) and not gpu.samples_actions
        cpu.reset(seed=0)
        gpu.reset(seed=0)
        ended = 0
        for step in range(40):
            actions = rng.uniform(-1.3, 1.3, (4, 2)).astype(np.float32)
            actions[step % 4] = [(step - 20 + 0.5) / ACTION_ONE, 1.5 / ACTION_ONE]  # ties on one row each step
            cpu.send(actions)
            gpu.send(torch.from_numpy(actions).to(gpu.device))
            expected, got = cpu.recv(), gpu.recv()
            for want, have in zip(expected[:4], got[:4], strict=True):
                np.testing.assert_array_equal(np.asarray(want), have.cpu().numpy())
            ended += int(np.asarray(expected[2]).sum() + np.asarray(expected[3]).sum())
        assert ended
        with pytest.raises(ValueError, match="the sampler kernel draws discrete actions, this env's are continuous; fix:"):
            gpu.sample(torch.full((4, 2), 0.5, device=gpu.device))
        assert discrete_sampler(gpu, gpu.act_spec, policy=None) is None  # the trainer samples from the policy


@needs_compilers
def test_a_rollout_on_the_cuda_backend_steps_the_policys_own_samples_in_fixed_point(tmp_path):
    from pufferbox.train.collector import DeviceCollector
    from pufferbox.train.config import PolicyConfig
    from pufferbox.train.policies import build_agent

    with vector.make(drift_spec(tmp_path), backend="cuda", device="host", num_envs=4) as venv:
        torch.manual_seed(0)
        agent = build_agent(venv.obs_spec, venv.act_spec, PolicyConfig(hidden_size=8))
        collector = DeviceCollector(venv, agent, horizon=16)
        assert not collector.use_sampler
        collector.reset(0)
        batch = collector.collect().batch
    actions, obs, starts = batch["actions"], batch["obs"], batch["starts"].numpy()
    assert actions.dtype == torch.float32 and actions.shape == (4, 17, 2)
    assert (actions.abs() > 1).any()  # the policy's samples, stored unclipped; the env got them clipped
    stepped = (quantize_actions(actions[:, :-1, 1].numpy()) / ACTION_ONE).astype(np.float32)  # what the C code read
    kept = ~starts[:, 1:]  # a row that ended shows its next episode's first observation instead
    assert kept.sum() > 40 and (~kept).any()
    np.testing.assert_array_equal(obs[:, 1:, 1].numpy()[kept], stepped[kept])


@pytest.mark.gpu
@needs_gpu
@needs_compilers
def test_a_continuous_game_kernel_equals_the_cpu_block_on_the_gpu(tmp_path):
    report = check_env(drift_spec(tmp_path), num_envs=64, steps=90, device="gpu")
    assert report.ok, report.summary()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_quantization_on_the_gpu_equals_quantize_actions_bit_for_bit(dtype):
    values = samples(dtype).cuda()
    out = torch.zeros(values.numel(), dtype=torch.int32, device="cuda")
    quantize_into(values, ACTION_ONE, out)
    np.testing.assert_array_equal(out.cpu().numpy(), quantize_actions(values.double().cpu().numpy()))
