"""NetHack as a native block: ``num_envs`` nle cores stepped directly, bit for bit with the gym env.

nle's C core (``_pynethack.step``) is about half of a ``NetHackScore-v0`` step; the rest is
Python around it: a copy of five observation arrays for the reward, an enum, an info dict,
a method call per layer of four wrappers. This block keeps one plugin env per slot (built by
:func:`pufferbox_nethack.plugin.make_nethack`, so options, character and seeding are the
plugin's) but steps its core itself and repeats exactly what the env's ``step`` computes:

* nle's ``NLE.step``: decline prompts (``_perform_known_steps``, called only when a prompt
  flag is up, which is when it would act), count the step, abort at nle's own
  ``max_episode_steps`` (5000: ``truncated`` from the count *before* the step, the abort
  status after it), quit the game when a task ends it (``_quit_game``);
* the task's reward from scalars kept since the last step instead of a copied observation:
  score (``NetHackScore``), staircase/oracle success (``_is_episode_end``, called as is),
  gold, hunger (``NetHackEat``) and explored glyphs (``NetHackScout``), plus the time penalty
  of every mode, with its frozen-step counter kept across episodes as nle keeps it;
* Gymnasium's ``TimeLimit`` (the plugin's ``max_episode_steps``) and the emulator's episode
  finished episodes: returns, lengths and the metrics ``end_status``, ``is_ascended``.

Resets go through the whole wrapper stack (``env.reset(seed=seed + i)``, then unseeded
auto-resets), as the emulator does, so games start identically. nle writes the observation
straight into the block's rows (the plugin's ``pufferbox_bind_observation_buffers``); a key
it cannot bind (rows re-pointed after the first reset) is copied after each step.

``nethack/challenge`` has no native block: its games cannot be seeded, so no check can show
it equal to the gym env.

Example:
    >>> block = NetHackNative(num_envs=2)                 # doctest: +SKIP
    >>> block.vec_reset(seed=0)                           # doctest: +SKIP
    []
    >>> infos = block.vec_step(np.array([1, 2]))          # doctest: +SKIP
    >>> block.buffers.observations.shape                  # doctest: +SKIP
    (2, 3792)
    >>> import pufferbox.vector                           # the usual way: the default for the native tasks
    >>> venv = pufferbox.vector.make("nethack", num_envs=4)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from pufferbox.api import NO_EPISODES, ActionSpec, Buffers, Episodes, NativeBlock, ObservationSpec
from pufferbox_nethack.env import NATIVE_TASKS, OBSERVATION_KEYS, make_nethack

# Task -> nle class the block reproduces; checked with ``type(env.unwrapped) is cls`` so a
# subclass with other rules (or another nle version's) is refused rather than mis-simulated.
TASK_CLASSES = {
    "score": "NetHackScore",
    "staircase": "NetHackStaircase",
    "oracle": "NetHackOracle",
    "gold": "NetHackGold",
    "eat": "NetHackEat",
    "scout": "NetHackScout",
}
# Tasks whose end is decided by ``_is_episode_end`` beyond nle's abort; their reward is success + penalty.
SUCCESS_TASKS = ("staircase", "oracle")
ABORTED, RUNNING, DEATH = -1, 0, 1
SUCCESS = 2  # StepStatus.TASK_SUCCESSFUL of the staircase tasks
HUNGER = 7  # internal[7]: u.uhunger, NetHackEat's reward
# nle's blstats indices and glyph offset (nle 1.3.0), checked against nle when a block is built.
BL_SCORE, BL_GOLD, BL_TIME, BL_DNUM, BL_DLEVEL = 9, 13, 20, 23, 24
GLYPH_CMAP_OFF = 2359
NLE_CONSTANTS = {
    "NLE_BL_SCORE": BL_SCORE,
    "NLE_BL_GOLD": BL_GOLD,
    "NLE_BL_TIME": BL_TIME,
    "NLE_BL_DNUM": BL_DNUM,
    "NLE_BL_DLEVEL": BL_DLEVEL,
    "GLYPH_CMAP_OFF": GLYPH_CMAP_OFF,
}
XWAITFORSPACE, IN_YN_FUNCTION, IN_GETLIN = 3, 1, 2  # internal[...]: the prompts _perform_known_steps answers


class NetHackGame:
    """One plugin env whose core is stepped directly; ``step`` is ``env.step`` without the Python around it."""

    __slots__ = (
        "actions",
        "allow_all_modes",
        "blstats",
        "copies",
        "core",
        "env",
        "episode_return",
        "frozen",
        "glyphs",
        "gold",
        "hunger",
        "internal",
        "nle_limit",
        "penalty_mode",
        "penalty_step",
        "penalty_time",
        "program_state",
        "pynethack",
        "score",
        "steps",
        "task",
        "time",
        "time_limit",
        "unwrapped",
    )

    def __init__(self, task: str, observation_keys: tuple[str, ...], max_episode_steps: int | None, **kwargs: Any):
        from nle.env import tasks

        self.env = make_nethack(task, observation_keys, max_episode_steps=max_episode_steps, **kwargs)
        self.unwrapped = self.env.unwrapped
        expected = getattr(tasks, TASK_CLASSES[task])
        if type(self.unwrapped) is not expected:
            raise TypeError(
                f"nethack native: task {task!r} built {type(self.unwrapped).__name__}, "
                f"the block reproduces {expected.__name__} only"
            )
        self.core = self.unwrapped.nethack
        self.pynethack = self.core._pynethack
        self.task = task
        self.actions = tuple(int(a) for a in self.unwrapped.actions)
        self.time_limit = time_limit_of(self.env)
        self.nle_limit = self.unwrapped._max_episode_steps
        self.allow_all_modes = self.unwrapped._allow_all_modes
        self.penalty_mode = self.unwrapped.penalty_mode
        self.penalty_step = self.unwrapped.penalty_step
        self.penalty_time = self.unwrapped.penalty_time
        self.frozen = 0  # nle's _frozen_steps: set at construction only, so it spans episodes
        self.copies: list[tuple[np.ndarray, np.ndarray]] = []
        self.bind_buffers()
        self.steps = 0
        self.episode_return = 0.0

    def bind_buffers(self, views: dict[tuple, np.ndarray] | None = None) -> None:
        """Let nle write into ``views`` (this env's row), copying what it cannot write there."""
        keys = self.env.pufferbox_bind_observation_buffers(views) if views else ()
        buffers = self.core._obs_buffers
        self.copies = [(view, buffers[path[0]]) for path, view in (views or {}).items() if path[0] not in keys]
        # nle's own arrays (bound or not): where every step's values are read from.
        self.blstats, self.internal = buffers["blstats"], buffers["internal"]
        self.program_state, self.glyphs = buffers["program_state"], buffers["glyphs"]

    def read_scalars(self) -> None:
        """The values the next step's reward compares against (nle copies the whole observation for them)."""
        blstats = self.blstats
        self.score, self.time, self.gold = blstats.item(BL_SCORE), blstats.item(BL_TIME), blstats.item(BL_GOLD)
        self.hunger = self.internal.item(HUNGER)

    def write_copies(self) -> None:
        for view, source in self.copies:
            view[...] = source

    def reset(self, seed: int | None) -> None:
        if seed is None:
            self.env.reset()
        else:
            self.env.reset(seed=seed)
        self.steps = 0  # nle's _steps and TimeLimit's _elapsed_steps alike
        self.episode_return = 0.0
        self.read_scalars()
        if self.copies:
            self.write_copies()

    def time_penalty(self, new_time: int) -> float:
        """``NetHackScore._get_time_penalty``, with the old turn counter kept instead of copied."""
        if new_time == self.time:
            self.frozen += 1
        else:
            self.frozen = 0
        penalty = 0
        mode = self.penalty_mode
        if mode == "constant":
            if self.frozen > 0:
                penalty += self.penalty_step
        elif mode == "exp":
            penalty += 2**self.frozen * self.penalty_step
        elif mode == "square":
            penalty += self.frozen**2 * self.penalty_step
        elif mode == "linear":
            penalty += self.frozen * self.penalty_step
        elif mode == "always":
            penalty += self.penalty_step
        else:
            raise ValueError(f"Unknown penalty_mode '{mode}'")
        penalty += (new_time - self.time) * self.penalty_time
        return penalty

    def reward(self, status: int) -> float:
        """The task's ``_reward_fn`` on the step just taken (``status``: its end status as an int)."""
        blstats, task = self.blstats, self.task
        new_time = blstats.item(BL_TIME)
        if task == "score":
            diff = blstats.item(BL_SCORE) - self.score if self.pynethack.in_normal_game() else 0.0
            return float(diff + self.time_penalty(new_time))
        if task in SUCCESS_TASKS:
            return float((1 if status == SUCCESS else 0) + self.time_penalty(new_time))
        # gold, eat, scout: nothing, not even the time penalty, outside a normal game
        if not self.pynethack.in_normal_game():
            return 0.0
        if task == "gold":
            return float(blstats.item(BL_GOLD) - self.gold + self.time_penalty(new_time))
        if task == "eat":
            return float(max(0, self.internal.item(HUNGER) - self.hunger) + self.time_penalty(new_time))
        explored_by_level = self.unwrapped.dungeon_explored  # scout; emptied by nle's reset
        level = (blstats.item(BL_DNUM), blstats.item(BL_DLEVEL))
        explored = int(np.sum(self.glyphs != GLYPH_CMAP_OFF))
        diff = explored - explored_by_level.get(level, 0)
        explored_by_level[level] = explored
        return float(diff + self.time_penalty(new_time))

    def step(self, action: int) -> tuple[float, bool, bool, int]:
        """``(reward, terminated, truncated, end status)`` of ``env.step(action)``."""
        pynethack = self.pynethack
        pynethack.step(self.actions[action])
        done = pynethack.done()
        # nle tests the count before this step (so never true in practice: it quits the game at the limit)
        truncated = self.steps >= self.nle_limit
        internal = self.internal
        if (
            not done
            and (internal.item(XWAITFORSPACE) or internal.item(IN_YN_FUNCTION) or internal.item(IN_GETLIN))
            and (not self.allow_all_modes or self.program_state.item(0) == 1)
        ):
            _, done = self.unwrapped._perform_known_steps(self.core._obs, done, exceptions=True)
        self.steps += 1
        if self.steps >= self.nle_limit:
            end = ABORTED
        elif self.task in SUCCESS_TASKS:
            end = int(self.unwrapped._is_episode_end(self.core._obs))
        else:
            end = RUNNING
        status = DEATH if done else end
        reward = self.reward(status)
        if status and not done:
            self.unwrapped._quit_game(self.core._obs, done)
            done = True
        if self.time_limit is not None and self.steps >= self.time_limit:
            truncated = True
        if not done:  # the next reward's reference point; a finished game is reset first
            self.read_scalars()
        return reward, done, truncated, status

    def end_info(self, status: int) -> dict[str, Any]:
        """nle's ``_get_information`` for the step that ended the game."""
        from nle import nethack

        return {
            "end_status": self.unwrapped.StepStatus(status),
            "is_ascended": self.pynethack.how_done() == nethack.ASCENDED,
        }


def time_limit_of(env: gymnasium.Env) -> int | None:
    """The ``TimeLimit`` wrapper's limit, None without one (``max_episode_steps=None``)."""
    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env, gymnasium.wrappers.TimeLimit):
            return env._max_episode_steps
        env = env.env
    return None


class NetHackNative(NativeBlock):
    """``num_envs`` NLE task envs (one buffer row each) stepped through their C cores."""

    writes_final_observations = True

    def __init__(
        self,
        num_envs: int,
        task: str = "score",
        observation_keys: tuple[str, ...] = OBSERVATION_KEYS,
        max_episode_steps: int | None = 5000,
        render_mode: str | None = None,
        **kwargs: Any,
    ):
        from nle import nethack

        if task not in NATIVE_TASKS:
            raise ValueError(
                f"nethack native: no native block for task {task!r} (native tasks: "
                f"{', '.join(NATIVE_TASKS)}); use native=False"
            )
        if render_mode is not None:
            raise ValueError("nethack native: render_mode must be None (render with native=False)")
        changed = {name: getattr(nethack, name) for name, value in NLE_CONSTANTS.items() if getattr(nethack, name) != value}
        if changed:
            raise RuntimeError(
                f"nethack native: this nle has {changed}; the block was written for nle 1.3.0's "
                f"{ {name: NLE_CONSTANTS[name] for name in changed} }"
            )
        self.games: list[NetHackGame] = []
        try:
            for _ in range(num_envs):
                self.games.append(NetHackGame(task, tuple(observation_keys), max_episode_steps, **kwargs))
        except BaseException:
            self.close()  # each game holds a NetHack process image and a temp dir
            raise
        env = self.games[0].env
        self.obs_spec, self.act_spec = ObservationSpec(env.observation_space), ActionSpec(env.action_space)
        self.num_actions = int(env.action_space.n)
        super().__init__(num_envs, name=f"nethack/{task}")
        self.checked = False
        self.started = False

    def set_buffers(self, buffers: Buffers) -> None:
        super().set_buffers(buffers)
        leaf_views = self.obs_spec.leaf_views(buffers.observations)
        for i, game in enumerate(self.games):
            # The emulator's per-row views: a 1-row slice reshaped to the leaf, C-contiguous in the record.
            game.bind_buffers(
                {leaf.path: view[i : i + 1].reshape(leaf.shape) for leaf, view in zip(self.obs_spec.leaves, leaf_views)}
            )

    def vec_reset(self, seed: int | None = None) -> Episodes:
        for i, game in enumerate(self.games):
            game.reset(None if seed is None else seed + i)
        b = self.buffers
        b.rewards[:] = 0.0
        b.terminals[:] = False
        b.truncations[:] = False
        b.masks[:] = True
        self.started = True
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        if not self.started:
            raise RuntimeError(f"{self.name} native: step() before reset()")
        actions = np.asarray(actions)
        if not self.checked:
            self.check_discrete_actions(actions, self.num_actions)
            self.checked = True
        b = self.buffers
        rewards, terminals, truncations = b.rewards, b.terminals, b.truncations
        ended: list[Episodes] = []
        for i, (game, action) in enumerate(zip(self.games, actions.reshape(-1).tolist())):
            reward, terminated, truncated, status = game.step(action)
            rewards[i] = reward
            terminals[i] = terminated
            truncations[i] = truncated
            game.episode_return += reward
            if terminated or truncated:
                ended.append(Episodes.one(i, game.episode_return, game.steps, game.end_info(status)))
                if truncated and not terminated:  # nle wrote the last obs into the row: keep it past the reset
                    if game.copies:
                        game.write_copies()
                    b.final_observations[i] = b.observations[i]
                game.reset(None)
            elif game.copies:
                game.write_copies()
        return Episodes.concat(ended) if ended else NO_EPISODES

    def close(self) -> None:
        for game in self.games:
            game.env.close()
