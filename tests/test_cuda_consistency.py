"""CPU references vs the kernel sources run on the host (same .cu text as the GPU build)."""

import numpy as np
import pytest

from pufferbox.cuda import rng
from pufferbox.cuda.consistency import FLOAT_ULPS, check_env, compare, ulp_distance
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.registry import get_registry

needs_cxx = pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler to build kernels for the host")


@needs_cxx
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("cuda_cartpole", {}),
        ("tag", {}),
        ("tag", {"num_taggers": 2, "num_runners": 6, "grid": 5, "k_nearest": 3}),
        # the cell index: sparse (searches go several rings out), dense, and cells over capacity (full-scan fallback)
        ("tag", {"num_taggers": 2, "num_runners": 10, "grid": 12, "k_nearest": 2, "cell_capacity": 4}),
        ("tag", {"num_taggers": 3, "num_runners": 60, "grid": 6, "k_nearest": 5}),
        ("tag", {"num_taggers": 2, "num_runners": 30, "grid": 5, "k_nearest": 3, "cell_capacity": 2}),
    ],
)
def test_kernel_matches_reference_on_host(name, kwargs):
    report = check_env(get_registry().get(name), num_envs=4, steps=80, device="host", env_kwargs=kwargs)
    assert report.ok, report.summary()


@needs_cxx
def test_several_blocks_per_env_match_one_block():
    from pufferbox_warp.plugin import TAG

    from pufferbox.cuda.runtime import KernelEnv

    kw = {"num_taggers": 2, "num_runners": 5, "grid": 4}
    envs = [KernelEnv(TAG, num_envs=2, env_kwargs=kw, device="host", max_block=b) for b in (1024, 2)]
    assert envs[1].grid == (2, 4) and envs[1].block == 2
    actions = np.random.default_rng(1).integers(0, 5, (30, 2, 7), dtype=np.int32)
    for act in actions:
        for env in envs:
            env.data.arrays["actions"][:] = act
            env.step()
    for name in ("observations", "rewards", "pos", "in_game", "done"):
        np.testing.assert_array_equal(envs[0].pull(name), envs[1].pull(name))


@needs_cxx
def test_cell_index_is_used_and_spans_blocks():
    """The index is on where it pays, is emptied and refilled by every block of an env, and a
    cell over capacity switches only that env to the full scan."""
    from pufferbox_warp.plugin import TAG
    from pufferbox_warp.tag import TagReference

    from pufferbox.cuda.runtime import KernelEnv

    assert TagReference(num_taggers=3, num_runners=60, grid=6, k_nearest=5).cell_capacity == 16
    assert TagReference(num_taggers=3, num_runners=60, grid=6, k_nearest=0).cell_capacity == 0
    kw = {"num_taggers": 3, "num_runners": 60, "grid": 6, "k_nearest": 5}
    envs = [KernelEnv(TAG, num_envs=3, env_kwargs=kw, device="host", max_block=b) for b in (1024, 16)]
    assert envs[1].grid == (3, 4)
    actions = np.random.default_rng(3).integers(0, 5, (40, 3, 63), dtype=np.int32)
    for act in actions:
        for env in envs:
            env.data.arrays["actions"][:] = act
            env.step()
            assert (env.pull("cell_count").sum(axis=1) == 63).all()  # every agent filed once
    for name in ("observations", "rewards", "pos", "cell_count", "cell_overflow"):
        np.testing.assert_array_equal(envs[0].pull(name), envs[1].pull(name))
    crowded = KernelEnv(TAG, num_envs=3, env_kwargs={**kw, "cell_capacity": 2}, device="host")
    assert crowded.pull("cell_overflow").any()
    # without the index a step restores only pos, in_game and steps: no launches for unused arrays
    assert [launch[3][0] for launch in envs[0].reset_launches] == [
        envs[0].data.pointer(n) for n in envs[0].reference.reset_arrays
    ]
    plain = KernelEnv(TAG, num_envs=2, env_kwargs={"k_nearest": 2}, device="host")
    assert plain.reference.reset_arrays == ("pos", "in_game", "steps") and len(plain.reset_launches) == 3
    assert len(envs[0].reset_launches) == 6


def test_prepared_launch_format_follows_the_argument_types():
    from pufferbox.cuda.function import arg_format

    assert arg_format([np.uintp(1), np.int32(2), np.uint32(3), np.float32(0.5)]) == "PiIf"
    with pytest.raises(TypeError, match="pass np.uintp, np.int32, np.uint32 or np.float32"):
        arg_format([np.uintp(1), 7])


def test_cell_capacity_must_not_be_negative():
    from pufferbox_warp.tag import TagReference

    with pytest.raises(ValueError, match="cell_capacity must be >= 0"):
        TagReference(k_nearest=2, cell_capacity=-1)


@needs_cxx
def test_env_block_size_changes_the_launch_not_the_result():
    """bench_cuda.py's threads-per-block sweep of one-thread-per-env kernels relies on this."""
    from pufferbox.cuda.runtime import KernelEnv

    spec = get_registry().get("cuda_cartpole")
    envs = [KernelEnv(spec.build.cuda, num_envs=100, device="host", env_block=b) for b in (256, 32)]
    assert (envs[0].grid, envs[0].block) == ((1, 1), 128)  # capped at the rows, rounded up to a warp
    assert (envs[1].grid, envs[1].block) == ((4, 1), 32)
    actions = np.random.default_rng(2).integers(0, 2, (40, 100, 1), dtype=np.int32)
    for act in actions:
        for env in envs:
            env.data.arrays["actions"][:] = act.reshape(env.data.arrays["actions"].shape)
            env.step()
    for name in ("observations", "rewards", "done"):
        np.testing.assert_array_equal(envs[0].pull(name), envs[1].pull(name))


@needs_cxx
def test_sampler_kernel_matches_numpy_and_distribution():
    from pufferbox_warp.plugin import TAG

    from pufferbox.cuda.runtime import KernelEnv

    env = KernelEnv(TAG, num_envs=50, device="host")
    rows = 50 * env.num_agents
    probs = np.tile(np.array([0.1, 0.2, 0.3, 0.4, 0.0], np.float32), (rows, 1))
    counters = np.zeros(rows, np.uint32)
    draws = []
    for _ in range(8):
        env.sample_actions(np.uintp(probs.ctypes.data))
        expected = rng.sample_categorical(probs, counters, int(env.sampler_key))
        np.testing.assert_array_equal(env.pull("actions").reshape(-1), expected)
        draws.append(expected)
    freq = np.bincount(np.concatenate(draws), minlength=5) / (8 * rows)
    assert abs(freq - [0.1, 0.2, 0.3, 0.4, 0.0]).max() < 0.05 and freq[4] == 0


def test_ulp_distance():
    one = np.float32(1.0)
    assert ulp_distance(np.array([one]), np.array([np.nextafter(one, np.float32(2))]))[0] == 1
    assert ulp_distance(np.array([np.float32(-0.0)]), np.array([np.float32(0.0)]))[0] == 0
    assert ulp_distance(np.array([np.float32(-1e-45)]), np.array([np.float32(1e-45)]))[0] == 2


def test_mismatches_are_reported_by_env_agent_feature():
    cpu = np.zeros((2, 3 * 4), np.float32)
    kernel = cpu.copy()
    kernel[1, 7] = 1.0  # env 1, agent 1, feature 3
    kernel[0, 0] = np.nextafter(np.float32(0), np.float32(1)) * np.float32(FLOAT_ULPS)  # within the bound
    (m,) = compare(5, "observations", cpu, kernel, agents=3, obs_dim=4)
    assert (m.step, m.env, m.agent, m.feature, m.gpu) == (5, 1, 1, 3, 1.0)
    assert "env 1 agent 1 feature 3" in str(m)
    ints = compare(0, "pos", np.zeros((1, 4), np.int32), np.array([[0, 0, 1, 0]], np.int32), agents=2, obs_dim=4)
    assert [(i.env, i.feature) for i in ints] == [(0, 2)]


def test_rng_is_uniform_and_deterministic():
    u = rng.uniform(np.uint32(3), np.arange(20000, dtype=np.uint32))
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    np.testing.assert_array_equal(u, rng.uniform(np.uint32(3), np.arange(20000, dtype=np.uint32)))
    x = np.linspace(-0.5, 0.5, 101, dtype=np.float32)
    assert np.abs(rng.sin_poly(x) - np.sin(x)).max() < 1e-6 and np.abs(rng.cos_poly(x) - np.cos(x)).max() < 1e-6


def test_no_gpu_gives_one_line_reasons(monkeypatch):
    from pufferbox.cuda import device
    from pufferbox.vector import make
    from pufferbox.vector.base import VectorConfigError

    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: "no CUDA GPU: test says so")
    import pufferbox.cuda.consistency as consistency
    import pufferbox.vector.cuda as vcuda

    monkeypatch.setattr(consistency, "gpu_unavailable_reason", lambda: "no CUDA GPU: test says so")
    monkeypatch.setattr(vcuda, "gpu_unavailable_reason", lambda: "no CUDA GPU: test says so")
    with pytest.raises(device.NoGPUError, match="^no CUDA GPU: test says so; run on a GPU"):
        check_env(get_registry().get("tag"))
    with pytest.raises(VectorConfigError, match=r"no CUDA GPU found .*--backend serial/multiprocessing") as err:
        make("tag", backend="cuda", num_envs=4)
    assert "\n" not in str(err.value)


def test_reference_envs_follow_their_apis():
    from pettingzoo.test import parallel_api_test
    from pufferbox_warp.cartpole import CartPoleEnv
    from pufferbox_warp.tag import TagEnv

    parallel_api_test(TagEnv(num_runners=3, episode_length=30), num_cycles=100)
    env = CartPoleEnv()
    obs, _ = env.reset(seed=1)
    total, done = 0.0, False
    while not done:
        obs, r, term, trunc, _ = env.step(env.action_space.sample())
        total += r
        done = term or trunc
    assert 5 <= total <= 500 and (abs(obs[0]) > 2.4 or abs(obs[2]) > 0.2094 or trunc)


@needs_cxx
@pytest.mark.parametrize("name", ["cuda_cartpole", "tag"])
def test_cli_check_cuda_host_runs_without_gpu(name, monkeypatch):
    """`pufferbox check ENV --cuda --host`: the kernel source built with g++, never a GPU."""
    from click.testing import CliRunner

    import pufferbox.cuda.consistency as consistency
    from pufferbox.cli import cli, load_commands

    load_commands()
    monkeypatch.setattr(consistency, "gpu_unavailable_reason", lambda: "no CUDA GPU: the host run must not ask")
    result = CliRunner().invoke(cli, ["check", name, "--cuda", "--host", "--check", "api", "--steps", "5"])
    assert result.exit_code == 0, result.output
    assert f"{name}: ok   cuda: {name} (host): 200 steps x 8 envs, 0 mismatches" in result.output
    assert f"{name}: all 2 checks passed" in result.output


@needs_cxx
def test_cli_check_cuda_host_reports_each_wrong_index(monkeypatch):
    """A reference that disagrees with its kernel in one feature of one env: exit 1, the index named."""
    from click.testing import CliRunner
    from pufferbox_warp.cartpole import CartPoleReference

    from pufferbox.cli import cli, load_commands

    observe = CartPoleReference.cartpole_observe

    def off_by_one_in_env_1_feature_2(self):
        observe(self)
        if self.num_envs > 1:
            self.arrays["observations"][1, 2] += 1.0

    monkeypatch.setattr(CartPoleReference, "cartpole_observe", off_by_one_in_env_1_feature_2)
    load_commands()
    result = CliRunner().invoke(cli, ["check", "cuda_cartpole", "--host", "--check", "api", "--steps", "5"])
    assert result.exit_code == 1, result.output
    assert "cuda_cartpole: FAIL cuda: cuda_cartpole (host): " in result.output
    assert "  step 0 observations[env 1 agent 0 feature 2]: cpu=" in result.output
    assert "observations[env 0" not in result.output  # only the broken index is reported
    assert "cuda_cartpole: failed cuda" in result.output
