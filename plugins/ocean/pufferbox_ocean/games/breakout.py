"""Breakout: the readable reference of ``c/breakout.h`` (same rules, same numbers).

Example:
    >>> env = Breakout()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space, int(obs[8:].sum())
    ((116,), Discrete(3), 108)
    >>> total = 0.0
    >>> for _ in range(50):
    ...     obs, reward, terminated, truncated, info = env.step(0)
    ...     total += reward
    >>> total >= 0.0
    True
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

ROWS, COLS = 6, 18  # Atari Breakout's wall
BRICKS = ROWS * COLS
POINTS = (7, 7, 4, 4, 1, 1)  # per row, top first (Atari Breakout's red/orange, yellow/green, aqua/blue): 432 a wall
BRICK_TOP = 0.1
BRICK_H = 0.04
PADDLE_Y = 0.95
HALF_PADDLE = 0.08
SMALL_HALF_PADDLE = 0.04  # after the ball first reaches the ceiling
PADDLE_SPEED = 0.015  # 0.06 a decision at frame skip 4: less than the small paddle (0.08), so every ball is reachable
SERVE_Y = 0.4
SERVE_SPEED = 0.012
SPEED_UP = 0.0004
MAX_SPEED = 0.018
VELOCITY_SCALE = 40.0
GLYPHS = ("x", "x", "o", "o", "@", "@")


class Breakout(SingleAgentReference):
    """Breakout with Atari's rules: two 6 x 18 walls of bricks (``walls``), 5 lives, 864 points in all.

    The court is the unit square (y down); the paddle slides along the bottom, the wall hangs below a
    gap at the top. Each step runs ``frameskip`` ticks; a tick moves the paddle, then the ball along
    x (walls, then bricks) and along y (ceiling, bricks, paddle). A brick hit breaks the brick and
    bounces the ball back; a paddle hit returns the ball a little faster and steeper the farther from
    the paddle's centre it lands. The first time the ball reaches the ceiling the paddle shrinks to half
    its width for the rest of the game. Bricks are worth 7, 7, 4, 4, 1, 1 points by row from the top
    (432 a wall); the reward is the points broken. A cleared wall is replaced by the next one when the
    ball next leaves the paddle (or at the next serve). Losing the ball costs a life; the episode ends
    when the lives are gone or the last wall is cleared. Observation: paddle x, ball x, y, velocity x,
    y (x40), lives left / lives, paddle width (1 full, 0.5 shrunk), the landing hint, then the 108
    bricks (1 present). The landing hint (``landing_hint=False`` writes 0 there) is the x at which the
    ball would cross the paddle's line with only the side walls and the ceiling in its way: exact for a
    falling ball below the wall, a guess while bricks can still turn it.
    Actions: 0 stay, 1 left, 2 right.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_breakout"}
    PARAMS = ("lives", "frameskip", "max_steps", "walls", "landing_hint")
    METRICS = ("score", "bricks", "cleared")

    def __init__(
        self,
        lives: int = 5,
        frameskip: int = 4,
        max_steps: int = 27_000,
        walls: int = 2,
        landing_hint: bool = True,
        render_mode: str | None = None,
    ):
        self.lives = check_positive("breakout", "lives", lives)
        self.frameskip = check_positive("breakout", "frameskip", frameskip)
        self.max_steps = check_positive("breakout", "max_steps", max_steps)
        self.walls = check_positive("breakout", "walls", walls)
        if landing_hint not in (True, False):
            raise ValueError(f"breakout: landing_hint must be true or false, got {landing_hint!r}")
        self.landing_hint = int(landing_hint)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-2.0, 2.0, (8 + BRICKS,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.rng = Rng()

    def next_wall(self) -> None:
        """A cleared wall, with walls still to come, is replaced by a full one."""
        if self.broken >= (self.wall + 1) * BRICKS and self.wall + 1 < self.walls:
            self.wall += 1
            self.bricks = [[1] * COLS for _ in range(ROWS)]

    def serve(self) -> None:
        self.next_wall()
        self.ball_x = 0.2 + 0.6 * self.rng.unit()
        self.ball_y, self.speed = SERVE_Y, SERVE_SPEED
        self.vel_x = SERVE_SPEED * (2.0 * self.rng.unit() - 1.0)
        self.vel_y = SERVE_SPEED

    def landing(self) -> float:
        """Where the ball would cross the paddle's line with only the side walls and the ceiling in its way."""
        way = PADDLE_Y - self.ball_y if self.vel_y > 0.0 else self.ball_y + PADDLE_Y
        x = self.ball_x + self.vel_x * way / abs(self.vel_y)
        while x < 0.0 or x > 1.0:
            x = -x if x < 0.0 else 2.0 - x
        return x

    def observe(self) -> np.ndarray:
        head = [
            self.paddle,
            self.ball_x,
            self.ball_y,
            self.vel_x * VELOCITY_SCALE,
            self.vel_y * VELOCITY_SCALE,
            self.lives_left / self.lives,
            self.half_paddle / HALF_PADDLE,
            self.landing() if self.landing_hint else 0.0,
        ]
        return np.array(head + [b for row in self.bricks for b in row], dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.paddle, self.half_paddle = 0.5, HALF_PADDLE
        self.lives_left = self.lives
        self.score = self.broken = self.steps = self.wall = 0
        self.bricks = [[1] * COLS for _ in range(ROWS)]
        self.serve()
        return self.observe(), {}

    def hit(self, x: float, y: float) -> int:
        """Break the brick under (x, y), if any: its points, else 0."""
        if y < BRICK_TOP:
            return 0
        row = int((y - BRICK_TOP) / BRICK_H)
        if row >= ROWS:
            return 0
        col = min(int(x * COLS), COLS - 1)
        if not self.bricks[row][col]:
            return 0
        self.bricks[row][col] = 0
        self.broken += 1
        return POINTS[row]

    def tick(self, action: int) -> int:
        if action == 1:
            self.paddle = max(self.paddle - PADDLE_SPEED, self.half_paddle)
        elif action == 2:
            self.paddle = min(self.paddle + PADDLE_SPEED, 1.0 - self.half_paddle)
        points = 0
        before = self.ball_x
        self.ball_x += self.vel_x
        if self.ball_x < 0.0:
            self.ball_x, self.vel_x = -self.ball_x, -self.vel_x
        elif self.ball_x > 1.0:
            self.ball_x, self.vel_x = 2.0 - self.ball_x, -self.vel_x
        p = self.hit(self.ball_x, self.ball_y)
        if p:
            points += p
            self.ball_x, self.vel_x = before, -self.vel_x
        before = self.ball_y
        self.ball_y += self.vel_y
        if self.ball_y < 0.0:
            self.ball_y, self.vel_y = -self.ball_y, -self.vel_y
            self.half_paddle = SMALL_HALF_PADDLE
        p = self.hit(self.ball_x, self.ball_y)
        if p:
            points += p
            self.ball_y, self.vel_y = before, -self.vel_y
        if self.vel_y > 0.0 and before < PADDLE_Y <= self.ball_y:
            off = self.ball_x - self.paddle
            if -self.half_paddle <= off <= self.half_paddle:
                self.ball_y = PADDLE_Y + PADDLE_Y - self.ball_y
                self.speed = min(self.speed + SPEED_UP, MAX_SPEED)
                self.vel_x = self.speed * 1.5 * (off / self.half_paddle)
                self.vel_y = -self.speed
                self.next_wall()
        if self.ball_y > 1.0:
            self.lives_left -= 1
            if self.lives_left > 0:
                self.serve()
        return points

    def over(self) -> bool:
        return self.lives_left <= 0 or self.broken >= self.walls * BRICKS

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        reward = 0
        for _ in range(self.frameskip):
            reward += self.tick(int(action))
            if self.over():
                break
        self.score += reward
        self.steps += 1
        terminated = self.over()
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            cleared = float(self.broken // BRICKS)
            info = {"score": float(self.score), "bricks": float(self.broken), "cleared": cleared}
        return self.observe(), float(reward), terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(54, 40)
        for r in range(ROWS):
            for c in range(COLS):
                if self.bricks[r][c]:
                    canvas.rect(c / COLS, BRICK_TOP + r * BRICK_H, 1.0 / COLS, BRICK_H, GLYPHS[r])
        canvas.rect(self.paddle - self.half_paddle, PADDLE_Y, 2 * self.half_paddle, 0.02, "#")
        canvas.rect(self.ball_x - 0.01, self.ball_y - 0.01, 0.02, 0.02, "*")
        return canvas.show(self.render_mode, f"score {self.score}  lives {self.lives_left}  wall {self.wall + 1}")


GAME = Game(
    "breakout",
    Breakout,
    solved_return=432.0,
    solved_meaning=(
        "clears the first wall on average: 432 of the two walls' 864 points over 5 lives (a random paddle scores about 1)"
    ),
    # Mastery: clearing a whole wall (432) takes every ball returned, the shrunken paddle included; the
    # paddle moves 0.06 a decision, less than the small paddle's width, so a paddle that goes where the
    # ball will land clears both walls (test_breakout.py). What the learner needs for that: the landing
    # hint (without it the policy plays like a paddle that follows the ball, about 260, and peaks near
    # 300-330 in 45M steps); rewards scaled by the running std of the return (bricks are worth 1 to 7, a
    # wall 432: unscaled, the value loss stays large and the return swings by 100-200 between updates);
    # and a horizon of about 200 decisions (gamma 0.995), since a lost ball costs a life whose worth is
    # the points of later balls. Rollouts, epochs, rate, entropy and clipping are the best trial of
    # `pufferbox sweep ocean/breakout --objective return`. Solved at 29.7-30.5M steps (242-262 s, seeds
    # 1-3, load 2); trained on to 45M, 437-449 a game over the last 4M steps (RESULTS.md).
    config={
        "train": {
            "total_steps": 45_000_000,
            "stop_on_solve": True,
            "num_steps": 128,
            "update_epochs": 4,
            "num_minibatches": 11,
            "learning_rate": 1.7e-3,
            "ent_coef": 6e-4,
            "clip_coef": 0.17,
            "vf_coef": 0.35,
            "max_grad_norm": 0.3,
            "gamma": 0.995,
            "norm_reward": True,
        },
        "vec": {"num_envs": 256},
    },
    # The GPU profile: 131,072 rows per update (2,048 envs x 64 steps), the defaults' four epochs over
    # eight minibatches of 16,384. Measured on the former one-wall 6 x 12 game (solved at 50 of 288): it
    # solved within 100 updates, Muon at 1e-2 in 31-41 where Adam at 1e-3 took 73-89 (benchmarks/
    # gpu_profiles.py; RESULTS.md, "GPU profiles"); not yet measured on Atari's walls.
    gpu_config={
        "train": {
            "optimizer": "muon",
            "learning_rate": 1e-2,
            "total_steps": 228 * 131_072,
            "num_steps": 64,
            "update_epochs": 4,
            "num_minibatches": 8,
            # as measured: the trainer's own values, not the CPU defaults' tuned ones
            "ent_coef": 0.0,
            "clip_coef": 0.2,
            "vf_coef": 0.5,
            "max_grad_norm": 0.5,
            "gamma": 0.99,
            "norm_reward": False,
        },
        "vec": {"num_envs": 2048},
    },
    check_kwargs={"lives": 1, "max_steps": 50},
    cuda_type="Breakout",
)
