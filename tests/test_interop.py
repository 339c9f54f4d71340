"""Stable-Baselines3 and CleanRL-style loops on pufferbox vector envs."""

from __future__ import annotations

import numpy as np
import pytest

import pufferbox.vector

sb3 = pytest.importorskip("stable_baselines3", reason="stable-baselines3 is the pufferbox[sb3] extra")
from stable_baselines3.common.vec_env import VecEnvWrapper  # noqa: E402

from pufferbox.interop.cleanrl import EpisodeStatistics  # noqa: E402
from pufferbox.interop.sb3 import InteropError, SB3VecEnv  # noqa: E402


class Tally(VecEnvWrapper):
    """Counts each row's episodes from rewards and dones alone, to check the adapter's episode infos."""

    def reset(self):
        self.ret, self.len = np.zeros(self.num_envs), np.zeros(self.num_envs, dtype=int)
        self.counted, self.reported = [], []
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self.ret += rewards
        self.len += 1
        for row in np.flatnonzero(dones):
            self.counted.append((row, self.ret[row], self.len[row]))
            self.ret[row], self.len[row] = 0.0, 0
        self.reported += [
            (row, info["episode"]["r"], info["episode"]["l"]) for row, info in enumerate(infos) if "episode" in info
        ]
        return obs, rewards, dones, infos


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_sb3_ppo_trains_on_a_pufferbox_vector_env(backend):
    from stable_baselines3 import PPO

    kwargs = {"num_workers": 2} if backend == "multiprocessing" else {}
    venv = Tally(SB3VecEnv(pufferbox.vector.make("cartpole", backend=backend, num_envs=8, **kwargs)))
    try:
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=128, n_epochs=2, seed=0, device="cpu")
        model.learn(total_timesteps=4096)
        assert model.num_timesteps >= 4096
        assert len(venv.reported) > 20
        assert venv.reported == [(r, pytest.approx(ret), n) for r, ret, n in venv.counted]
        assert [e["l"] for e in model.ep_info_buffer] == [n for _, _, n in venv.counted][-len(model.ep_info_buffer) :]
    finally:
        venv.close()


def test_sb3_step_layout_and_seeding():
    venv = SB3VecEnv(pufferbox.vector.make("cartpole", backend="serial", num_envs=4))
    try:
        assert venv.num_envs == 4 and venv.action_space.n == 2
        venv.seed(7)
        first = venv.reset()
        venv.seed(7)
        assert np.array_equal(venv.reset(), first)
        assert first.shape == (4, 4)
        done_seen = False
        for _ in range(200):
            obs, rewards, dones, infos = venv.step(np.zeros(4, dtype=np.int64))  # always left: falls fast
            assert obs.shape == (4, 4) and rewards.dtype == np.float32 and dones.dtype == bool
            for row in np.flatnonzero(dones):
                done_seen = True
                assert infos[row]["TimeLimit.truncated"] is False
                assert "terminal_observation" not in infos[row]  # terminated: SB3 never needs it
                assert infos[row]["episode"]["l"] >= 1
        assert done_seen
    finally:
        venv.close()


def test_sb3_gets_the_terminal_observation_of_a_truncated_episode():
    """SB3 bootstraps a time limit from ``terminal_observation``: the truncated episode's last obs."""
    import gymnasium

    venv = SB3VecEnv(pufferbox.vector.make("cartpole", backend="serial", num_envs=2, env_kwargs={"max_episode_steps": 3}))
    refs = [gymnasium.make("CartPole-v1", max_episode_steps=3) for _ in range(2)]
    try:
        venv.seed(11)
        venv.reset()
        for i, ref in enumerate(refs):
            ref.reset(seed=11 + i)
        for t in range(3):
            action = np.array([t % 2, (t + 1) % 2])
            _, _, dones, infos = venv.step(action)
            expected = [ref.step(int(a))[0] for ref, a in zip(refs, action)]
        assert dones.all()
        for row in range(2):
            assert infos[row]["TimeLimit.truncated"] is True
            np.testing.assert_array_equal(infos[row]["terminal_observation"], expected[row])
    finally:
        venv.close()


def test_sb3_refuses_an_async_pool():
    venv = pufferbox.vector.make("cartpole", backend="multiprocessing", num_envs=4, num_workers=2, batch_size=2)
    try:
        with pytest.raises(InteropError, match="synchronous"):
            SB3VecEnv(venv)
    finally:
        venv.close()


def test_sb3_refuses_multiagent_envs():
    venv = pufferbox.vector.make("multiagent", backend="serial", num_envs=2)
    try:
        with pytest.raises(InteropError, match="multiagent is multi-agent; SB3 has no agent masks"):
            SB3VecEnv(venv)
    finally:
        venv.close()


def test_without_sb3_the_import_error_names_the_extra(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "stable_baselines3.common.vec_env.base_vec_env", None)
    monkeypatch.delitem(sys.modules, "pufferbox.interop.sb3")
    with pytest.raises(ImportError, match=r"pip install 'pufferbox\[sb3\]'"):
        importlib.import_module("pufferbox.interop.sb3")


def test_cleanrl_loop_reads_episode_statistics():
    envs = EpisodeStatistics(pufferbox.vector.make("cartpole", backend="serial", num_envs=4))
    lengths, running = [], np.zeros(4, dtype=int)
    try:
        envs.reset(seed=1)
        for _ in range(150):
            _, _, terms, truncs, infos = envs.step(np.zeros(4, dtype=np.int64))
            running += 1
            if "episode" in infos:
                assert np.array_equal(infos["_episode"], terms | truncs)
                lengths += list(infos["episode"]["l"][infos["_episode"]])
                assert list(infos["episode"]["l"][infos["_episode"]]) == list(running[terms | truncs])
            running[terms | truncs] = 0
        assert len(lengths) > 4
    finally:
        envs.close()
