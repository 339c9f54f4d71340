"""Episode statistics gathered on the device: read only on request, equal to the CPU backends' infos."""

import numpy as np
import pytest

from pufferbox.cuda.device import gpu_unavailable_reason
from pufferbox.cuda.episodes import ReferenceEpisodes
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.episodes import Episodes

needs_cxx = pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler to build kernels for the host")
GPU_REASON = gpu_unavailable_reason()
ON_HOST = pytest.param("host", marks=needs_cxx)
ON_GPU = pytest.param(
    "gpu",
    marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(GPU_REASON is not None, reason=f"needs a CUDA GPU and PyCUDA ({GPU_REASON})"),
    ],
)


def table(episodes: Episodes) -> list[tuple]:
    """``(env, return, length)`` per episode, in order."""
    return list(zip(episodes.env_ids.tolist(), episodes.returns.tolist(), episodes.lengths.tolist()))


def host_env(name, num_envs, **options):
    from pufferbox.cuda.runtime import KernelEnv
    from pufferbox.registry import get_registry

    spec = get_registry().get(name)
    kwargs = {**spec.build.kwargs, **options.pop("env_kwargs", {})}
    return KernelEnv(spec.build.cuda, num_envs=num_envs, env_kwargs=kwargs, device="host", **options)


@needs_cxx
def test_steps_make_no_transfers_and_a_read_makes_two():
    env = host_env("cuda_cartpole", 8)
    rng = np.random.default_rng(0)
    pushes, pulls = env.data.pushes, env.data.pulls
    lengths = [[] for _ in range(8)]
    steps = np.zeros(8, int)
    for _ in range(150):
        env.data.arrays["actions"][:] = rng.integers(0, 2, (8, 1))
        env.step()
        steps += 1
        for e in np.flatnonzero(env.data.arrays["done"][:, 0]):  # host view of host memory: not a transfer
            lengths[e].append(int(steps[e]))
            steps[e] = 0
    assert (env.data.pushes, env.data.pulls) == (pushes, pulls)
    episodes = env.episodes.collect()
    assert env.data.pulls == pulls + 2
    assert sum(map(len, lengths)) > 30
    for e in range(8):
        mine = episodes.select(episodes.env_ids == e)
        assert mine.lengths.tolist() == lengths[e]
        assert (mine.returns == mine.lengths).all()  # reward 1 per step
    assert len(env.episodes.collect()) == 0 and env.data.pulls == pulls + 3  # nothing new: the log is not read


@needs_cxx
def test_multiagent_returns_match_the_serial_backend():
    """One env stepped by the kernel (on the host) and by the serial backend over the PettingZoo env."""
    import pufferbox.vector

    kw = {"num_taggers": 1, "num_runners": 3, "world": 5.0, "tag_radius": 1.5, "wall_penalty": -0.1, "episode_length": 25}
    kernel = host_env("tag_continuous", 1, env_kwargs=kw, seed=7)
    serial = pufferbox.vector.make("tag_continuous", backend="serial", num_envs=1, env_kwargs=kw)
    serial.async_reset(seed=7)
    serial.recv()
    rng = np.random.default_rng(1)
    expected = []
    for _ in range(120):
        actions = rng.integers(0, kernel.num_actions, (1, kernel.num_agents), dtype=np.int32)
        kernel.data.arrays["actions"][:] = actions
        kernel.step()
        serial.send(actions.reshape(-1))
        _, rewards, *_, infos, _, _ = serial.recv()
        np.testing.assert_array_equal(kernel.data.arrays["rewards"][0], rewards)
        expected.append(infos)
    expected = Episodes.concat(expected)
    got = kernel.episodes.collect()
    assert len(expected) >= 4 and got.lengths.tolist() == expected.lengths.tolist()
    assert got.env_ids.tolist() == expected.env_ids.tolist()
    np.testing.assert_allclose(got.returns, expected.returns, rtol=1e-6)


@needs_cxx
def test_a_full_log_drops_the_oldest_episodes_and_counts_them():
    env = host_env("cuda_cartpole", 2, episode_slots=2)
    twin = ReferenceEpisodes(2, 1)
    expected = []
    for _ in range(120):
        env.data.arrays["actions"][:] = 1  # always push right: episodes of about 10 steps
        env.step()
        expected.append(twin.update(env.data.arrays["rewards"], env.data.arrays["done"][:, 0]))
    expected = Episodes.concat(expected)
    infos = env.episodes.collect()
    for e in range(2):
        assert table(infos.select(infos.env_ids == e)) == table(expected.select(expected.env_ids == e))[-2:]
    assert env.episodes.dropped == len(expected) - 4 > 0


def test_reference_twin_means_over_agents():
    twin = ReferenceEpisodes(num_envs=1, num_agents=4)
    assert len(twin.update(np.array([[1, 0, 0, 0]], np.float32), np.array([0]))) == 0
    ended = twin.update(np.array([[1, -1, 2, 0]], np.float32), np.array([1]))
    assert table(ended) == [(0, 0.75, 2)]


def test_slots_must_be_positive():
    from pufferbox.cuda.episodes import EpisodeTracker

    with pytest.raises(ValueError, match="episode slots must be >= 1"):
        EpisodeTracker(None, None, num_envs=1, num_agents=1, geometry=((1, 1), 32), slots=0)


@pytest.mark.parametrize("device", [ON_HOST, ON_GPU])
def test_vector_env_reports_episodes_once_per_rollout(device):
    """The cuda backend: no infos and no transfers while stepping, then one read with every episode."""
    import torch

    import pufferbox.vector
    from pufferbox.registry import get_registry

    num_envs = 64 if device == "gpu" else 6
    kw = {"num_runners": 4, "world": 6.0, "tag_radius": 1.5, "episode_length": 30}
    venv = pufferbox.vector.make("tag_continuous", backend="cuda", num_envs=num_envs, env_kwargs=kw, seed=3, device=device)
    kernel = venv.kernel
    ref = type(kernel.reference)(num_envs=num_envs, **{**get_registry().get("tag_continuous").build.kwargs, **kw})
    ref.reset(3)
    twin, expected = ReferenceEpisodes(num_envs, ref.num_agents), []
    rng = np.random.default_rng(0)
    actions = rng.integers(0, ref.num_actions, (60, num_envs, ref.num_agents), dtype=np.int32)
    rollout = [torch.from_numpy(a.reshape(-1)).to(venv.actions.device) for a in actions]
    pulls = kernel.data.pulls
    for t, step_actions in enumerate(rollout):
        venv.send(step_actions)
        *_, infos, env_ids, masks = venv.recv()
        assert isinstance(infos, Episodes) and len(infos) == 0 and len(env_ids) == num_envs
        ref.step(actions[t])
        expected.append(twin.update(ref.arrays["rewards"], ref.arrays["done"][:, 0]))
    assert kernel.data.pulls == pulls
    got = venv.episode_stats()
    assert kernel.data.pulls == pulls + 2 and len(got) > num_envs
    by_env = lambda eps: sorted(table(eps), key=lambda row: row[0])
    assert by_env(got) == by_env(Episodes.concat(expected)) and venv.episodes_dropped == 0
    assert isinstance(venv.episode_stats(), Episodes) and len(venv.episode_stats()) == 0
