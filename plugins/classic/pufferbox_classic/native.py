"""CartPole simulated for many envs at once, bit-for-bit with Gymnasium's CartPole-v1.

Two kernels step the same block: ``kernel="c"`` (default), one compiled C loop over all envs
(``_cartpole.c``, built by ``pip install`` of this plugin), and ``kernel="numpy"``, the
reference, one ufunc call per expression for all envs. Both are tested against Gymnasium and
against each other.

Why they match exactly: the state is float64 and every update repeats Gymnasium's
expressions in the same order (numpy's array and scalar loops round identically; the C
kernel is built with ``-ffp-contract=off``, without ``-ffast-math``, and calls libm's sin/cos
as numpy's float64 loops do); observations are the state cast to float32; each env's reset
states come from its own PCG64 seeded like ``env.reset(seed=seed + i)``, and episodes end
at the same thresholds, with truncation after 500 steps (``TimeLimit``).

Resets: the numpy kernel draws ``RESET_DRAWS`` states at a time per env (a generator's
``uniform(size=(k, 4))`` yields the same numbers as ``k`` calls of ``uniform(size=4)``), so
an auto-reset is a gather instead of a Python call. The C kernel runs numpy's PCG64 itself
on the generator's state (``bit_generator.state``), so a reset never leaves C.

Finished episodes are an :class:`~pufferbox.episodes.Episodes` (arrays; no dict per episode).

Example:
    >>> block = CartPoleNative(num_envs=3)
    >>> _ = block.vec_reset(seed=0)
    >>> block.buffers.observations.shape
    (3, 4)
    >>> reference = CartPoleNative(num_envs=3, kernel="numpy")
    >>> _ = reference.vec_reset(seed=0)
    >>> bool((reference.buffers.observations == block.buffers.observations).all())
    True
"""

from __future__ import annotations

import math

import gymnasium
import numpy as np
from gymnasium.utils import seeding

from pufferbox.api import (
    NO_EPISODES,
    ActionSpec,
    Buffers,
    Episodes,
    NativeBlock,
    ObservationSpec,
    SpaceError,
    episodes_ended,
)

try:
    from pufferbox_classic import _cartpole
except ImportError as exc:  # no silent fallback: the numpy kernel is ~2x slower
    raise ImportError(
        f"pufferbox_classic: the compiled CartPole kernel is not built ({exc}); fix: "
        "`pip install -e plugins/classic` on a machine with a C compiler (gcc)"
    ) from None

GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
MAX_EPISODE_STEPS = 500
RESET_DRAWS = 64  # per-env reset states drawn per refill: fewer Python-level refills
FORCES = np.array([-FORCE_MAG, FORCE_MAG])  # by action: exactly gymnasium's ±force_mag
KERNELS = ("c", "numpy")
UINT64_MASK = (1 << 64) - 1


def cartpole_spaces() -> tuple[gymnasium.spaces.Box, gymnasium.spaces.Discrete]:
    high = np.array([X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf], dtype=np.float32)
    return gymnasium.spaces.Box(-high, high, dtype=np.float32), gymnasium.spaces.Discrete(2)


class CartPoleNative(NativeBlock):
    """``num_envs`` CartPole-v1 envs in one block (one buffer row each).

    ``kernel="c"`` steps them in compiled C, ``kernel="numpy"`` is the reference.
    """

    writes_final_observations = True

    def __init__(self, num_envs: int, max_episode_steps: int = MAX_EPISODE_STEPS, kernel: str = "c", **unused: object):
        if unused:
            raise TypeError(f"cartpole native: unsupported options {', '.join(sorted(unused))}")
        if kernel not in KERNELS:
            raise ValueError(f"cartpole native: kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
        obs_space, act_space = cartpole_spaces()
        self.obs_spec, self.act_spec = ObservationSpec(obs_space), ActionSpec(act_space)
        self.kernel_name = kernel
        self.kernel: _cartpole.Kernel | None = None
        n = max(num_envs, 0)
        self.max_episode_steps = max_episode_steps
        self.state = np.zeros((4, n), dtype=np.float64)  # rows: x, x_dot, theta, theta_dot
        self.lengths = np.zeros(n, dtype=np.int64)
        self.returns = np.zeros(n, dtype=np.float64)
        self.seeded = False
        if kernel == "c":
            self.rng = np.zeros((n, 4), dtype=np.uint64)  # PCG64 per env: state hi, lo, increment hi, lo
            self.episode_env = np.zeros(n, dtype=np.int64)  # the kernel's record of episodes ended in a step
            self.episode_return = np.zeros(n, dtype=np.float64)
            self.episode_length = np.zeros(n, dtype=np.int64)
        else:
            self.rngs: list[np.random.Generator] = []
            self.draws = np.zeros((n, RESET_DRAWS, 4), dtype=np.float64)
            self.next_draw = np.zeros(n, dtype=np.int64)
            self.tmp = [np.empty(n, dtype=np.float64) for _ in range(5)]
            self.done = np.empty(n, dtype=bool)
            self.out_of_bounds = np.empty(n, dtype=bool)
            self.checked = False
        super().__init__(num_envs, name="cartpole")

    def set_buffers(self, buffers: Buffers) -> None:
        super().set_buffers(buffers)
        if self.kernel_name == "c":  # the kernel holds views of these rows: rebind
            b = buffers
            self.kernel = _cartpole.Kernel(
                self.state,
                self.lengths,
                self.returns,
                self.rng,
                b.observations,
                b.rewards,
                b.terminals,
                b.truncations,
                b.final_observations,
                self.episode_env,
                self.episode_return,
                self.episode_length,
                self.max_episode_steps,
            )

    def close(self) -> None:
        self.kernel = None  # releases its views (a shared-memory segment unmaps only without them)

    def vec_reset(self, seed: int | None = None) -> Episodes:
        return self.reset_c(seed) if self.kernel_name == "c" else self.reset_numpy(seed)

    def vec_step(self, actions: np.ndarray) -> Episodes:
        return self.step_c(actions) if self.kernel_name == "c" else self.step_numpy(actions)

    # -- C kernel ---------------------------------------------------------------------
    def reset_c(self, seed: int | None = None) -> Episodes:
        if seed is not None or not self.seeded:
            for env in range(self.num_envs):
                rng = seeding.np_random(None if seed is None else seed + env)[0]
                pcg = rng.bit_generator.state["state"]
                state, inc = pcg["state"], pcg["inc"]
                self.rng[env] = (state >> 64, state & UINT64_MASK, inc >> 64, inc & UINT64_MASK)
            self.seeded = True
        if self.kernel is None:
            raise RuntimeError("cartpole native: reset() after close()")
        self.kernel.reset()
        self.buffers.masks[:] = True
        return NO_EPISODES

    def step_c(self, actions: np.ndarray) -> Episodes:
        if not self.seeded or self.kernel is None:
            raise RuntimeError("cartpole native: step() before reset() or after close()")
        if type(actions) is not np.ndarray or actions.dtype != np.int64 or not actions.flags.c_contiguous:
            actions = np.asarray(actions)
            if actions.dtype.kind not in "iub":
                raise SpaceError(f"{self.name}: actions must be integers of Discrete(2), got {actions.dtype}")
            actions = np.ascontiguousarray(actions, dtype=np.int64)
        ended = self.kernel.step(actions)
        if ended > 0:  # copies: the kernel's arrays are rewritten next step
            return Episodes(
                self.episode_env[:ended].astype(np.int64),
                self.episode_return[:ended].astype(np.float64),
                self.episode_length[:ended].astype(np.int64),
            )
        if ended < 0:
            bad = actions.reshape(-1)[-ended - 1]
            raise SpaceError(f"{self.name}: action {bad} is outside the flat action space Discrete(2)")
        return NO_EPISODES

    # -- numpy reference --------------------------------------------------------------
    def refill(self, env: int) -> None:
        self.draws[env] = self.rngs[env].uniform(low=-0.05, high=0.05, size=(RESET_DRAWS, 4))
        self.next_draw[env] = 0

    def reset_envs(self, envs: np.ndarray) -> None:
        self.state[:, envs] = self.draws[envs, self.next_draw[envs]].T
        self.next_draw[envs] += 1
        for env in envs[self.next_draw[envs] == RESET_DRAWS]:
            self.refill(int(env))
        self.lengths[envs] = 0
        self.returns[envs] = 0.0

    def write_observations(self) -> None:
        # float64 -> float32 like np.array(state, np.float32); one column per state row is ~2x
        # faster than one cast-and-transpose of the whole (4, n) state.
        obs = self.buffers.observations
        for i in range(4):
            obs[:, i] = self.state[i]

    def reset_numpy(self, seed: int | None = None) -> Episodes:
        if seed is not None or not self.rngs:
            self.rngs = [seeding.np_random(None if seed is None else seed + i)[0] for i in range(self.num_envs)]
            for env in range(self.num_envs):
                self.refill(env)
        self.reset_envs(np.arange(self.num_envs))
        self.write_observations()
        b = self.buffers
        b.rewards[:] = 0.0
        b.terminals[:] = False
        b.truncations[:] = False
        b.masks[:] = True
        return NO_EPISODES

    def step_numpy(self, actions: np.ndarray) -> Episodes:
        if not self.rngs:
            raise RuntimeError("cartpole native: step() before reset()")
        if not self.checked:
            self.check_discrete_actions(np.asarray(actions), 2)
            self.checked = True
        x, x_dot, theta, theta_dot = self.state
        force, costheta, sintheta, temp, thetaacc = self.tmp
        # Checked to be 0/1 on the first step; "clip" skips the buffered bounds check of "raise".
        np.take(FORCES, np.asarray(actions).reshape(-1), out=force, mode="clip")
        np.cos(theta, out=costheta)
        np.sin(theta, out=sintheta)
        # temp = (force + polemass_length * theta_dot**2 * sintheta) / total_mass
        np.square(theta_dot, out=temp)
        temp *= POLEMASS_LENGTH
        temp *= sintheta
        np.add(force, temp, out=temp)
        temp /= TOTAL_MASS
        # thetaacc = (g * sin - cos * temp) / (length * (4/3 - masspole * cos**2 / total_mass))
        np.square(costheta, out=thetaacc)
        thetaacc *= MASSPOLE
        thetaacc /= TOTAL_MASS
        np.subtract(4.0 / 3.0, thetaacc, out=thetaacc)
        np.multiply(LENGTH, thetaacc, out=thetaacc)
        np.multiply(GRAVITY, sintheta, out=force)  # force is no longer needed: reuse it
        np.multiply(costheta, temp, out=sintheta)
        force -= sintheta
        np.divide(force, thetaacc, out=thetaacc)
        # xacc = temp - polemass_length * thetaacc * costheta / total_mass
        np.multiply(POLEMASS_LENGTH, thetaacc, out=force)
        force *= costheta
        force /= TOTAL_MASS
        np.subtract(temp, force, out=force)  # xacc
        # Euler integration, in Gymnasium's order (x uses the old x_dot, theta the old theta_dot).
        np.multiply(TAU, x_dot, out=temp)
        x += temp
        np.multiply(TAU, force, out=temp)
        x_dot += temp
        np.multiply(TAU, theta_dot, out=temp)
        theta += temp
        np.multiply(TAU, thetaacc, out=temp)
        theta_dot += temp

        b = self.buffers
        terminated = b.terminals
        # |v| > t is exactly (v < -t or v > t) in floating point: 5 passes instead of 7.
        np.abs(x, out=temp)
        np.greater(temp, X_THRESHOLD, out=terminated)
        np.abs(theta, out=temp)
        np.greater(temp, THETA_THRESHOLD, out=self.out_of_bounds)
        terminated |= self.out_of_bounds
        self.lengths += 1
        np.greater_equal(self.lengths, self.max_episode_steps, out=b.truncations)
        b.rewards[:] = 1.0
        self.returns += 1.0
        np.logical_or(terminated, b.truncations, out=self.done)
        infos = NO_EPISODES
        if self.done.any():
            infos = episodes_ended(self.done, self.returns, self.lengths)
            cut = b.truncations & ~terminated
            if cut.any():  # keep the truncated episodes' last observations past their reset
                self.write_observations()
                b.final_observations[cut] = b.observations[cut]
            self.reset_envs(np.flatnonzero(self.done))
        self.write_observations()
        return infos


def make_cartpole_native(num_envs: int, **kwargs: object) -> CartPoleNative:
    """The plugin's ``native=`` entry: ``max_episode_steps``, ``kernel``; other gymnasium.make kwargs are refused."""
    return CartPoleNative(num_envs, **kwargs)
