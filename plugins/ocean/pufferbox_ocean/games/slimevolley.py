"""Slime Volleyball by self-play: the readable reference of ``c/slimevolley.h`` (same rules, same numbers).

Two seats, ``left`` and ``right``, each seeing the court mirrored so that it plays on the left, with
continuous actions ``[move, jump]`` in its own frame; one policy plays both (self-play). With
``bot_share`` the right seat is played by the built-in bot in that percent of the episodes.

Example:
    >>> env = SlimeVolley()
    >>> obs, _ = env.reset(seed=1)
    >>> obs["left"].shape, env.action_space("right")
    ((14,), Box(-1.0, 1.0, (2,), float32))
"""

from __future__ import annotations

import math

import numpy as np
from gymnasium import spaces

from pufferbox.api import ACTION_ONE, continuous_action_space, quantize_actions
from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

OBS = 14
SLIME_R = 0.15
BALL_R = 0.05
NET_W = 0.02  # half the net's width
NET_H = 0.2
CEILING = 2.0
SPEED = 0.03
JUMP = 0.06
SLIME_GRAVITY = 0.004
BALL_GRAVITY = 0.002
MAX_BALL_SPEED = 0.08
VELOCITY_SCALE = 10.0


def clamp(v: float, lo: float, hi: float) -> float:
    return lo if v < lo else (hi if v > hi else v)


class SlimeVolley(MultiAgentReference):
    """Slime Volleyball: two half-disc slimes keep a ball off their own ground, first to ``max_score``.

    The court is x in [-1, 1] with a net (height 0.2) at 0; each step runs ``frameskip`` ticks. The ball
    falls under gravity and bounces off the walls, a ceiling, the net and the slimes' domes (reflected
    in the slime's frame: a moving or jumping slime pushes it; speed capped). The ball touching the
    ground is a point for the other side, whose opponent then receives the next serve. Reward +1 per
    point won, -1 per point lost; the game ends at ``max_score`` points (terminal) or after
    ``max_steps`` steps (truncated). Observation (14 floats, mirrored so each seat is on the left): own
    x, y, velocities (x10), the ball's, the opponent's, both scores / max_score. Action: Box(-1, 1, (2,)),
    move (toward the net when positive) and jump (when positive). ``bot_share`` (percent): the chance
    an episode plays the right seat with the built-in bot, which decides every tick (its row's actions
    are then ignored).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_slimevolley"}
    PARAMS = ("max_score", "max_steps", "frameskip", "bot_share")
    METRICS = ("left_points", "right_points", "left_win", "right_win", "against_bot", "bot_beaten")

    def __init__(
        self,
        max_score: int = 5,
        max_steps: int = 1500,
        frameskip: int = 2,
        bot_share: int = 0,
        render_mode: str | None = None,
    ):
        self.max_score = check_positive("slimevolley", "max_score", max_score)
        self.max_steps = check_positive("slimevolley", "max_steps", max_steps)
        self.frameskip = check_positive("slimevolley", "frameskip", frameskip)
        self.bot_share = check_positive("slimevolley", "bot_share", bot_share, 0, 100)
        self.render_mode = render_mode
        self.possible_agents = ["left", "right"]
        self.agents: list[str] = []
        self.observation_spaces = {a: spaces.Box(-2.0, 2.0, (OBS,), dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: continuous_action_space(2) for a in self.possible_agents}
        self.rng = Rng()
        self.x, self.y, self.vx, self.vy = [-0.5, 0.5], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
        self.bx = self.by = self.bvx = self.bvy = 0.0
        self.score, self.steps, self.bot = [0, 0], 0, False

    def serve(self, side: int) -> None:
        self.bx = -0.5 if side == 0 else 0.5
        self.by = 1.0
        self.bvx = (self.rng.unit() - 0.5) * 0.02
        self.bvy = self.rng.unit() * 0.02

    def observe(self) -> dict:
        out = {}
        for s, agent in enumerate(self.possible_agents):
            g, o = (1.0 if s == 0 else -1.0), 1 - s
            row = [
                *(self.x[s] * g, self.y[s], self.vx[s] * g * VELOCITY_SCALE, self.vy[s] * VELOCITY_SCALE),
                *(self.bx * g, self.by, self.bvx * g * VELOCITY_SCALE, self.bvy * VELOCITY_SCALE),
                *(self.x[o] * g, self.y[o], self.vx[o] * g * VELOCITY_SCALE, self.vy[o] * VELOCITY_SCALE),
                *(self.score[s] / self.max_score, self.score[o] / self.max_score),
            ]
            out[agent] = np.array(row, dtype=np.float32)
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        self.bot = self.rng.below(100) < self.bot_share
        self.x, self.y, self.vx, self.vy = [-0.5, 0.5], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
        self.score, self.steps = [0, 0], 0
        self.agents = list(self.possible_agents)
        self.serve(self.rng.below(2))
        return self.observe(), {a: {} for a in self.agents}

    def bot_action(self) -> tuple[float, bool]:
        """The built-in right seat, in its mirrored frame: behind the ball when it is on its side or
        coming, else back home; jumps at a low falling ball within reach."""
        sx, bx, bvx = -self.x[1], -self.bx, -self.bvx
        target = bx - 0.04 if (bx < 0.0 or bvx < 0.0) else -0.5
        move = clamp((target - sx) / SPEED, -1.0, 1.0)
        return move, bx < 0.0 and abs(bx - sx) < 0.2 and self.by < 0.5 and self.bvy < 0.0

    def move(self, s: int, move: float, jump: bool) -> None:
        g = 1.0 if s == 0 else -1.0
        lo = -1.0 + SLIME_R if s == 0 else NET_W + SLIME_R
        hi = -NET_W - SLIME_R if s == 0 else 1.0 - SLIME_R
        self.vx[s] = move * SPEED * g
        self.x[s] = clamp(self.x[s] + self.vx[s], lo, hi)
        if jump and self.y[s] == 0.0:
            self.vy[s] = JUMP
        if self.y[s] > 0.0 or self.vy[s] > 0.0:
            self.y[s] = self.y[s] + self.vy[s]
            self.vy[s] = self.vy[s] - SLIME_GRAVITY
            if self.y[s] <= 0.0:
                self.y[s] = self.vy[s] = 0.0

    def bounce(self, s: int) -> None:
        dx, dy, reach = self.bx - self.x[s], self.by - self.y[s], SLIME_R + BALL_R
        d2 = dx * dx + dy * dy
        if not dy > 0.0 or d2 >= reach * reach:
            return
        d = math.sqrt(d2)
        nx, ny = dx / d, dy / d
        self.bx = self.x[s] + nx * reach
        self.by = self.y[s] + ny * reach
        rvx, rvy = self.bvx - self.vx[s], self.bvy - self.vy[s]
        dot = rvx * nx + rvy * ny
        if dot < 0.0:
            rvx = rvx - 2.0 * dot * nx
            rvy = rvy - 2.0 * dot * ny
        self.bvx = rvx + self.vx[s]
        self.bvy = rvy + self.vy[s]
        speed2 = self.bvx * self.bvx + self.bvy * self.bvy
        if speed2 > MAX_BALL_SPEED * MAX_BALL_SPEED:
            scale = MAX_BALL_SPEED / math.sqrt(speed2)
            self.bvx = self.bvx * scale
            self.bvy = self.bvy * scale

    def tick(self, move: list, jump: list) -> int:
        """One tick; the seat that scored (0 or 1) or -1."""
        self.move(0, move[0], jump[0])
        self.move(1, move[1], jump[1])
        before, r = self.bx, BALL_R
        self.bvy = self.bvy - BALL_GRAVITY
        self.bx = self.bx + self.bvx
        self.by = self.by + self.bvy
        if self.bx < -1.0 + r:
            self.bx, self.bvx = 2.0 * (-1.0 + r) - self.bx, -self.bvx
        elif self.bx > 1.0 - r:
            self.bx, self.bvx = 2.0 * (1.0 - r) - self.bx, -self.bvx
        if self.by > CEILING - r:
            self.by, self.bvy = 2.0 * (CEILING - r) - self.by, -self.bvy
        if abs(self.bx) < NET_W + r and self.by < NET_H + r:
            if self.by >= NET_H:  # on the post's top
                if self.bvy < 0.0:
                    self.by, self.bvy = 2.0 * (NET_H + r) - self.by, -self.bvy
            elif before < 0.0:  # against its side: back where it came from
                self.bx, self.bvx = -(NET_W + r), -abs(self.bvx)
            else:
                self.bx, self.bvx = NET_W + r, abs(self.bvx)
        self.bounce(0)
        self.bounce(1)
        if self.by < r:
            return 1 if self.bx < 0.0 else 0
        return -1

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        move, jump = [0.0, 0.0], [False, False]
        for s, agent in enumerate(self.possible_agents):
            q = quantize_actions(actions[agent], name="slimevolley")
            move[s], jump[s] = int(q[0]) / ACTION_ONE, int(q[1]) > 0
        if self.bot:
            move[1], jump[1] = self.bot_action()
        points = [0, 0]
        for _ in range(self.frameskip):
            scorer = self.tick(move, jump)
            if scorer >= 0:
                self.score[scorer] += 1
                points[scorer] += 1
                if self.score[scorer] >= self.max_score:
                    break
                self.serve(1 - scorer)
            if self.bot:
                move[1], jump[1] = self.bot_action()
        self.steps += 1
        over = max(self.score) >= self.max_score
        cut = not over and self.steps >= self.max_steps
        rewards = {a: float(points[s] - points[1 - s]) for s, a in enumerate(self.possible_agents)}
        info: dict = {}
        if over or cut:
            left, right = self.score
            info = {
                "left_points": float(left),
                "right_points": float(right),
                "left_win": float(left > right),
                "right_win": float(right > left),
                "against_bot": float(self.bot),
                "bot_beaten": float(self.bot and left > right),
            }
            self.agents = []
        return self.together(self.observe(), rewards, over, cut, info)

    def render(self) -> str | np.ndarray | None:
        top = CEILING  # the frame shows the whole court: x in [-1, 1], y in [0, 2]
        canvas = Canvas(64, 64)
        sx = lambda x: (x + 1.0) / 2.0
        sy = lambda y: 1.0 - y / top
        canvas.rect(0.0, 1.0 - 1.0 / 64, 1.0, 1.0 / 64, ".")  # the ground
        canvas.rect(sx(-NET_W), sy(NET_H), NET_W, NET_H / top, "#")
        for s, glyph in ((0, "@"), (1, "x")):
            canvas.rect(sx(self.x[s] - SLIME_R), sy(self.y[s] + SLIME_R * 0.7), SLIME_R, SLIME_R * 0.7 / top, glyph)
        canvas.rect(sx(self.bx - BALL_R), sy(self.by + BALL_R), BALL_R, 2 * BALL_R / top, "o")
        who = "bot" if self.bot else "right"
        return canvas.show(self.render_mode, f"left {self.score[0]} : {self.score[1]} {who}")

    def close(self) -> None:
        pass


GAME = Game(
    "slimevolley",
    SlimeVolley,
    solved_return=0.9,
    solved_meaning=(
        "the left seat wins 90% of games to 5 against the built-in bot (bot_share=100) with the policy's most "
        "likely actions (random actions win 0.3%, 0.6 points to 5); in self-play the seats' returns sum to 0, "
        "so training shows the share as episode_bot_beaten / episode_against_bot"
    ),
    # One policy plays both seats (the observations are mirrored). Half the games put the built-in bot on
    # the right, so the policy meets a steady opponent besides itself. Learning, not
    # stepping, is the cost, so Pong's shorter rollouts and fewer, larger minibatches at a higher rate.
    # 15M steps, then games won of 200 against the bot: seed 1 at load 6-8, 398 s, 91% (81% sampling its
    # actions); seed 2 at load 2-3, 133 s, 93.5% (94%).
    config={
        "train": {
            "total_steps": 15_000_000,
            "num_steps": 128,
            "update_epochs": 4,
            "num_minibatches": 4,
            "learning_rate": 1e-3,
        },
        "vec": {"num_envs": 256},
        "env": {"bot_share": 50},
    },
    check_kwargs={"max_score": 2, "max_steps": 120, "bot_share": 30},
    cuda_type="SlimeVolley",
)
