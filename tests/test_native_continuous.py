"""Continuous actions of a C game: an action size of 0 is a value in [-1, 1] that the block hands the C
step in fixed point (``round(clip(a, -1, 1) * 65536)``), as the reference sees it; the binding's range
check accepts [-65536, 65536] for such an element; NaN is refused in one line; mixing discrete and
continuous elements is refused. Their CUDA kernels: tests/test_native_continuous_cuda.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces

from pufferbox.conformance import check_env_spec
from pufferbox.native import ACTION_ONE, CGame, CGameLibrary, SingleAgentReference, quantize_actions
from pufferbox.native.actions import continuous_action_space
from pufferbox.native.build import SDK_DIR, find_cc
from pufferbox.spaces import SpaceError

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no C compiler")

# Steer: the observation is the action it was given, as the C step read it; the reward its first value.
HEADER = """#include "ocean.h"
static const int64_t STEER_ACT_N[2] = {SIZES};
#define STEER_GAME OCEAN_GAME(steer, Steer, 1, 2 * sizeof(float), 2, STEER_ACT_N, 0, 0)
typedef struct { OceanRng rng; int64_t t; } Steer;
OCEAN_FN int steer_configure(Steer *env, const int64_t *params) { (void)env; (void)params; return 0; }
OCEAN_FN void steer_reset(Steer *env, float *obs) { env->t = 0; obs[0] = 0.0f; obs[1] = 0.0f; }
OCEAN_FN int steer_step(Steer *env, const int64_t *a, float *obs, float *r, uint8_t *te, uint8_t *tr, double *m)
{
    (void)m;
    env->t += 1;
    obs[0] = (float)((double)a[0] / OCEAN_ACTION_ONE);
    obs[1] = (float)((double)a[1] / OCEAN_ACTION_ONE);
    r[0] = obs[0];
    te[0] = env->t == 4;
    tr[0] = 0;
    return te[0];
}
"""


class Steer(SingleAgentReference):
    """Echoes its action, as fixed point, for 4 steps."""

    metadata = {"render_modes": []}

    def __init__(self, render_mode: str | None = None):
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        self.action_space = continuous_action_space(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        q = quantize_actions(action)
        obs = np.array([q[0] / ACTION_ONE, q[1] / ACTION_ONE], dtype=np.float32)
        self.t += 1
        return obs, float(obs[0]), self.t == 4, False, {}


class SteerInts(Steer):
    def __init__(self, render_mode: str | None = None):
        super().__init__()
        self.action_space = spaces.MultiDiscrete([3, 3])


def library(tmp_path: Path, act_n: str = "0, 0", module: str = "steer_games") -> CGameLibrary:
    folder = tmp_path / "c"
    folder.mkdir(exist_ok=True)
    (folder / "steer.h").write_text(HEADER.replace("SIZES", act_n))
    return CGameLibrary(module, folder)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PUFFERBOX_CACHE", str(tmp_path / "cache"))


def test_quantize_clips_to_one_and_rounds_half_to_even_and_refuses_nan():
    assert ACTION_ONE == 65536 and f"#define OCEAN_ACTION_ONE {ACTION_ONE}" in (SDK_DIR / "ocean.h").read_text()
    values = [0.5, -1.0, 1.0, 3.0, -7.5, 0.5 / 65536, 1.5 / 65536, -2.5 / 65536, 1e-9, np.float32(0.1)]
    expected = [32768, -65536, 65536, 65536, -65536, 0, 2, -2, 0, round(float(np.float32(0.1)) * 65536)]
    q = quantize_actions(np.array(values))
    assert q.dtype == np.int64 and q.tolist() == expected
    with pytest.raises(SpaceError, match="a continuous action is NaN; fix:") as info:
        quantize_actions([0.0, np.nan])
    assert "\n" not in str(info.value)


def test_a_continuous_game_is_a_box_block_whose_c_step_reads_the_fixed_point(tmp_path):
    block = library(tmp_path).block("steer", Steer, 3)
    assert block.continuous and block.act_n == (0, 0)
    assert block.act_spec.flat_space == spaces.Box(-1.0, 1.0, (2,), dtype=np.float32) and not block.act_spec.discrete
    assert block.buffers.actions.dtype == np.float32
    block.vec_reset(seed=0)
    actions = np.array([[0.25, -0.3], [2.0, -9.0], [1.5 / 65536, 0.7]], dtype=np.float32)
    block.vec_step(actions)
    expected = quantize_actions(actions) / ACTION_ONE
    np.testing.assert_array_equal(block.buffers.observations, expected.astype(np.float32))
    assert block.buffers.observations[1].tolist() == [1.0, -1.0]  # out of range: clipped
    assert block.buffers.observations[2, 0] == np.float32(2 / 65536)  # half way: to even
    env = Steer()
    env.reset(seed=0)
    for row, action in zip(block.buffers.observations, actions, strict=True):
        np.testing.assert_array_equal(env.step(action)[0], row)  # the reference sees the same integers


def test_nan_is_refused_in_one_line_and_nothing_steps(tmp_path):
    block = library(tmp_path).block("steer", Steer, 2)
    block.vec_reset(seed=0)
    block.vec_step(np.full((2, 2), 0.5, dtype=np.float32))
    before = block.buffers.observations.copy()
    with pytest.raises(SpaceError, match="steer: a continuous action is NaN; fix: ") as info:
        block.vec_step(np.array([[0.1, 0.2], [np.nan, 0.0]], dtype=np.float32))
    assert "\n" not in str(info.value)
    np.testing.assert_array_equal(block.buffers.observations, before)


def test_the_binding_range_check_accepts_exactly_minus_one_to_one_in_fixed_point(tmp_path):
    block = library(tmp_path).block("steer", Steer, 1)
    block.vec_reset(seed=0)
    kernel = block.kernel
    assert kernel.step(np.array([ACTION_ONE, -ACTION_ONE], dtype=np.int64)) == 0
    assert block.buffers.observations[0].tolist() == [1.0, -1.0]
    assert kernel.step(np.array([0, ACTION_ONE + 1], dtype=np.int64)) == -2
    assert kernel.step(np.array([-ACTION_ONE - 1, 0], dtype=np.int64)) == -1
    assert block.buffers.observations[0].tolist() == [1.0, -1.0]  # nothing stepped


def test_a_mix_of_discrete_and_continuous_elements_or_a_non_box_space_is_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"steer: ACT_N mixes continuous \(0\) and discrete elements \[0, 3\]; fix:"):
        library(tmp_path, "0, 3", "steer_mixed_games").block("steer", Steer, 1)
    with pytest.raises(ValueError, match=r"must be Box\(-1, 1, \(2,\), float32\).*fix: continuous_action_space\(2\)"):
        library(tmp_path, "0, 0", "steer_box_games").block("steer", SteerInts, 1)


def test_a_continuous_game_passes_the_conformance_suite_and_has_a_cuda_kernel(tmp_path):
    games = library(tmp_path)
    spec = games.spec(CGame("steer", Steer, 1.0, "full right each step"), "steer")
    results = check_env_spec(spec, steps=40)
    assert all(r.ok for r in results) and any(r.name == "native" for r in results), [str(r) for r in results]
    with_kernel = games.spec(CGame("steer", Steer, 1.0, "full right each step", cuda_type="Steer"), "steer")
    kernel_reference = with_kernel.build.cuda.reference_class()(num_envs=1)  # tests/test_native_continuous_cuda.py
    assert (kernel_reference.action_one, kernel_reference.action_slots) == (ACTION_ONE, 2)
