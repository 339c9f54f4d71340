"""Atari as a native block: ale-py's threaded C++ vector env (``AtariVectorEnv``) behind the block interface.

ale-py 0.12 steps ``num_envs`` emulators on a pool of C++ threads with the Gymnasium path's
preprocessing built in (frame skip with a max-pool over the last two frames, the palette's
grayscale, OpenCV's ``INTER_AREA`` resize, a frame stack), and releases the GIL while it does,
so one process uses every core without a process per env (:func:`default_threads`; ``num_threads``
sets it). The block keeps the Gymnasium path
(:func:`pufferbox_atari.plugin.make_atari`) where it can:

* **The same frames.** Frame skip, max-pool, grayscale and resize are the same computation on the
  same emulator: with the same ALE seed and actions, the frames are equal bit for bit (the
  conformance suite checks it, under :data:`pufferbox_atari.plugin.NATIVE_CONFORMANCE_KWARGS`).
  Gymnasium's frame stack pads a new episode with copies of its first frame where the C++ one pads
  with zeros; the block rewrites the padding (:meth:`AtariNative.pad_episode_starts`), also at a
  lost life under ``episodic_life``.
* **The same sticky actions.** ALE draws them from its own RNG; the block seeds it as ale-py's
  ``AtariEnv.reset(seed=s)`` does (:func:`ale_seed`), so both draw the same, except for seeds whose
  derived ALE seed is negative (about half): the vector env takes none, the block clears the sign bit.
* **Training aids.** ``clip_rewards`` and the whole game's ``raw_episode_return`` are the block's own
  (as :class:`~pufferbox_atari.plugin.ClipReward`). ``episodic_life``: a lost life ends the learner's
  episode and the game goes on (ale-py's ``life_loss_info``; its ``episodic_life`` restarts the game).

What differs, because the C++ env draws or acts on its own:

* **No-op starts**: the C++ env draws 0 to ``noop_max - 1`` no-ops from its own Mersenne Twister,
  Gymnasium 1 to ``noop_max`` from the env's numpy generator: the start frames differ per seed.
* **fire_reset**: the C++ env presses FIRE for one frame at a new game (then the no-ops), Gymnasium's
  path for one agent step after the no-ops; after a lost life the C++ env presses nothing (the agent's
  own FIRE launches Breakout's next ball) where :class:`~pufferbox_atari.plugin.EpisodicLife` takes a
  NOOP step and :class:`~pufferbox_atari.plugin.FireReset` a FIRE step before the next episode.
* **Truncation** comes after ``max_episode_frames`` frames counted from the end of the no-op start;
  ALE's own counter (the Gymnasium path's) includes the start's frames.

``native=False`` (``--set vec.native=false``) selects the Gymnasium path.

Example:
    >>> block = AtariNative(num_envs=8, game="breakout")  # doctest: +SKIP
    >>> block.vec_reset(seed=0)                          # doctest: +SKIP
    >>> block.vec_step(np.ones(8, np.int64))             # doctest: +SKIP
"""

from __future__ import annotations

import multiprocessing
import os

import gymnasium
import numpy as np

from pufferbox.api import NO_EPISODES, ActionSpec, Episodes, NativeBlock, ObservationSpec, episodes_ended
from pufferbox_atari.games import GAMES

SIGN_BIT_CLEARED = 0x7FFFFFFF


def ale_seed(seed: int) -> int:
    """The ALE ``random_seed`` ale-py's ``AtariEnv.reset(seed=seed)`` sets, sign bit cleared.

    >>> ale_seed(1)
    1731038949
    """
    derived = int(np.random.SeedSequence(seed).generate_state(2)[1])
    return derived & SIGN_BIT_CLEARED


def default_threads(num_envs: int) -> int:
    """One C++ thread per usable core (at most one per env); one in a child process, such as a
    ``multiprocessing`` backend worker: the backend already spreads its workers over the cores."""
    if multiprocessing.parent_process() is not None:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return min(num_envs, cores)


class AtariNative(NativeBlock):
    """``num_envs`` Atari games of one ROM, stepped by ale-py's C++ threads (one buffer row each)."""

    writes_final_observations = True

    def __init__(
        self,
        num_envs: int,
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
        num_threads: int = 0,
    ):
        from ale_py.vector_env import AtariVectorEnv

        if game not in GAMES:
            raise ValueError(f"unknown Atari game {game!r}; pufferbox registers {len(GAMES)} games as atari/<game>")
        if render_mode is not None:
            raise ValueError("atari native: render_mode must be None (render with native=False)")
        if num_threads < 0:
            raise ValueError(f"atari native: num_threads must be >= 0 (0: default_threads), got {num_threads}")
        self.num_threads = num_threads or default_threads(num_envs)
        self.vec = AtariVectorEnv(
            game,
            num_envs,
            num_threads=self.num_threads,
            max_num_frames_per_episode=max_episode_frames,
            repeat_action_probability=repeat_action_probability,
            full_action_space=full_action_space,
            autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP,
            img_height=screen_size,
            img_width=screen_size,
            stack_num=stack,
            frameskip=frame_skip,
            maxpool=frame_skip > 1,  # as AtariPreprocessing: no pooling without skipped frames
            noop_max=noop_max,
            life_loss_info=episodic_life,
            reward_clipping=False,  # clipped here, so the raw score stays known
            use_fire_reset=fire_reset,
        )
        self.obs_spec = ObservationSpec(gymnasium.spaces.Box(0, 255, (stack, screen_size, screen_size), np.uint8))
        self.act_spec = ActionSpec(self.vec.single_action_space)
        self.num_actions = int(self.vec.single_action_space.n)
        self.frame_shape = (stack, screen_size, screen_size)
        self.stack, self.clip_rewards, self.episodic_life = stack, clip_rewards, episodic_life
        super().__init__(num_envs, name=f"atari/{game}")
        self.episode_steps = np.zeros(num_envs, np.int64)  # learner steps since the episode's first frame
        self.returns = np.zeros(num_envs, np.float64)
        self.raw_returns = np.zeros(num_envs, np.float64)  # the whole game's unclipped score
        self.lives = np.zeros(num_envs, np.int32)
        self.started = self.checked = False

    def pad_episode_starts(self, frames: np.ndarray, steps: np.ndarray) -> None:
        """Frames from before each row's episode replaced by its first frame, as Gymnasium's frame stack
        pads (``steps``: each row's steps since that frame; the C++ stack holds zeros or the last life's)."""
        for k in range(self.stack - 1):
            rows = np.flatnonzero(steps == k)
            if len(rows):
                first = self.stack - 1 - k
                frames[rows, :first] = frames[rows, first : first + 1]

    def frames(self, flat: np.ndarray) -> np.ndarray:
        return flat.reshape(len(flat), *self.frame_shape)

    def vec_reset(self, seed: int | None = None) -> Episodes:
        n = self.num_envs
        seeds = np.full(n, -1) if seed is None else np.array([ale_seed(seed + i) for i in range(n)])
        obs, info = self.vec.reset(seed=seeds)
        self.lives = info["lives"]
        self.episode_steps[:] = 0
        self.returns[:] = self.raw_returns[:] = 0.0
        b = self.buffers
        frames = self.frames(b.observations)
        frames[...] = obs
        self.pad_episode_starts(frames, self.episode_steps)
        b.rewards[:] = 0.0
        b.terminals[:] = False
        b.truncations[:] = False
        b.masks[:] = True
        self.started = True
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        if not self.started:
            raise RuntimeError(f"{self.name} native: step() before reset()")
        actions = np.asarray(actions).reshape(-1)
        if not self.checked:
            self.check_discrete_actions(actions, self.num_actions)
            self.checked = True
        obs, raw, terminated, truncated, info = self.vec.step(actions.astype(np.int64, copy=False))
        b = self.buffers
        rewards = np.sign(raw) if self.clip_rewards else raw
        b.rewards[:] = rewards
        b.terminals[:] = terminated
        b.truncations[:] = truncated
        self.returns += rewards
        self.raw_returns += raw
        self.episode_steps += 1
        done = terminated | truncated
        frames = self.frames(b.observations)
        frames[...] = obs
        episodes = NO_EPISODES
        if done.any():
            episodes = self.end_episodes(done, info["lives"], info.get("final_obs"))
        self.lives = info["lives"]
        self.pad_episode_starts(frames, self.episode_steps)
        return episodes

    def end_episodes(self, done: np.ndarray, lives: np.ndarray, final_obs: np.ndarray | None) -> Episodes:
        """The finished episodes; their rows start over (the final observations of truncated ones kept)."""
        b = self.buffers
        # A lost life leaves the game running (fewer lives); a game the C++ env restarted has all of them again.
        life_lost = b.terminals & (lives < self.lives) if self.episodic_life else np.zeros_like(done)
        game_over = done & ~life_lost
        cut = b.truncations & ~b.terminals
        if cut.any() and final_obs is not None:
            final = self.frames(final_obs[cut].copy())
            self.pad_episode_starts(final, self.episode_steps[cut])
            self.frames(b.final_observations)[cut] = final
        raw = np.where(game_over, self.raw_returns, np.nan) if self.clip_rewards else np.full(self.num_envs, np.nan)
        episodes = episodes_ended(done, self.returns, self.episode_steps, {"raw_episode_return": raw})
        self.returns[done] = 0.0
        self.raw_returns[game_over] = 0.0
        self.episode_steps[done] = 0
        return episodes

    def close(self) -> None:
        vec, self.vec = getattr(self, "vec", None), None
        if vec is not None:
            vec.close()
