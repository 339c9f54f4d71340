"""Procgen through its batched gym3 interface: a one-env Gymnasium adapter and a native block.

gym3 has no reset: each game restarts by itself when an episode ends, and ``first``
flags the first observation of the new episode. Both classes map that onto pufferbox's
``SAME_STEP`` autoreset: the step that ends an episode reports ``terminated=True`` (deaths,
level completions and the game's own time limit alike) and already carries the next
episode's first observation. Seeding: a seeded reset of env ``i`` starts it from the state
of a fresh ``ProcgenGym3Env(num=1, rand_seed=seed)``, in the adapter and in the block
alike, so a block of N envs and N adapters produce the same episodes.

Example:
    >>> block = ProcgenBlock(num_envs=64, game="bigfish")  # doctest: +SKIP
    >>> block.vec_reset(seed=0)                            # doctest: +SKIP
    >>> infos = block.vec_step(np.zeros(64, np.int64))     # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from pufferbox.api import NO_EPISODES, ActionSpec, Episodes, NativeBlock, ObservationSpec, episodes_ended

GAMES = (
    "bigfish",
    "bossfight",
    "caveflyer",
    "chaser",
    "climber",
    "coinrun",
    "dodgeball",
    "fruitbot",
    "heist",
    "jumper",
    "leaper",
    "maze",
    "miner",
    "ninja",
    "plunder",
    "starpilot",
)
DISTRIBUTION_MODES = ("easy", "hard", "extreme", "memory", "exploration")
NUM_ACTIONS = 15
OBSERVATION_SPACE = gymnasium.spaces.Box(0, 255, (64, 64, 3), np.uint8)
ACTION_SPACE = gymnasium.spaces.Discrete(NUM_ACTIONS)


def gym3_env(
    num: int, game: str, distribution_mode: str, start_level: int, num_levels: int, seed: int, **options: Any
) -> Any:
    """A ``procgen.ProcgenGym3Env``, checking the names first for a one-line error."""
    if game not in GAMES:
        raise ValueError(f"unknown Procgen game {game!r}; choose one of {', '.join(GAMES)}")
    if distribution_mode not in DISTRIBUTION_MODES:
        raise ValueError(f"unknown distribution_mode {distribution_mode!r}; choose one of {', '.join(DISTRIBUTION_MODES)}")
    from procgen import ProcgenGym3Env  # heavy (imports gym and loads the game library); optional until used

    return ProcgenGym3Env(
        num=num,
        env_name=game,
        distribution_mode=distribution_mode,
        start_level=start_level,
        num_levels=num_levels,
        rand_seed=int(seed),
        **options,
    )


class ProcgenEnv(gymnasium.Env):
    """One Procgen game as a Gymnasium env (``uint8[64, 64, 3]`` observations, 15 actions)."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(
        self,
        game: str,
        distribution_mode: str = "easy",
        start_level: int = 0,
        num_levels: int = 0,
        render_mode: str | None = None,
        **options: Any,
    ):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.config = dict(
            game=game, distribution_mode=distribution_mode, start_level=start_level, num_levels=num_levels, **options
        )
        self.render_mode = render_mode
        self.observation_space = OBSERVATION_SPACE
        self.action_space = ACTION_SPACE
        self.env = gym3_env(1, seed=0, **self.config)  # checks the names now, not at the first reset
        self.episode_over = False  # gym3 already restarted the game: reset() just returns its first frame
        self.frame = np.zeros(OBSERVATION_SPACE.shape, np.uint8)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None or not self.episode_over:
            self.env.close()
            rand_seed = seed if seed is not None else int(self.np_random.integers(2**31 - 1))
            self.env = gym3_env(1, seed=rand_seed, **self.config)
        self.episode_over = False
        _, obs, _ = self.env.observe()
        self.frame = obs["rgb"][0]
        return self.frame, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.env.act(np.asarray([action], dtype=np.int32))
        reward, obs, first = self.env.observe()
        self.frame = obs["rgb"][0]
        self.episode_over = bool(first[0])
        info = {"prev_level_complete": int(self.env.get_info()[0]["prev_level_complete"])} if self.episode_over else {}
        return self.frame, float(reward[0]), self.episode_over, False, info

    def render(self) -> np.ndarray | None:
        return self.frame if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        self.env.close()


class ProcgenBlock(NativeBlock):
    """``num_envs`` games in one ``ProcgenGym3Env``: a native block for the vector backends."""

    obs_spec = ObservationSpec(OBSERVATION_SPACE)
    act_spec = ActionSpec(ACTION_SPACE)

    def __init__(
        self,
        num_envs: int,
        game: str,
        distribution_mode: str = "easy",
        start_level: int = 0,
        num_levels: int = 0,
        **options: Any,
    ):
        super().__init__(num_envs, name=f"procgen/{game}")
        self.config = dict(
            game=game, distribution_mode=distribution_mode, start_level=start_level, num_levels=num_levels, **options
        )
        self.env = gym3_env(num_envs, seed=0, **self.config)
        self.returns = np.zeros(num_envs, np.float64)
        self.lengths = np.zeros(num_envs, np.int64)

    def set_buffers(self, buffers: Any) -> None:
        super().set_buffers(buffers)
        self.frames = self.obs_spec.leaf_views(buffers.observations)[0]

    def vec_reset(self, seed: int | None = None) -> Episodes:
        if seed is not None:  # env i starts where a fresh one-env game seeded seed + i starts
            states = []
            for i in range(self.num_envs):
                single = gym3_env(1, seed=seed + i, **self.config)
                states += single.callmethod("get_state")
                single.close()
            self.env.callmethod("set_state", states)
        _, obs, _ = self.env.observe()
        b = self.buffers
        self.frames[:] = obs["rgb"]
        b.rewards[:] = 0.0
        b.terminals[:] = b.truncations[:] = False
        b.masks[:] = True
        self.returns[:] = 0.0
        self.lengths[:] = 0
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        actions = np.asarray(actions).reshape(self.num_envs)
        self.check_discrete_actions(actions, NUM_ACTIONS)
        self.env.act(actions.astype(np.int32))
        reward, obs, first = self.env.observe()
        b = self.buffers
        self.frames[:] = obs["rgb"]
        b.rewards[:] = reward
        b.terminals[:] = first
        self.returns += reward
        self.lengths += 1
        if not first.any():
            return NO_EPISODES
        env_infos = self.env.get_info()
        complete = np.array([float(info["prev_level_complete"]) for info in env_infos])
        episodes = episodes_ended(first, self.returns, self.lengths, {"prev_level_complete": complete})
        self.returns[first] = 0.0
        self.lengths[first] = 0
        return episodes

    def close(self) -> None:
        self.env.close()
