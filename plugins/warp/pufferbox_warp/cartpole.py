"""CUDA CartPole: the kernel's CPU reference (batched numpy) and a Gymnasium env built on it.

Float32 arithmetic in the kernel's order, sin/cos as the kernel's polynomials, respawns from
the kernel's counter-based RNG: the reference and the kernel agree bit for bit.

Example:
    >>> env = CartPoleEnv()
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((4,), dtype('float32'))
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np

from pufferbox.api import BatchedReference
from pufferbox.cuda.rng import cos_poly, env_keys, f32, sin_poly, uniform

SOURCE = Path(__file__).parent / "kernels" / "cartpole.cu"
PARAMS = {
    "GRAVITY": 9.8,
    "MASSPOLE": 0.1,
    "TOTAL_MASS": 1.1,
    "LENGTH": 0.5,
    "POLEMASS_LENGTH": 0.05,
    "FORCE_MAG": 10.0,
    "TAU": 0.02,
    "FOUR_THIRDS": 4.0 / 3.0,
    "THETA_THRESHOLD": 12 * 2 * math.pi / 360,
    "X_THRESHOLD": 2.4,
}
K = {name: f32(value) for name, value in PARAMS.items()}


class CartPoleReference(BatchedReference):
    """``num_envs`` CartPoles in numpy, phase for phase like ``cartpole.cu``."""

    state_arrays = ("state", "steps", "rng_key", "rng_counter")
    step_kernels = ("cartpole_step", "cartpole_respawn")
    autoreset_kernels = ("cartpole_respawn",)
    observe_kernel = "cartpole_observe"

    def __init__(self, num_envs: int = 1, max_steps: int = 500):
        self.num_envs, self.num_agents, self.obs_dim, self.num_actions = num_envs, 1, 4, 2
        self.max_steps = max_steps
        self.allocate()

    def state_layout(self) -> dict:
        return {
            "state": (4, np.dtype(np.float32)),
            "steps": (1, np.dtype(np.int32)),
            "rng_key": (1, np.dtype(np.uint32)),
            "rng_counter": (1, np.dtype(np.uint32)),
        }

    def constants(self) -> dict:
        return {**super().constants(), **PARAMS, "MAX_STEPS": self.max_steps}

    def init_state(self, seed: int) -> None:
        a = self.arrays
        a["rng_key"][:, 0] = env_keys(seed, self.num_envs)
        a["rng_counter"][:] = 0
        a["done"][:] = 1  # respawn everything, exactly as the kernel restarts an env
        self.cartpole_respawn()
        a["done"][:] = 0

    def cartpole_step(self) -> None:
        a = self.arrays
        s = a["state"]
        x, x_dot, theta, theta_dot = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        force = np.where(a["actions"][:, 0] == 1, K["FORCE_MAG"], -K["FORCE_MAG"]).astype(np.float32)
        costheta, sintheta = cos_poly(theta), sin_poly(theta)
        temp = (force + K["POLEMASS_LENGTH"] * theta_dot * theta_dot * sintheta) / K["TOTAL_MASS"]
        thetaacc = (K["GRAVITY"] * sintheta - costheta * temp) / (
            K["LENGTH"] * (K["FOUR_THIRDS"] - K["MASSPOLE"] * costheta * costheta / K["TOTAL_MASS"])
        )
        xacc = temp - K["POLEMASS_LENGTH"] * thetaacc * costheta / K["TOTAL_MASS"]
        new = np.stack(
            [x + K["TAU"] * x_dot, x_dot + K["TAU"] * xacc, theta + K["TAU"] * theta_dot, theta_dot + K["TAU"] * thetaacc],
            axis=1,
        )
        s[:] = new
        a["steps"][:, 0] += 1
        x, theta = new[:, 0], new[:, 2]
        terminated = (
            (x < -K["X_THRESHOLD"])
            | (x > K["X_THRESHOLD"])
            | (theta < -K["THETA_THRESHOLD"])
            | (theta > K["THETA_THRESHOLD"])
        )
        truncated = ~terminated & (a["steps"][:, 0] >= self.max_steps)
        a["rewards"][:] = 1.0
        a["terminals"][:, 0] = terminated
        a["truncations"][:, 0] = truncated
        a["done"][:, 0] = np.where(terminated, 1, np.where(truncated, 2, 0))

    def cartpole_respawn(self) -> None:
        a = self.arrays
        done = a["done"][:, 0] != 0
        counter = a["rng_counter"][done, 0]
        keys = a["rng_key"][done, 0]
        for i in range(4):
            a["state"][done, i] = (uniform(keys, counter + np.uint32(i)) - f32(0.5)) * f32(0.1)
        a["rng_counter"][done, 0] = counter + np.uint32(4)
        a["steps"][done, 0] = 0

    def cartpole_observe(self) -> None:
        self.arrays["observations"][:] = self.arrays["state"]
        self.arrays["masks"][:] = 1


class CartPoleEnv(gymnasium.Env):
    """The CPU reference as a Gymnasium env (one CartPole, float32, polynomial trig)."""

    metadata = {"render_modes": []}

    def __init__(self, max_steps: int = 500):
        self.core = CartPoleReference(num_envs=1, max_steps=max_steps)
        high = np.array([4.8, np.finfo(np.float32).max, 0.42, np.finfo(np.float32).max], dtype=np.float32)
        self.observation_space = gymnasium.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.started = False

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None or not self.started:
            self.core.reset(seed if seed is not None else int(self.np_random.integers(2**31)))
            self.started = True
        else:  # next episode: the env's own random stream continues, as on the GPU
            self.core.arrays["done"][:] = 1
            self.core.cartpole_respawn()
            self.core.arrays["done"][:] = 0
            self.core.cartpole_observe()
        return self.core.arrays["observations"][0].copy(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.core.step(np.array([[int(action)]], np.int32), autoreset=False)
        a = self.core.arrays
        return (
            a["observations"][0].copy(),
            float(a["rewards"][0, 0]),
            bool(a["terminals"][0, 0]),
            bool(a["truncations"][0, 0]),
            {},
        )
