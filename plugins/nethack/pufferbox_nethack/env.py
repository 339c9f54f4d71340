"""The NLE env as pufferbox shows it: ``make_nethack(task)``, a :class:`NetHackObservation` over nle's gym env.

The agent sees a Dict of ``glyphs`` (int16[21, 79], the map), ``blstats`` (int64[27], the
bottom-line stats) and ``message`` (uint8[256], the top line); pufferbox flattens it to
one byte row and :class:`pufferbox_nethack.policy.NetHackEncoder` unflattens it again.
``render_mode="ansi"`` returns the 24×80 terminal with ANSI colours (what
``pufferbox eval --render`` prints); the terminal arrays are requested from NLE for that
only and are not part of the observation.

Under pufferbox's emulator nle writes ``keys`` straight into the backend's observation row
(:meth:`NetHackObservation.pufferbox_bind_observation_buffers`), so stepping copies no
observation; the raw env alone behaves like plain nle (arrays reused across steps).

Seeding: ``reset(seed=s)`` seeds NetHack's two RNGs, and the following unseeded resets
seed them from children of ``SeedSequence(s)``, so a seed fixes every later game as well,
as in Gymnasium (nle alone draws fresh entropy for every game after the seeded one).

nle is imported inside :func:`make_nethack` only: without it the envs are listed as
unavailable with the install command instead of breaking the plugin. The native block
(:mod:`pufferbox_nethack.native`) and the plugin (:mod:`pufferbox_nethack.plugin`) both build on this module.

Example:
    >>> env = make_nethack("score", render_mode="ansi")  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                    # doctest: +SKIP
    >>> print(env.render())                              # doctest: +SKIP
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium
import numpy as np

TASKS = {
    "score": "NetHackScore-v0",
    "challenge": "NetHackChallenge-v0",
    "staircase": "NetHackStaircase-v0",
    "oracle": "NetHackOracle-v0",
    "gold": "NetHackGold-v0",
    "eat": "NetHackEat-v0",
    "scout": "NetHackScout-v0",
}
# Tasks with a native block (pufferbox_nethack.native). Not challenge: its games cannot be
# seeded, so nothing could show the block equal to the gym env there.
NATIVE_TASKS = ("score", "staircase", "oracle", "gold", "eat", "scout")
OBSERVATION_KEYS = ("glyphs", "blstats", "message")
# NetHack's end-of-game code sets these to SIG_IGN in the C library, behind Python's back: the
# process (a trainer) and every subprocess it starts would go on ignoring hang-ups.
SIGNALS_NETHACK_IGNORES = ("SIGHUP", "SIGXCPU")


def restore_signal_dispositions() -> None:
    """Re-applies Python's own disposition of the signals a finished NetHack game ignores.

    Only the main thread may set signal handlers; elsewhere (a Ray pod's thread) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for name in SIGNALS_NETHACK_IGNORES:
        sig = getattr(signal, name, None)
        handler = signal.getsignal(sig) if sig is not None else None
        if handler is not None:
            signal.signal(sig, handler)


TTY_KEYS = ("tty_chars", "tty_colors", "tty_cursor")


class NetHackObservation(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """Shows the agent only ``keys``; keeps the terminal arrays aside for ANSI rendering."""

    def __init__(self, env: gymnasium.Env, keys: tuple[str, ...], render_mode: str | None, seedable: bool = True):
        gymnasium.utils.RecordConstructorArgs.__init__(self, keys=keys, render_mode=render_mode, seedable=seedable)
        gymnasium.Wrapper.__init__(self, env)
        self.keys = keys
        self.observation_space = gymnasium.spaces.Dict({k: env.observation_space[k] for k in keys})
        self.metadata = {**env.metadata, "render_modes": ["ansi"]}
        self.ansi = render_mode == "ansi"
        self.seedable = seedable
        self.episode_seeds: np.random.SeedSequence | None = None  # set by a seeded reset
        self.last: dict | None = None

    @property
    def render_mode(self) -> str | None:
        return "ansi" if self.ansi else None

    def select(self, obs: dict) -> dict:
        if self.ansi:
            self.last = {k: obs[k] for k in TTY_KEYS}
        return {k: obs[k] for k in self.keys}

    def pufferbox_bind_observation_buffers(self, views: Mapping[tuple, np.ndarray]) -> tuple[str, ...]:
        """Make nle write the agent-visible ``keys`` into ``views`` (pufferbox's row) in place.

        ``views`` maps a leaf path (``("glyphs",)``) to a C-contiguous array in the row;
        :class:`pufferbox.emulation.GymnasiumEmulator` calls this on every ``set_buffers``
        and then skips copying any leaf whose value *is* its view. nle's C core writes
        every step into the arrays given to ``_pynethack.set_buffers``; we swap those for
        the views (nle's internal keys, ``program_state``, ``internal``, the terminal, keep
        their own arrays) and rebuild the tuple nle's ``step``/``reset`` return.

        nle accepts new buffers only before its first reset (backends assign rows before
        that). Later calls change nothing: nle keeps writing the arrays bound before (kept
        alive here) and the emulator copies from them. Returns the keys now written in
        place: none after the first reset, when nle copies its observations anyway, or for
        a view that does not fit.

        Example:
            >>> from pufferbox.emulation import emulate                      # doctest: +SKIP
            >>> env = emulate(make_nethack("score"))  # binds its own 1-row buffer  # doctest: +SKIP
            >>> env.env.pufferbox_bind_observation_buffers(dict(env.obs_targets))  # doctest: +SKIP
            ('glyphs', 'blstats', 'message')
        """
        core = getattr(self.env.unwrapped, "nethack", None)
        old_buffers = getattr(core, "_obs_buffers", None)
        if old_buffers is None or getattr(core, "_pynethack", None) is None or getattr(core, "_copy", True):
            return ()
        buffers, bound = dict(old_buffers), []
        for key in self.keys:
            view, old = views.get((key,)), old_buffers.get(key)
            if (
                view is None
                or old is None
                or view.shape != old.shape
                or view.dtype != old.dtype
                or not view.flags.c_contiguous
                or not view.flags.writeable
            ):
                continue
            buffers[key] = view
            bound.append(key)
        try:
            core._pynethack.set_buffers(**buffers)  # checks dtype, shape and strides; keeps raw pointers
        except RuntimeError as exc:
            if "after reset" not in str(exc):
                raise
            return ()
        core._obs_buffers = buffers  # also keeps the views (and the row they point into) alive
        core._obs = tuple(buffers.values())  # what nle's step/reset return
        return tuple(bound)

    def reset(self, **kwargs: Any) -> tuple[dict, dict]:
        if not kwargs.get("options"):  # nle 1.3.0 raises KeyError on options={} (it reads options["wizkit_items"])
            kwargs.pop("options", None)
        restore_signal_dispositions()  # the previous game may have ended
        if self.seedable:
            # nle ignores reset(seed=...) for the game itself: its two RNGs are set by seed(), and
            # only for the next game (later ones draw fresh entropy). As Gymnasium's envs do, a seed
            # fixes the games after it too: unseeded resets take the next child of its SeedSequence.
            if kwargs.get("seed") is not None:
                self.episode_seeds = np.random.SeedSequence(kwargs["seed"])
                state = self.episode_seeds.generate_state(2, np.uint64)
            elif self.episode_seeds is not None:
                state = self.episode_seeds.spawn(1)[0].generate_state(2, np.uint64)
            else:
                state = None
            if state is not None:
                core, disp = state.tolist()
                self.env.unwrapped.seed(core=core, disp=disp, reseed=False)
        obs, info = self.env.reset(**kwargs)
        return self.select(obs), info

    def step(self, action: Any) -> tuple[dict, SupportsFloat, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self.select(obs), reward, terminated, truncated, info

    def close(self) -> None:
        super().close()
        restore_signal_dispositions()

    def render(self) -> str | None:
        """The terminal as an ANSI-coloured string (``render_mode="ansi"`` only)."""
        if not self.ansi or self.last is None:
            return None
        from nle import nethack

        return nethack.tty_render(self.last["tty_chars"], self.last["tty_colors"], self.last["tty_cursor"])


def make_nethack(
    task: str = "score",
    observation_keys: tuple[str, ...] = OBSERVATION_KEYS,
    max_episode_steps: int = 5000,
    render_mode: str | None = None,
    **kwargs: Any,
) -> gymnasium.Env:
    """One NLE env of ``task`` (a key of :data:`TASKS`) showing ``observation_keys``."""
    import nle  # noqa: F401 - registers the NetHack*-v0 ids; heavy and optional until used

    if task not in TASKS:
        raise ValueError(f"unknown NetHack task {task!r}; choose one of {', '.join(TASKS)}")
    if render_mode not in (None, "ansi"):
        raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
    keys = tuple(observation_keys)
    requested = keys + tuple(k for k in TTY_KEYS if k not in keys) if render_mode == "ansi" else keys
    env = gymnasium.make(
        TASKS[task], observation_keys=requested, max_episode_steps=max_episode_steps, render_mode=None, **kwargs
    )
    # NetHackChallenge refuses seed() by design (the NeurIPS 2021 challenge rules): its episodes are not reproducible.
    return NetHackObservation(env, keys, render_mode, seedable=task != "challenge")
