"""The CPU reference of a kernel env: numpy arrays and phases that mirror the kernels one to one.

A subclass declares its state arrays, fills them in :meth:`init_state`, implements one method
per step kernel (named like the kernel) and :meth:`observe`. Arrays are ``(num_envs, per_env)``
in the kernel's memory layout, so the GPU data manager pushes them as they are and the
consistency checker compares them element by element. Float math is float32 in the kernel's
operation order (no fused multiply-add on either side).

Example:
    >>> from pufferbox_warp.cartpole import CartPoleReference   # doctest: +SKIP
    >>> ref = CartPoleReference(num_envs=4); ref.reset(seed=0)  # doctest: +SKIP
    >>> ref.step(np.zeros((4, 1), np.int32))                    # doctest: +SKIP
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from pufferbox.cuda.spec import STANDARD_ARRAYS, STANDARD_DTYPES

__all__ = ["BatchedReference"]


class BatchedReference:
    """Base of every CPU reference; see the module docstring for the contract."""

    state_arrays: ClassVar[tuple[str, ...]] = ()
    # Restored from the first reset's copy when an env is done; an instance may extend it in
    # ``__init__`` (state that only some configurations keep), before :meth:`reset`.
    reset_arrays: tuple[str, ...] = ()
    # State arrays the consistency checker does not compare: kernel working memory whose contents
    # may differ from the reference's without changing any result (e.g. filled in atomic order).
    scratch_arrays: ClassVar[tuple[str, ...]] = ()
    step_kernels: ClassVar[tuple[str, ...]] = ()
    observe_kernel: ClassVar[str] = "observe"
    # Writes final_observations instead of a second observe (see CudaImplementation.final_observe_kernel).
    final_observe_kernel: ClassVar[str | None] = None
    # Step kernels that start new episodes in place (skipped by ``step(autoreset=False)``).
    autoreset_kernels: ClassVar[tuple[str, ...]] = ()

    num_envs: int
    num_agents: int
    obs_dim: int
    num_actions: int
    # Each agent's discrete actions per step and their numbers of choices (a MultiDiscrete space); empty:
    # one action of ``num_actions`` choices. ``actions`` holds ``num_agents * action_slots`` words per env.
    action_sizes: tuple[int, ...] = ()
    # Continuous actions (every action size 0): the word that stands for 1.0, each word a fixed point value
    # in [-action_one, action_one] (pufferbox.native.actions; the backend quantizes a policy's floats with
    # pufferbox.cuda.actions); 0: the words are discrete choices.
    action_one: int = 0

    @property
    def action_slots(self) -> int:
        return max(1, len(self.action_sizes))

    def random_actions(self, rng: np.random.Generator) -> np.ndarray:
        """Uniformly random actions, ``(num_envs, num_agents * action_slots)`` int32 (the checks' input).

        Continuous words are uniform in [-action_one, action_one], one in eight set to an end or the middle
        of that range (-action_one, 0, action_one), which a uniform draw would almost never reach."""
        if self.action_one:
            size = (self.num_envs, self.num_agents * self.action_slots)
            words = rng.integers(-self.action_one, self.action_one + 1, size, dtype=np.int32)
            edges = rng.random(size) < 0.125
            words[edges] = rng.choice(np.array([-1, 0, 1], np.int32) * self.action_one, int(edges.sum()))
            return words
        if not self.action_sizes:
            return rng.integers(0, self.num_actions, (self.num_envs, self.num_agents), dtype=np.int32)
        shape = (self.num_envs, self.num_agents, len(self.action_sizes))
        return rng.integers(0, np.array(self.action_sizes), shape, dtype=np.int32).reshape(self.num_envs, -1)

    def state_layout(self) -> dict[str, tuple[int, np.dtype]]:
        """``{name: (words per env, dtype)}`` for every state array, in kernel argument order."""
        raise NotImplementedError

    def constants(self) -> dict[str, int | float]:
        """Compile-time constants of the kernel (``NUM_ENVS``, ``NUM_AGENTS``, env parameters)."""
        return {
            "NUM_ENVS": self.num_envs,
            "NUM_AGENTS": self.num_agents,
            "OBS_DIM": self.obs_dim,
            "NUM_ACTIONS": self.num_actions,
            "ACTION_SLOTS": self.action_slots,
        }

    def init_state(self, seed: int) -> None:
        raise NotImplementedError

    def observe(self) -> None:
        """Run the phase named like the observe kernel (observations and masks)."""
        getattr(self, self.observe_kernel)()

    # -- shared machinery ---------------------------------------------------------------
    def allocate(self) -> None:
        sizes = {"observations": self.num_agents * self.obs_dim, "actions": self.num_agents * self.action_slots, "done": 1}
        self.arrays: dict[str, np.ndarray] = {}
        for name in STANDARD_ARRAYS:
            self.arrays[name] = np.zeros((self.num_envs, sizes.get(name, self.num_agents)), STANDARD_DTYPES[name])
        layout = self.state_layout()
        if tuple(layout) != self.state_arrays:
            raise TypeError(f"{type(self).__name__}: state_layout order {tuple(layout)} != state_arrays {self.state_arrays}")
        if not set(self.scratch_arrays) <= set(self.state_arrays):
            raise TypeError(f"{type(self).__name__}: scratch_arrays {self.scratch_arrays} must be state arrays")
        for name, (size, dtype) in layout.items():
            self.arrays[name] = np.zeros((self.num_envs, size), dtype)
        self.initial: dict[str, np.ndarray] = {}

    @property
    def argument_order(self) -> tuple[str, ...]:
        return (*STANDARD_ARRAYS, *self.state_arrays)

    def reset(self, seed: int = 0) -> None:
        """First reset: fresh state from ``seed``; saves the copy later resets restore."""
        for name in ("rewards", "terminals", "truncations", "done"):
            self.arrays[name][:] = 0
        self.arrays["masks"][:] = 1
        self.init_state(seed)
        self.initial = {name: self.arrays[name].copy() for name in self.reset_arrays}
        self.observe()

    def step(self, actions: np.ndarray, autoreset: bool = True) -> None:
        """One step of every env; done envs restart from their saved initial state when ``autoreset``."""
        self.arrays["actions"][:] = np.asarray(actions, dtype=np.int32).reshape(self.num_envs, -1)
        for kernel in self.step_kernels:
            if autoreset or kernel not in self.autoreset_kernels:
                getattr(self, kernel)()
        if autoreset:  # every env's observation before the reset, as the backend keeps it (final_observations)
            getattr(self, self.final_observe_kernel or self.observe_kernel)()
            self.final_observations = self.arrays["observations"].copy()
            self.restore_done()
        self.observe()

    def restore_done(self) -> None:
        done = self.arrays["done"][:, 0] != 0
        for name in self.reset_arrays:
            self.arrays[name][done] = self.initial[name][done]

    def view(self, name: str) -> np.ndarray:
        """Per-agent view: observations ``(envs, agents, obs_dim)``, others ``(envs, agents)``."""
        arr = self.arrays[name]
        return arr.reshape(self.num_envs, self.num_agents, self.obs_dim) if name == "observations" else arr
