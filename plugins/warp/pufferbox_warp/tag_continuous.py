"""Continuous Tag (WarpDrive's advanced Tag): the kernel's CPU reference and a PettingZoo env on it.

Agents move in a continuous ``world x world`` square following classical mechanics: each has a
position, a unit heading and a speed, and every step chooses an acceleration (brake .. speed
up) and a turn from discrete levels, encoded as one ``Discrete(accel_levels * turn_levels)``
action ``accel_level * turn_levels + turn_level`` so the categorical sampler kernel applies.
Taggers (the first ``num_taggers`` agents) earn ``tag_reward`` for each runner within
``tag_radius``; a tagged runner gets ``tag_penalty`` and leaves the game. Speeds are capped per
role (``tagger_max_speed``, ``runner_max_speed``: the paper's skill levels); an agent reaching
the wall stops there and gets ``wall_penalty``. Episodes end when every runner is tagged or
after ``episode_length`` steps; a finished env restarts from the state drawn at the first reset
(WarpDrive's reset). ``k_nearest > 0`` gives partial observations of the K nearest agents.

Float32 arithmetic in the kernel's order and the kernel's sin/cos polynomials: the reference and
``kernels/tag_continuous.cu`` agree bit for bit (``check_env(..., device="host")`` shows it).

Example:
    >>> env = TagContinuousEnv(num_taggers=1, num_runners=3)
    >>> obs, infos = env.reset(seed=0)
    >>> obs["agent_0"].shape, env.action_space("agent_0")
    ((25,), Discrete(25))
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pufferbox.api import BatchedReference
from pufferbox.cuda.rng import cos_poly, env_keys, f32, sin_poly, uniform
from pufferbox_warp.tag import TagEnv
from pufferbox_warp.tag_common import catches, leave_and_count, nearest_agents, other_agents, report_done

SOURCE = Path(__file__).parent / "kernels" / "tag_continuous.cu"
OWN_FEATURES, OTHER_FEATURES = 7, 6


class TagContinuousReference(BatchedReference):
    """``num_envs`` continuous Tag games in numpy, phase for phase like ``tag_continuous.cu``."""

    state_arrays = ("pos", "heading", "speed", "in_game", "steps", "tagged")
    reset_arrays = ("pos", "heading", "speed", "in_game", "steps")
    step_kernels = ("ctag_move", "ctag_tag", "ctag_count")
    observe_kernel = "ctag_observe"

    def __init__(
        self,
        num_envs: int = 1,
        num_taggers: int = 2,
        num_runners: int = 10,
        world: float = 20.0,
        episode_length: int = 200,
        k_nearest: int = 0,
        accel_levels: int = 5,
        turn_levels: int = 5,
        max_accel: float = 0.5,
        max_turn: float = np.pi / 4,
        tagger_max_speed: float = 1.0,
        runner_max_speed: float = 1.0,
        tag_radius: float = 1.0,
        tag_reward: float = 1.0,
        tag_penalty: float = -1.0,
        wall_penalty: float = 0.0,
    ):
        if num_taggers < 1 or num_runners < 1:
            raise ValueError("tag_continuous needs at least one tagger and one runner")
        if accel_levels < 2 or turn_levels < 2:
            raise ValueError(
                f"accel_levels and turn_levels must be >= 2 (both ends of the range), got {accel_levels} and {turn_levels}"
            )
        if not 0.0 < max_turn <= 1.0:
            raise ValueError(
                f"max_turn must be in (0, 1] radians (the kernels' sin/cos polynomials are exact "
                f"to float precision there), got {max_turn}"
            )
        if world <= 0 or tag_radius <= 0 or max_accel <= 0 or min(tagger_max_speed, runner_max_speed) <= 0:
            raise ValueError("world, tag_radius, max_accel and the max speeds must be positive")
        self.num_envs, self.num_taggers = num_envs, num_taggers
        self.num_agents, self.episode_length = num_taggers + num_runners, episode_length
        if not 0 <= k_nearest <= self.num_agents - 1:
            raise ValueError(f"k_nearest must be in [0, {self.num_agents - 1}] (0 = observe everyone), got {k_nearest}")
        self.k_nearest = k_nearest
        self.observed = k_nearest or self.num_agents - 1
        self.obs_dim = OWN_FEATURES + OTHER_FEATURES * self.observed
        self.accel_levels, self.turn_levels = accel_levels, turn_levels
        self.num_actions = accel_levels * turn_levels
        self.k = {
            "WORLD": f32(world),
            "MAX_ACCEL": f32(max_accel),
            "MAX_TURN": f32(max_turn),
            "ACCEL_STEP": f32(2.0 * max_accel / (accel_levels - 1)),
            "TURN_STEP": f32(2.0 * max_turn / (turn_levels - 1)),
            "TAGGER_MAX_SPEED": f32(tagger_max_speed),
            "RUNNER_MAX_SPEED": f32(runner_max_speed),
            "TAG_RADIUS2": f32(tag_radius) * f32(tag_radius),
            "TAG_REWARD": f32(tag_reward),
            "TAG_PENALTY": f32(tag_penalty),
            "WALL_PENALTY": f32(wall_penalty),
            "EPISODE_LENGTH_F": f32(episode_length),
        }
        self.allocate()

    def state_layout(self) -> dict:
        f4, i4, n = np.dtype(np.float32), np.dtype(np.int32), self.num_agents
        return {
            "pos": (2 * n, f4),
            "heading": (2 * n, f4),
            "speed": (n, f4),
            "in_game": (n, i4),
            "steps": (1, i4),
            "tagged": (n, i4),
        }

    def constants(self) -> dict:
        return {
            **super().constants(),
            "NUM_TAGGERS": self.num_taggers,
            "EPISODE_LENGTH": self.episode_length,
            "K_NEAREST": self.k_nearest,
            "TURN_LEVELS": self.turn_levels,
            **{name: float(value) for name, value in self.k.items()},
        }

    def init_state(self, seed: int) -> None:
        """Uniform positions and headings (numpy trig is fine: only the reference ever draws these)."""
        a, n = self.arrays, self.num_agents
        keys = env_keys(seed, self.num_envs)[:, None]
        draws = uniform(keys, np.arange(3 * n, dtype=np.uint32)[None, :])
        a["pos"][:] = draws[:, : 2 * n] * self.k["WORLD"]
        angle = draws[:, 2 * n :].astype(np.float64) * 2.0 * np.pi
        a["heading"][:, 0::2] = np.cos(angle).astype(np.float32)
        a["heading"][:, 1::2] = np.sin(angle).astype(np.float32)
        a["speed"][:] = 0
        a["in_game"][:] = 1
        a["steps"][:] = 0
        a["tagged"][:] = 0

    def xy(self, name: str = "pos") -> np.ndarray:
        return self.arrays[name].reshape(self.num_envs, self.num_agents, 2)

    def is_tagger(self) -> np.ndarray:
        return np.arange(self.num_agents) < self.num_taggers

    def ctag_move(self) -> None:
        a, k = self.arrays, self.k
        a["rewards"][:] = 0
        alive = a["in_game"] != 0
        a["masks"][:] = alive
        act = a["actions"]
        accel = (act // self.turn_levels).astype(np.float32) * k["ACCEL_STEP"] - k["MAX_ACCEL"]
        turn = (act % self.turn_levels).astype(np.float32) * k["TURN_STEP"] - k["MAX_TURN"]
        c, s = cos_poly(turn), sin_poly(turn)
        h = self.xy("heading")
        hx, hy = h[..., 0], h[..., 1]
        nx = hx * c - hy * s
        ny = hx * s + hy * c
        norm = np.sqrt(nx * nx + ny * ny)
        nx, ny = nx / norm, ny / norm
        top = np.where(self.is_tagger(), k["TAGGER_MAX_SPEED"], k["RUNNER_MAX_SPEED"]).astype(np.float32)
        v = np.minimum(np.maximum(a["speed"] + accel, f32(0.0)), top)
        pos = self.xy()
        x = pos[..., 0] + v * nx
        y = pos[..., 1] + v * ny
        wall = (x < 0) | (x > k["WORLD"]) | (y < 0) | (y > k["WORLD"])
        v = np.where(wall, f32(0.0), v)
        a["rewards"][:] = np.where(alive & wall, k["WALL_PENALTY"], f32(0.0))
        moved = np.stack([np.clip(x, f32(0.0), k["WORLD"]), np.clip(y, f32(0.0), k["WORLD"])], axis=-1)
        pos[:] = np.where(alive[..., None], moved, pos)
        h[:] = np.where(alive[..., None], np.stack([nx, ny], axis=-1), h)
        a["speed"][:] = np.where(alive, v, a["speed"])

    def dist2(self) -> np.ndarray:
        """``[env, agent, other]`` squared distances, ``dx * dx + dy * dy`` like ``ctag_dist2``."""
        pos = self.xy()
        delta = pos[:, None, :, :] - pos[:, :, None, :]  # other - self
        return delta[..., 0] * delta[..., 0] + delta[..., 1] * delta[..., 1]

    def ctag_tag(self) -> None:
        a, k = self.arrays, self.k
        alive, tagger = a["in_game"] != 0, self.is_tagger()
        near = self.dist2() <= k["TAG_RADIUS2"]
        caught, hit = catches(near, alive, tagger)
        a["tagged"][:] = hit
        bonus = np.where(tagger, k["TAG_REWARD"] * caught.astype(np.float32), np.where(hit, k["TAG_PENALTY"], f32(0.0)))
        changed = alive & (tagger | hit)
        a["rewards"][:] = np.where(changed, a["rewards"] + bonus.astype(np.float32), a["rewards"])

    def ctag_count(self) -> None:
        leave_and_count(self.arrays, self.num_taggers, self.episode_length)

    def ctag_observe(self) -> None:
        a, k, n = self.arrays, self.k, self.num_agents
        report_done(a)
        pos, h, speed = self.xy(), self.xy("heading"), a["speed"]
        obs = self.view("observations")
        obs[:, :, 0:2] = pos / k["WORLD"]
        obs[:, :, 2:4] = h
        obs[:, :, 4] = speed
        obs[:, :, 5] = self.is_tagger()
        obs[:, :, 6] = a["steps"].astype(np.float32) / k["EPISODE_LENGTH_F"]
        if self.k_nearest:
            others = nearest_agents(self.dist2(), self.k_nearest)
        else:
            others = other_agents(self.num_envs, n)
        e_idx, a_idx = np.arange(self.num_envs)[:, None, None], np.arange(n)[None, :, None]
        feats = np.empty((self.num_envs, n, self.observed, OTHER_FEATURES), np.float32)
        feats[..., 0:2] = (pos[e_idx, others] - pos[e_idx, a_idx]) / k["WORLD"]
        feats[..., 2:4] = speed[e_idx, others][..., None] * h[e_idx, others]
        feats[..., 4] = others < self.num_taggers
        feats[..., 5] = a["in_game"][e_idx, others] != 0
        obs[:, :, OWN_FEATURES:] = feats.reshape(self.num_envs, n, -1)


class TagContinuousEnv(TagEnv):
    """The CPU reference as a PettingZoo ``ParallelEnv`` (one game; tagged runners leave ``agents``)."""

    metadata = {"name": "tag_continuous_v0", "render_modes": []}
    reference = TagContinuousReference
