"""Episode statistics of a kernel env, accumulated on the device and read only when asked.

The CPU backends report finished episodes (an :class:`~pufferbox.episodes.Episodes`) with the
step that ends them. Doing that per step on a GPU would cost a device→host copy (and a
sync) every step, so instead the core kernel ``pb_track_episodes`` runs after each step's
kernels and keeps, per env, the running return and length, a count of finished episodes and a
ring of the last ``slots`` finished ``(return, length)`` pairs, all in device memory.
:meth:`EpisodeTracker.collect` reads the count and the ring (two copies, however many steps
passed) and returns every episode finished since the previous call as one ``Episodes``, the
CPU backends' form. Call it once per rollout; an env finishing more than ``slots`` episodes
between calls loses the oldest ones (counted in :attr:`EpisodeTracker.dropped`).

``episode_return`` is the mean over agents of each agent's summed rewards (what
:class:`~pufferbox.emulation.PettingZooEmulator` reports; the plain return for one agent),
summed in float32 in the kernel (the CPU emulators sum in float64).

Example:
    >>> from pufferbox.cuda.runtime import KernelEnv                       # doctest: +SKIP
    >>> env = KernelEnv(impl, num_envs=64, device="host")                  # doctest: +SKIP
    >>> for _ in range(200): env.step()                                    # doctest: +SKIP
    >>> env.episodes.collect().select(slice(0, 1))                         # doctest: +SKIP
    Episodes(env_ids=[0], returns=[23.0], lengths=[23])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pufferbox.episodes import Episodes

__all__ = ["EpisodeTracker", "ReferenceEpisodes", "DEFAULT_SLOTS"]

DEFAULT_SLOTS = 32
KERNEL = "pb_track_episodes"


class EpisodeTracker:
    """Device-side episode accumulators of one kernel env and their host-side read cursor."""

    def __init__(
        self,
        data: Any,
        functions: Any,
        num_envs: int,
        num_agents: int,
        geometry: tuple[tuple[int, int], int],
        slots: int = DEFAULT_SLOTS,
    ):
        """``geometry`` is the env-per-thread ``(grid, block)`` (:func:`~pufferbox.cuda.runtime.env_geometry`)."""
        if slots < 1:
            raise ValueError(f"episode slots must be >= 1 (finished episodes kept per env between reads), got {slots}")
        self.data, self.functions = data, functions
        self.num_envs, self.num_agents, self.slots = num_envs, num_agents, slots
        for name, array in (
            ("episodes/return", np.zeros(num_envs, np.float32)),
            ("episodes/length", np.zeros(num_envs, np.int32)),
            ("episodes/log", np.zeros((num_envs, slots, 2), np.float32)),
            ("episodes/finished", np.zeros(num_envs, np.uint32)),
        ):
            data.push(name, array)
        self.reported = np.zeros(num_envs, np.int64)  # finished episodes already returned by collect()
        self.dropped = 0
        self.grid, self.block = geometry

    def launch(self, rewards: np.uintp, done: np.uintp) -> None:
        """Account for the step whose ``rewards`` and ``done`` are in device memory now."""
        d = self.data
        self.functions.launch(
            KERNEL,
            self.grid,
            self.block,
            [
                rewards,
                done,
                d.pointer("episodes/return"),
                d.pointer("episodes/length"),
                d.pointer("episodes/log"),
                d.pointer("episodes/finished"),
                np.int32(self.num_envs),
                np.int32(self.num_agents),
                np.int32(self.slots),
            ],
        )

    def collect(self) -> Episodes:
        """The episodes finished since the last call, oldest first per env (two device→host copies)."""
        finished = self.data.pull("episodes/finished").astype(np.int64)
        new = finished - self.reported
        if not new.any():
            return Episodes.empty()
        log = self.data.pull("episodes/log")
        kept = np.minimum(new, self.slots)
        self.dropped += int((new - kept).sum())
        envs = np.repeat(np.arange(len(new)), kept)
        # The k-th kept episode of env e sits in slot (finished[e] - kept[e] + k) % slots of its ring.
        offsets = np.arange(len(envs)) - np.repeat(np.cumsum(kept) - kept, kept)
        slots = (np.repeat(finished - kept, kept) + offsets) % self.slots
        entries = log[envs, slots]
        self.reported = finished
        return Episodes.from_arrays(envs, entries[:, 0], entries[:, 1])


class ReferenceEpisodes:
    """``pb_track_episodes`` in numpy (same float32 order), fed the CPU reference's arrays each step.

    Example:
        >>> eps = ReferenceEpisodes(num_envs=2, num_agents=1)
        >>> len(eps.update(np.ones((2, 1), np.float32), np.array([0, 0])))
        0
        >>> eps.update(np.ones((2, 1), np.float32), np.array([0, 1]))
        Episodes(env_ids=[1], returns=[2.0], lengths=[2])
    """

    def __init__(self, num_envs: int, num_agents: int):
        self.num_agents = num_agents
        self.running_return = np.zeros(num_envs, np.float32)
        self.running_length = np.zeros(num_envs, np.int64)

    def update(self, rewards: np.ndarray, done: np.ndarray) -> Episodes:
        """The episodes that ``done`` (per env, non-zero = ended this step) finishes."""
        step_total = np.zeros(len(self.running_return), np.float32)
        for agent in range(self.num_agents):  # sequential, like the kernel's loop
            step_total = step_total + rewards[:, agent]
        episode_return = self.running_return + step_total
        length = self.running_length + 1
        ended = np.asarray(done).reshape(-1) != 0
        mean = episode_return / np.float32(self.num_agents)
        envs = np.flatnonzero(ended)
        infos = Episodes.from_arrays(envs, mean[envs], length[envs])
        self.running_return = np.where(ended, np.float32(0.0), episode_return).astype(np.float32)
        self.running_length = np.where(ended, 0, length)
        return infos
