"""Pong against a scripted paddle: the readable reference of ``c/pong.h`` (same rules, same numbers).

Example:
    >>> env = Pong()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space
    ((8,), Discrete(3))
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

PADDLE_X = 0.05
HALF_PADDLE = 0.1
PADDLE_SPEED = 0.02
SCRIPTED_SPEED = 0.009
SERVE_SPEED = 0.012
SPEED_UP = 0.0006
MAX_SPEED = 0.024
VELOCITY_SCALE = 40.0


def clamp_paddle(y: float) -> float:
    return HALF_PADDLE if y < HALF_PADDLE else (1.0 - HALF_PADDLE if y > 1.0 - HALF_PADDLE else y)


class Pong(SingleAgentReference):
    """Pong: your paddle (left) against a scripted one (right), first to ``max_score`` points.

    Each step runs ``frameskip`` ticks. A paddle hit returns the ball a little faster and steeper the
    farther from the paddle's centre it lands, so the agent can aim past the scripted paddle, which
    follows the ball at a bounded speed. Reward +1 per point won, -1 per point lost; the return is
    points won minus points lost (21-0 is 21). Observation: ball x, y, velocity x, y (x40), own and
    scripted paddle y, both scores / max_score. Actions: 0 stay, 1 up, 2 down.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_pong"}
    PARAMS = ("max_score", "frameskip", "max_steps")
    METRICS = ("score", "win")

    def __init__(self, max_score: int = 21, frameskip: int = 4, max_steps: int = 10_000, render_mode: str | None = None):
        self.max_score = check_positive("pong", "max_score", max_score)
        self.frameskip = check_positive("pong", "frameskip", frameskip)
        self.max_steps = check_positive("pong", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-2.0, 2.0, (8,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.rng = Rng()

    def serve(self) -> None:
        self.ball_x, self.ball_y, self.speed = 0.5, 0.5, SERVE_SPEED
        self.vel_x = SERVE_SPEED if self.rng.below(2) else -SERVE_SPEED
        self.vel_y = SERVE_SPEED * (self.rng.unit() - 0.5)

    def observe(self) -> np.ndarray:
        return np.array(
            [
                self.ball_x,
                self.ball_y,
                self.vel_x * VELOCITY_SCALE,
                self.vel_y * VELOCITY_SCALE,
                self.paddle,
                self.scripted,
                self.score / self.max_score,
                self.scripted_score / self.max_score,
            ],
            dtype=np.float32,
        )

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.paddle = self.scripted = 0.5
        self.score = self.scripted_score = self.steps = 0
        self.serve()
        return self.observe(), {}

    def hit(self, face: float, centre: float, direction: float) -> None:
        self.ball_x = face + face - self.ball_x
        self.speed = min(self.speed + SPEED_UP, MAX_SPEED)
        self.vel_x = direction * self.speed
        self.vel_y = self.speed * 1.5 * ((self.ball_y - centre) / HALF_PADDLE)

    def tick(self, action: int) -> int:
        if action == 1:
            self.paddle = clamp_paddle(self.paddle - PADDLE_SPEED)
        elif action == 2:
            self.paddle = clamp_paddle(self.paddle + PADDLE_SPEED)
        chase = min(max(self.ball_y - self.scripted, -SCRIPTED_SPEED), SCRIPTED_SPEED)
        self.scripted = clamp_paddle(self.scripted + chase)
        before = self.ball_x
        self.ball_x += self.vel_x
        self.ball_y += self.vel_y
        if self.ball_y < 0.0:
            self.ball_y, self.vel_y = -self.ball_y, -self.vel_y
        elif self.ball_y > 1.0:
            self.ball_y, self.vel_y = 2.0 - self.ball_y, -self.vel_y
        left, right = PADDLE_X, 1.0 - PADDLE_X
        crossed_left = self.vel_x < 0.0 and before >= left and self.ball_x < left
        crossed_right = self.vel_x > 0.0 and before <= right and self.ball_x > right
        if crossed_left and -HALF_PADDLE <= self.ball_y - self.paddle <= HALF_PADDLE:
            self.hit(left, self.paddle, 1.0)
        elif crossed_right and -HALF_PADDLE <= self.ball_y - self.scripted <= HALF_PADDLE:
            self.hit(right, self.scripted, -1.0)
        if self.ball_x < 0.0:
            self.scripted_score += 1
            self.serve()
            return -1
        if self.ball_x > 1.0:
            self.score += 1
            self.serve()
            return 1
        return 0

    def over(self) -> bool:
        return self.score >= self.max_score or self.scripted_score >= self.max_score

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward = 0
        for _ in range(self.frameskip):
            reward += self.tick(int(action))
            if self.over():
                break
        self.steps += 1
        terminated = self.over()
        truncated = not terminated and self.steps >= self.max_steps
        info = {"score": float(self.score), "win": float(self.score >= self.max_score)} if terminated or truncated else {}
        return self.observe(), float(reward), terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(64, 48)
        canvas.rect(PADDLE_X - 0.02, self.paddle - HALF_PADDLE, 0.02, 2 * HALF_PADDLE, "#")
        canvas.rect(1.0 - PADDLE_X, self.scripted - HALF_PADDLE, 0.02, 2 * HALF_PADDLE, "#")
        canvas.rect(self.ball_x - 0.01, self.ball_y - 0.01, 0.02, 0.02, "o")
        return canvas.show(self.render_mode, f"you {self.score} : {self.scripted_score} scripted")


GAME = Game(
    "pong",
    Pong,
    solved_return=15.0,
    solved_meaning="wins 21-6 or better against the scripted paddle (return = points won - points lost)",
    # Mastery: a game to 21 won by 15 points or more. The defaults reach it at 2.39M steps in 18 s on 2
    # loaded cores (seed 1, load 3-4).
    # Learning, not stepping, is the cost here (the game steps at millions per second): four epochs over
    # four large minibatches of shorter rollouts, at a higher rate, solve in about as many steps as
    # the trainer's defaults (10 epochs x 32 minibatches) at a third of the learner's work.
    config={
        "train": {
            "total_steps": 5_000_000,
            "stop_on_solve": True,
            "num_steps": 128,
            "update_epochs": 4,
            "num_minibatches": 4,
            "learning_rate": 1e-3,
        },
        "vec": {"num_envs": 256},
    },
    # The GPU profile: 131,072 rows per update (2,048 envs x 64 steps), two epochs over eight minibatches
    # of 16,384, in PufferLib's 12M-step budget: solves within 100 updates (benchmarks/gpu_profiles.py;
    # RESULTS.md, "GPU profiles"). Muon at 1e-2 solves in 55-57 updates where Adam at 1e-3 takes 75-79.
    gpu_config={
        "train": {
            "optimizer": "muon",
            "learning_rate": 1e-2,
            "total_steps": 91 * 131_072,
            "num_steps": 64,
            "update_epochs": 2,
            "num_minibatches": 8,
        },
        "vec": {"num_envs": 2048},
    },
    check_kwargs={"max_score": 2, "max_steps": 40},
    cuda_type="Pong",
)
