"""Registers ``atari/<game>`` for every single-player ROM of ale-py 0.12.1, short name ``<game>``.

Each env is ``ALE/<Game>-v5`` with sticky actions (``repeat_action_probability=0.25``)
and the standard preprocessing: no-op starts, frame skip 4 with a max-pool over the last
two frames, grayscale, 84×84, a stack of 4 frames (observation ``uint8[4, 84, 84]``).
The training defaults add three training aids, as CleanRL, SB3 and EnvPool train Atari:
reward clipping to {-1, 0, 1} (``clip_rewards``), a lost life ending the learner's episode
while the game goes on (``episodic_life``, :class:`EpisodicLife`), and FIRE pressed after each
reset and lost life (``fire_reset``). ``pufferbox eval`` uses none of them, so it scores raw
game points. The whole game's unclipped score is in the final info of the game's last step as
``raw_episode_return`` (the unit the peers report).

Vector envs default to the native block of :mod:`pufferbox_atari.native` (ale-py's threaded C++
vector env: the same preprocessing, equal frames bit for bit with no-op starts off; what differs is
listed there); ``native=False`` (``vec.native = false``) steps these Gymnasium envs instead.

ale-py and OpenCV are imported inside :func:`make_atari` only: without them the envs are
listed as unavailable with the install command instead of breaking the plugin.

Example:
    >>> env = make_atari("breakout")  # doctest: +SKIP
    >>> env.observation_space.shape
    (4, 84, 84)
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium
import numpy as np

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl
from pufferbox_atari.games import GAMES, MULTIPLAYER_ONLY  # noqa: F401 - MULTIPLAYER_ONLY: re-exported

REQUIRES = {"ale_py": "ale-py==0.12.1", "cv2": "opencv-python-headless==4.11.0.86"}

DEFAULTS = {
    "env": {"clip_rewards": True, "episodic_life": True, "fire_reset": True},
    "train": {
        "total_steps": 10_000_000,
        "learning_rate": 2.5e-4,
        "num_steps": 128,
        "ent_coef": 0.01,
        # CleanRL's Atari PPO with half its epochs over twice its minibatches: the same 16 Adam steps
        # per rollout on half the arithmetic (the update is most of a CPU step; RESULTS.md, "Breakout")
        "update_epochs": 2,
        "num_minibatches": 8,
        "clip_coef": 0.1,
        # bf16 where the CPU/GPU has it in hardware: 1.18x Breakout, same return over 3 seeds (RESULTS.md)
        "autocast": "auto",
    },
    "vec": {"num_envs": 8},
    "policy": {"hidden_size": 512},
}
# The GPU profile (not measured to a score yet: 10M Atari frames do not fit a 2-core machine; checked on the
# GPU run). On a GPU box ale-py's stepping is the cost, not the update: 256 envs spread over the workers
# the machine has cores for (rounded up to 270 for 15 workers on 16 cores), 128 steps each, about 34k rows
# per update. Minibatches of about 2,048 rows (16 of them, two epochs: 32 Adam steps per update, where the
# defaults' 16 per 1,024 rows would be 512) keep a NatureCNN update to a few milliseconds each on a GPU,
# well under the ~0.5 s the workers take to step the rollout; the rate is doubled (5e-4) for minibatches
# 16x the defaults' 128 rows (the square-root rule would give 4x: half of that is the cautious end until
# the GPU run measures it).
GPU_CONFIG = {
    "train": {"num_steps": 128, "update_epochs": 2, "num_minibatches": 16, "learning_rate": 5e-4},
    "vec": {"num_envs": 256},
}


class EpisodicLife(gymnasium.Wrapper):
    """A lost life ends the learner's episode while the game goes on (DeepMind's training signal).

    ``reset`` after a lost life takes one no-op step instead of restarting the game; a real reset
    happens at game over, on truncation, and whenever a seed is passed. The wrapped env's final
    ``info`` (e.g. the whole game's ``raw_episode_return``) comes only with the game's last step.
    """

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        lost_life = 0 < lives < self.lives
        self.lives = lives
        return obs, reward, terminated or lost_life, truncated, info

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        if self.game_over or kwargs.get("seed") is not None:
            obs, info = self.env.reset(**kwargs)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the no-op itself ended the game
                obs, info = self.env.reset(**kwargs)
        self.game_over = False
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info


class FireReset(gymnasium.Wrapper):
    """Presses FIRE after every reset (with :class:`EpisodicLife` inside, after every lost life too),
    for games that wait for it to start (Breakout's ball); a no-op wrapper for games without FIRE."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.fire = env.unwrapped.get_action_meanings()[1:2] == ["FIRE"]

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        if self.fire:
            obs, _, terminated, truncated, info = self.env.step(1)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class ClipReward(gymnasium.Wrapper):
    """Rewards clipped to their sign; the raw episode return goes into the final step's info."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.raw_return = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self.raw_return = 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.raw_return += float(reward)
        if terminated or truncated:
            info = {**info, "raw_episode_return": self.raw_return}
        return obs, float(np.sign(reward)), terminated, truncated, info


def gym_id(game: str) -> str:
    """``"space_invaders"`` → ``"ALE/SpaceInvaders-v5"`` (ale-py's own naming rule)."""
    return f"ALE/{game.title().replace('_', '')}-v5"


def make_atari(
    game: str,
    frame_skip: int = 4,
    noop_max: int = 30,
    screen_size: int = 84,
    stack: int = 4,
    repeat_action_probability: float = 0.25,
    episodic_life: bool = False,
    fire_reset: bool = False,
    clip_rewards: bool = False,
    full_action_space: bool = False,
    max_episode_frames: int = 108_000,
    render_mode: str | None = None,
) -> gymnasium.Env:
    """One preprocessed Atari env (``uint8[stack, screen_size, screen_size]`` observations)."""
    import ale_py
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    if game not in GAMES:
        raise ValueError(f"unknown Atari game {game!r}; pufferbox registers {len(GAMES)} games as atari/<game>")
    gymnasium.register_envs(ale_py)
    env = gymnasium.make(
        gym_id(game),
        frameskip=1,
        repeat_action_probability=repeat_action_probability,
        full_action_space=full_action_space,
        max_num_frames_per_episode=max_episode_frames,
        render_mode=render_mode,
    )
    if env.unwrapped.get_action_meanings()[0] != "NOOP":  # Backgammon, Video Checkers: no no-op to start with
        noop_max = 0
    env = AtariPreprocessing(
        env,
        noop_max=noop_max,
        frame_skip=frame_skip,
        screen_size=screen_size,
        grayscale_obs=True,
    )
    if clip_rewards:  # inside EpisodicLife: it sees every step of the game, so its raw return is the whole game's
        env = ClipReward(env)
    if episodic_life:
        env = EpisodicLife(env)
    if fire_reset:
        env = FireReset(env)
    return FrameStackObservation(env, stack)


# Env kwargs under which the native block equals the Gymnasium path bit for bit (the conformance suite's
# native check runs with them): the no-op start is the one random draw the two make from different RNGs,
# and sticky actions draw from an ALE seed the block can pass on for only about half the env seeds.
NATIVE_CONFORMANCE_KWARGS = {"noop_max": 0, "repeat_action_probability": 0.0}


def make_native(num_envs: int, **kwargs: Any) -> Any:
    """The ``native=`` entry: a :class:`pufferbox_atari.native.AtariNative` block (ale-py imported on use)."""
    from pufferbox_atari.native import AtariNative

    return AtariNative(num_envs, **kwargs)


make_native.conformance_kwargs = NATIVE_CONFORMANCE_KWARGS  # type: ignore[attr-defined]


@hookimpl
def register_envs(register):
    for game in GAMES:
        register(
            EnvSpec(
                name=f"atari/{game}",
                build=EnvBuild(
                    binding=make_atari,
                    kwargs={"game": game},
                    native=make_native,
                    # the whole-game raw score (clip_rewards trains on signs): the unit papers and peers report
                    episode_metrics=("raw_episode_return",),
                ),
                training=TrainDefaults(config=DEFAULTS, gpu_config=GPU_CONFIG, policy="pufferbox_atari.policy:NatureCNN"),
                meta=EnvMeta(
                    description=f"Atari 2600 {game} (ale-py {gym_id(game)}): sticky actions, frame skip 4, "
                    "84x84 grayscale, 4-frame stack",
                    requires=REQUIRES,
                ),
                aliases=(game,),
            )
        )
