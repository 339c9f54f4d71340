"""Tetris: the readable reference of ``c/tetris.h`` (same rules, same numbers).

Example:
    >>> env = Tetris()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space
    ((420,), Discrete(6))
    >>> int(obs[200:400].sum())  # the falling piece's four cells
    4
    >>> obs, reward, terminated, truncated, info = env.step(5)  # hard drop: 2 points a row, the piece locks
    >>> reward, env.pieces
    (38.0, 1)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

W, H = 10, 20  # the standard well
CELLS = W * H
LINE_POINTS = (0, 100, 300, 500, 800)  # by rows cleared with one piece, x level (the Tetris guideline's)
SOFT_DROP_POINTS, HARD_DROP_POINTS = 1, 2  # per row dropped
NAMES = "IOTSZJL"
BOX = (4, 2, 3, 3, 3, 3, 3)


def rotations(box: int, cells: list[tuple[int, int]]) -> tuple:
    """The four clockwise turns of ``cells`` (row, col) inside a ``box`` x ``box`` square, sorted."""
    out = []
    for _ in range(4):
        out.append(tuple(sorted(cells)))
        cells = [(c, box - 1 - r) for r, c in cells]
    return tuple(out)


SHAPES = (  # per type, per rotation: the four (row, col) cells inside the box (c/tetris.h's table)
    rotations(4, [(1, 0), (1, 1), (1, 2), (1, 3)]),  # I
    rotations(2, [(0, 0), (0, 1), (1, 0), (1, 1)]),  # O
    rotations(3, [(0, 1), (1, 0), (1, 1), (1, 2)]),  # T
    rotations(3, [(0, 1), (0, 2), (1, 0), (1, 1)]),  # S
    rotations(3, [(0, 0), (0, 1), (1, 1), (1, 2)]),  # Z
    rotations(3, [(0, 0), (1, 0), (1, 1), (1, 2)]),  # J
    rotations(3, [(0, 2), (1, 0), (1, 1), (1, 2)]),  # L
)


class Tetris(SingleAgentReference):
    """Tetris in the standard 10 x 20 well: the seven tetrominoes from a 7-bag; clear rows, do not top out.

    A step applies the action (0 noop, 1 left, 2 right, 3 rotate clockwise, 4 soft drop, 5 hard drop;
    a move that does not fit is ignored; no wall kicks), then gravity: every ``gravity`` steps the piece
    falls a row, or locks when it cannot. A lock clears full rows and spawns the next piece; the game
    is over when it does not fit at the top. Score (the Tetris guideline's): 100, 300, 500, 800 x level
    for 1, 2, 3, 4 rows cleared at once, the level being 1 + (rows cleared before) // 10; 1 point per row
    of soft drop, 2 per row of hard drop (gravity does not speed up with the level). Reward: the score's
    change. Observation: the board (1 locked), the falling piece's cells on the same grid, its type
    one-hot, rotation one-hot, x / 10, y / 20, and the next piece's type one-hot.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_tetris"}
    PARAMS = ("gravity", "max_steps")
    METRICS = ("lines", "pieces", "score")

    def __init__(self, gravity: int = 1, max_steps: int = 10_000, render_mode: str | None = None):
        self.gravity = check_positive("tetris", "gravity", gravity)
        self.max_steps = check_positive("tetris", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-1.0, 1.0, (2 * CELLS + 20,), dtype=np.float32)
        self.action_space = spaces.Discrete(6)
        self.rng = Rng()

    def deal(self) -> int:
        """The next type from the 7-bag, reshuffled (Fisher-Yates) when spent."""
        if self.bag_next >= 7:
            self.bag = list(range(7))
            for i in range(6, 0, -1):
                j = self.rng.below(i + 1)
                self.bag[i], self.bag[j] = self.bag[j], self.bag[i]
            self.bag_next = 0
        self.bag_next += 1
        return self.bag[self.bag_next - 1]

    def cells(self, rot: int, x: int, y: int) -> list[tuple[int, int]]:
        return [(y + r, x + c) for r, c in SHAPES[self.piece][rot]]

    def fits(self, rot: int, x: int, y: int) -> bool:
        return all(0 <= r < H and 0 <= c < W and not self.board[r][c] for r, c in self.cells(rot, x, y))

    def spawn(self) -> None:
        self.piece, self.next = self.next, self.deal()
        self.rot, self.x, self.y, self.fall = 0, (W - BOX[self.piece]) // 2, -SHAPES[self.piece][0][0][0], 0
        if not self.fits(self.rot, self.x, self.y):
            self.over = True

    def observe(self) -> np.ndarray:
        obs = np.zeros(2 * CELLS + 20, dtype=np.float32)
        obs[:CELLS] = np.array(self.board, dtype=np.float32).reshape(-1)
        for r, c in self.cells(self.rot, self.x, self.y):
            if 0 <= r < H and 0 <= c < W:
                obs[CELLS + r * W + c] = 1.0
        tail = 2 * CELLS
        obs[tail + self.piece] = 1.0
        obs[tail + 7 + self.rot] = 1.0
        obs[tail + 11] = self.x / W
        obs[tail + 12] = self.y / H
        obs[tail + 13 + self.next] = 1.0
        return obs

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.board = [[0] * W for _ in range(H)]
        self.bag, self.bag_next = list(range(7)), 7
        self.lines = self.pieces = self.steps = self.score = 0
        self.over = False
        self.next = self.deal()
        self.spawn()
        return self.observe(), {}

    def lock(self) -> int:
        """Write the piece into the board, clear full rows, spawn the next piece: the points scored."""
        for r, c in self.cells(self.rot, self.x, self.y):
            self.board[r][c] = 1
        kept = [row for row in self.board if not all(row)]
        cleared = H - len(kept)
        self.board = [[0] * W for _ in range(cleared)] + kept
        points = LINE_POINTS[cleared] * (1 + self.lines // 10)
        self.lines += cleared
        self.pieces += 1
        self.spawn()
        return points

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = int(action)
        reward, locked = 0, False
        if action == 1 and self.fits(self.rot, self.x - 1, self.y):
            self.x -= 1
        elif action == 2 and self.fits(self.rot, self.x + 1, self.y):
            self.x += 1
        elif action == 3 and self.fits((self.rot + 1) % 4, self.x, self.y):
            self.rot = (self.rot + 1) % 4
        elif action == 4 and self.fits(self.rot, self.x, self.y + 1):
            self.y += 1
            reward += SOFT_DROP_POINTS
        elif action == 5:
            while self.fits(self.rot, self.x, self.y + 1):
                self.y += 1
                reward += HARD_DROP_POINTS
            reward, locked = reward + self.lock(), True
        if not locked:
            self.fall += 1
            if self.fall >= self.gravity:
                self.fall = 0
                if self.fits(self.rot, self.x, self.y + 1):
                    self.y += 1
                else:
                    reward += self.lock()
        self.score += reward
        self.steps += 1
        terminated = self.over
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            info = {"lines": float(self.lines), "pieces": float(self.pieces), "score": float(self.score)}
        return self.observe(), float(np.float32(reward)), terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(2 * W, H)
        for r in range(H):
            for c in range(W):
                if self.board[r][c]:
                    canvas.cell(2 * c, r, "#")
                    canvas.cell(2 * c + 1, r, "#")
        for r, c in self.cells(self.rot, self.x, self.y):
            canvas.cell(2 * c, r, "o")
            canvas.cell(2 * c + 1, r, "o")
        title = f"score {self.score}  lines {self.lines}  level {1 + self.lines // 10}  next {NAMES[self.next]}"
        return canvas.show(self.render_mode, title)


GAME = Game(
    "tetris",
    Tetris,
    solved_return=10_000.0,
    solved_meaning=(
        "scores 10,000 a game: about 33 rows cleared with hard drops, 40 (the guideline's Sprint) by "
        "letting the pieces fall (random actions: 143 points, no row)"
    ),
    # Mastery: a player who clears 40 rows a game. A one-piece-lookahead placement heuristic
    # (tests/test_tetris.py) scores 13,208 at 40 rows and tops out after about 276 (gravity stays 1).
    # The score runs to thousands: rewards are scaled by the running std of the discounted return.
    # Not mastered within 10 minutes on 2 cores: the defaults (seed 1, load 4-6) reach a recent return
    # of 1,000 at 7.4M steps in 534 s, 2.7 rows over 37 pieces a game, and stay there: the policy learns
    # to hard-drop each piece at once (2 points a row) before it learns to place them (its entropy falls
    # to 0.04). A lighter learner (128 steps, 4 epochs x 8 minibatches, 1e-3, ent_coef 0.01) reaches the
    # same plateau at 2.5x the steps per second.
    config={
        "train": {"total_steps": 10_000_000, "stop_on_solve": True, "norm_reward": True},
        "vec": {"num_envs": 256},
    },
    check_kwargs={"max_steps": 50},
    cuda_type="Tetris",
)
