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

RULES = ("aim", "pufferlib")  # in the C game's order (rules_index)
# rules="pufferlib": PufferLib 3.0's Pong, in its pixels. The agent's paddle is the right one; paddles sit
# on the court's edges; the ball is a box given by its top-left corner.
COURT_W, COURT_H = 500.0, 640.0
BOX_PADDLE_H = 70.0
BOX_BALL = 32.0
BOX_PADDLE_SPEED = 8.0  # both paddles, per tick
BOX_SERVE_X, BOX_SERVE_VX, BOX_SERVE_VY = 100.0, 10.0, 1.0
BOX_SPIN, BOX_MAX_VY = 3.0, 13.0  # a return adds 3 x the paddle's direction to the ball's vertical speed
BOX_RETURN_REWARD = 0.1  # the step's reward when the agent returned the ball and no point was scored
RETURNED = 2  # tick_box's outcome for a return


def clamp_paddle(y: float) -> float:
    return HALF_PADDLE if y < HALF_PADDLE else (1.0 - HALF_PADDLE if y > 1.0 - HALF_PADDLE else y)


class Pong(SingleAgentReference):
    """Pong: your paddle (left) against a scripted one (right), first to ``max_score`` points.

    Each step runs ``frameskip`` ticks. A paddle hit returns the ball a little faster and steeper the
    farther from the paddle's centre it lands, so the agent can aim past the scripted paddle, which
    follows the ball at a bounded speed. Reward +1 per point won, -1 per point lost; the return is
    points won minus points lost (21-0 is 21; also the ``margin`` metric). Observation: ball x, y,
    velocity x, y (x40), own and scripted paddle y, both scores / max_score. Actions: 0 stay, 1 up,
    2 down.

    ``rules="pufferlib"`` plays PufferLib 3.0's Pong instead, for same-rules comparisons: a 500 x 640
    court, 70-pixel paddles on its edges, a 32-pixel ball served from the scripted paddle's side
    toward the agent at 10 pixels a tick (vertical speed -1 or 0); the horizontal speed never changes,
    and the agent's return adds 3 times its paddle's direction to the vertical speed (at most 13); the
    scripted paddle follows the ball's top at the agent's paddle speed (8). A point ends the step.
    Reward as PufferLib's: +-1 for a point, else 0.1 in a step where the agent returned the ball; the
    ``margin`` metric (points won - points lost) is then the score to compare.
    Observation: the same eight numbers, scaled by the court (velocities by 10 and 13).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_pong"}
    PARAMS = ("max_score", "frameskip", "max_steps", "rules_index")
    METRICS = ("score", "win", "margin")

    def __init__(
        self,
        max_score: int = 21,
        frameskip: int = 4,
        max_steps: int = 10_000,
        rules: str = "aim",
        render_mode: str | None = None,
    ):
        if rules not in RULES:
            raise ValueError(f"pong: rules must be one of {list(RULES)}, got {rules!r}")
        self.rules, self.rules_index = rules, RULES.index(rules)
        self.max_score = check_positive("pong", "max_score", max_score)
        self.frameskip = check_positive("pong", "frameskip", frameskip)
        self.max_steps = check_positive("pong", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-2.0, 2.0, (8,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.rng = Rng()

    def serve(self) -> None:
        if self.rules_index:
            self.paddle = self.scripted = (COURT_H - BOX_PADDLE_H) / 2
            self.ball_x, self.ball_y = BOX_SERVE_X, (COURT_H - BOX_BALL) / 2
            self.vel_x, self.vel_y = BOX_SERVE_VX, BOX_SERVE_VY * (self.rng.below(2) - 1.0)
            return
        self.ball_x, self.ball_y, self.speed = 0.5, 0.5, SERVE_SPEED
        self.vel_x = SERVE_SPEED if self.rng.below(2) else -SERVE_SPEED
        self.vel_y = SERVE_SPEED * (self.rng.unit() - 0.5)

    def observe(self) -> np.ndarray:
        if self.rules_index:
            return np.array(
                [
                    self.ball_x / COURT_W,
                    self.ball_y / COURT_H,
                    self.vel_x / BOX_SERVE_VX,
                    self.vel_y / BOX_MAX_VY,
                    (self.paddle + BOX_PADDLE_H / 2) / COURT_H,
                    (self.scripted + BOX_PADDLE_H / 2) / COURT_H,
                    self.score / self.max_score,
                    self.scripted_score / self.max_score,
                ],
                dtype=np.float32,
            )
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

    def tick_box(self, action: int) -> int:
        """One tick of rules="pufferlib": +1 when the agent scores, -1 when the scripted paddle does,
        RETURNED when the agent's paddle returns the ball, else 0."""
        returned = False
        direction = (action == 1) - (action == 2)
        low, high = -BOX_PADDLE_H / 2, COURT_H - BOX_PADDLE_H / 2
        self.paddle = min(max(self.paddle + BOX_PADDLE_SPEED * direction, low), high)
        chase = min(max(self.ball_y - (self.scripted + BOX_PADDLE_H / 2), -BOX_PADDLE_SPEED), BOX_PADDLE_SPEED)
        self.scripted = min(max(self.scripted + chase, low), high)
        self.ball_x += self.vel_x
        self.ball_y += self.vel_y
        if self.ball_y < 0.0 or self.ball_y + BOX_BALL > COURT_H:
            self.vel_y = -self.vel_y
        if self.ball_x < 0.0:
            if self.ball_y + BOX_BALL > self.scripted and self.ball_y < self.scripted + BOX_PADDLE_H:
                self.vel_x = -self.vel_x
            else:
                self.score += 1
                self.serve()
                return 1
        if self.ball_x + BOX_BALL > COURT_W:
            if self.ball_y + BOX_BALL > self.paddle and self.ball_y < self.paddle + BOX_PADDLE_H:
                self.vel_x = -self.vel_x
                self.vel_y = min(max(self.vel_y + BOX_SPIN * direction, -BOX_MAX_VY), BOX_MAX_VY)
                if abs(self.vel_y) < 0.01:  # never a flat return
                    self.vel_y = BOX_SPIN
                returned = True
            else:
                self.scripted_score += 1
                self.serve()
                return -1
        self.ball_x = min(max(self.ball_x, 0.0), COURT_W - BOX_BALL)
        self.ball_y = min(max(self.ball_y, 0.0), COURT_H - BOX_BALL)
        return RETURNED if returned else 0

    def tick(self, action: int) -> int:
        if self.rules_index:
            return self.tick_box(action)
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
        reward = 0.0
        for _ in range(self.frameskip):
            outcome = self.tick(int(action))
            if self.rules_index and outcome == RETURNED:
                reward = BOX_RETURN_REWARD
            elif self.rules_index and outcome:
                reward = float(outcome)
                break
            else:
                reward += outcome
                if self.over():
                    break
        self.steps += 1
        terminated = self.over()
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            margin = float(self.score - self.scripted_score)
            info = {"score": float(self.score), "win": float(self.score >= self.max_score), "margin": margin}
        return self.observe(), float(np.float32(reward)), terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(64, 48)
        if self.rules_index:  # the agent on the right, both paddles on the court's edges
            h, ball = BOX_PADDLE_H / COURT_H, (BOX_BALL / COURT_W, BOX_BALL / COURT_H)
            canvas.rect(0.0, self.scripted / COURT_H, 0.02, h, "#")
            canvas.rect(0.98, self.paddle / COURT_H, 0.02, h, "#")
            canvas.rect(self.ball_x / COURT_W, self.ball_y / COURT_H, *ball, "o")
            return canvas.show(self.render_mode, f"scripted {self.scripted_score} : {self.score} you")
        canvas.rect(PADDLE_X - 0.02, self.paddle - HALF_PADDLE, 0.02, 2 * HALF_PADDLE, "#")
        canvas.rect(1.0 - PADDLE_X, self.scripted - HALF_PADDLE, 0.02, 2 * HALF_PADDLE, "#")
        canvas.rect(self.ball_x - 0.01, self.ball_y - 0.01, 0.02, 0.02, "o")
        return canvas.show(self.render_mode, f"you {self.score} : {self.scripted_score} scripted")


GAME = Game(
    "pong",
    Pong,
    solved_return=15.0,
    solved_meaning="wins 21-6 or better against the scripted paddle (return = points won - points lost)",
    # Mastery: a game to 21 won by 15 points or more. Learning, not stepping, is the cost here (the game
    # steps at millions per second): four epochs over four large minibatches of shorter rollouts, Muon at
    # 1e-2 and a short horizon (gamma 0.96, lambda 0.885: a point is decided by the last return or two).
    # Solved at 1.34M steps in 14.2 s (seed 2; Adam at 1e-3 with gamma 0.99: 2.23M, 19.9 s, the two
    # runs side by side, load 1.4-3) and at 1.21M (seed 1; Adam: 2.59M). The same settings learn
    # PufferLib's rules (rules="pufferlib", frameskip 8: every point, a margin of 21, at 1.74M steps)
    # where Adam at gamma 0.99 never scored a point in 9M steps.
    config={
        "train": {
            "total_steps": 5_000_000,
            "stop_on_solve": True,
            "num_steps": 128,
            "update_epochs": 4,
            "num_minibatches": 4,
            "optimizer": "muon",
            "learning_rate": 1e-2,
            "gamma": 0.96,
            "gae_lambda": 0.885,
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
            "gamma": 0.99,  # as measured
            "gae_lambda": 0.95,
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
