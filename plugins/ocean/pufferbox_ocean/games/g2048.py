"""2048 on a 4 x 4 board: the readable reference of ``c/g2048.h`` (same rules, same draws).

Example:
    >>> env = G2048()
    >>> obs, _ = env.reset(seed=1)
    >>> obs["board"].shape, obs["action_mask"].shape, env.action_space
    ((288,), (4,), Discrete(4))
    >>> sum(1 for e in env.cells if e)  # a new game starts with two tiles
    2
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

SIDE = 4
CELLS = SIDE * SIDE
LEVELS = 18  # exponents 0 (empty) .. 17 (131072, the largest tile a 4 x 4 board can hold)
UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3
TILE = 45  # rgb_array: pixels per cell


def index(action: int, line: int, j: int) -> int:
    """The board index of position ``j`` (0: the side moved to) of line ``line`` for ``action``."""
    if action == UP:
        return j * SIDE + line
    if action == DOWN:
        return (SIDE - 1 - j) * SIDE + line
    if action == LEFT:
        return line * SIDE + j
    return line * SIDE + SIDE - 1 - j


def slide_line(values: list[int]) -> tuple[list[int], int]:
    """One line read from the side moved to: the tiles packed there, equal neighbours merged once; the score."""
    out: list[int] = []
    merged: list[bool] = []
    score = 0
    for v in values:
        if v == 0:
            continue
        if out and out[-1] == v and not merged[-1]:
            out[-1] = v + 1
            merged[-1] = True
            score += 1 << (v + 1)
        else:
            out.append(v)
            merged.append(False)
    return out + [0] * (SIDE - len(out)), score


class G2048(SingleAgentReference):
    """2048: slide the tiles of a 4 x 4 board; two equal tiles that meet merge into their sum.

    Actions 0 up, 1 down, 2 left, 3 right slide every tile as far as it goes; in each line, read from
    the side moved to, two equal neighbouring tiles merge into one, each tile at most once per move
    (``2 2 2 2`` left gives ``4 4 . .``). Reward: the merged tiles' values (the game's score). A move
    that changes the board puts a new tile on a random empty cell (a 2 with probability 0.9, else a 4);
    one that changes nothing is masked out by the observation's ``action_mask`` and, played anyway, is
    a no-op (reward 0, counted in ``invalid``). The game ends (terminal) when no move changes the
    board; else it is truncated after ``max_steps`` steps. Observation: ``action_mask`` (4 floats) and
    ``board`` (16 cells row-major, each one-hot over the exponents 0 = empty to 17).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_g2048"}
    PARAMS = ("max_steps",)
    METRICS = ("max_tile", "invalid", "moves")

    def __init__(self, max_steps: int = 10_000, render_mode: str | None = None):
        self.max_steps = check_positive("g2048", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {
                "action_mask": spaces.Box(0.0, 1.0, (4,), dtype=np.float32),
                "board": spaces.Box(0.0, 1.0, (CELLS * LEVELS,), dtype=np.float32),
            }
        )
        self.action_space = spaces.Discrete(4)
        self.rng = Rng()
        self.cells = [0] * CELLS
        self.score = 0

    def can_move(self, action: int) -> bool:
        """Whether ``action`` changes the board: a gap before a tile, or two equal tiles touching."""
        for line in range(SIDE):
            for j in range(SIDE - 1):
                here, nxt = self.cells[index(action, line, j)], self.cells[index(action, line, j + 1)]
                if nxt != 0 and (here == 0 or here == nxt):
                    return True
        return False

    def slide(self, action: int) -> int:
        score = 0
        for line in range(SIDE):
            out, gained = slide_line([self.cells[index(action, line, j)] for j in range(SIDE)])
            score += gained
            for j in range(SIDE):
                self.cells[index(action, line, j)] = out[j]
        return score

    def spawn(self) -> None:
        """A 2 (9 in 10) or a 4 on the k-th empty cell (row-major), k uniform."""
        empty = [c for c in range(CELLS) if self.cells[c] == 0]
        k = self.rng.below(len(empty))
        self.cells[empty[k]] = 1 if self.rng.below(10) < 9 else 2

    def observe(self) -> dict:
        self.legal = [self.can_move(a) for a in range(4)]
        board = np.zeros((CELLS, LEVELS), dtype=np.float32)
        board[np.arange(CELLS), self.cells] = 1.0
        return {"action_mask": np.array(self.legal, dtype=np.float32), "board": board.reshape(-1)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.cells = [0] * CELLS
        self.steps = self.invalid = self.moves = self.score = 0
        self.spawn()
        self.spawn()
        return self.observe(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        action = int(action)
        gained = 0
        if self.legal[action]:
            gained = self.slide(action)
            self.spawn()
            self.moves += 1
        else:
            self.invalid += 1
        self.steps += 1
        self.score += gained
        obs = self.observe()
        terminated = not any(self.legal)
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            info = {"max_tile": float(1 << max(self.cells)), "invalid": float(self.invalid), "moves": float(self.moves)}
        return obs, float(gained), terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "ansi":
            rows = [
                " ".join(f"{(1 << e) if e else '.':>6}" for e in self.cells[r * SIDE : (r + 1) * SIDE]) for r in range(SIDE)
            ]
            return "\n".join([f"score {self.score}", *rows])
        if self.render_mode == "rgb_array":
            frame = np.zeros((SIDE * TILE, SIDE * TILE, 3), dtype=np.uint8)
            frame[:] = (90, 80, 70)
            for c, e in enumerate(self.cells):
                r, col = divmod(c, SIDE)
                # empty: grey; then from pale yellow (2) through orange and red to purple (large tiles)
                color = (150, 140, 130) if e == 0 else (255, max(0, 240 - 22 * e), max(0, 200 - 40 * e) if e < 9 else 160)
                frame[r * TILE + 2 : (r + 1) * TILE - 2, col * TILE + 2 : (col + 1) * TILE - 2] = color
            return frame
        return None


GAME = Game(
    "g2048",
    G2048,
    solved_return=2500.0,
    solved_meaning="scores 2,500 per game (about a 256 tile; random legal moves: about 1,000)",
    config={
        "train": {"total_steps": 20_000_000, "stop_on_solve": True, "norm_reward": True},
        "vec": {"num_envs": 256},
    },
    check_kwargs={"max_steps": 100},
    cuda_type="G2048",
)
