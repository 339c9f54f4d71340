"""Tetris by placements: the readable reference of ``c/tetris_place.h`` (same rules, same draws).

Example:
    >>> env = TetrisPlace()
    >>> obs, _ = env.reset(seed=1)
    >>> sorted(obs), env.action_space
    (['action_mask', 'board', 'heights', 'holes', 'next', 'piece', 'placements'], Discrete(40))
    >>> obs, reward, terminated, truncated, info = env.step(0)  # rotation 0, leftmost cell in column 0
    >>> env.pieces, reward > 0
    (1, True)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Game, check_positive
from pufferbox_ocean.games.tetris import CELLS, FEATURES, HARD_DROP_POINTS, LEARNER, PLACEMENTS, H, Tetris, W, target

ACTIONS = PLACEMENTS  # rotation x the column of the piece's leftmost cell


class TetrisPlace(Tetris):
    """Tetris in the standard 10 x 20 well where each step places one piece: the action is where it lands.

    Action ``a = 10 * rotation + column``: the piece enters at the top turned ``rotation`` times
    clockwise with its leftmost cell in ``column``, hard-drops (2 points a row) and locks; full rows
    clear and score as in :class:`~pufferbox_ocean.games.tetris.Tetris` (guideline points times the
    level). A placement that does not fit at the top is illegal (``action_mask`` 0); played anyway the
    piece drops as it spawned (counted in ``invalid``). The game is over when a new piece does not fit
    at its spawn position; ``max_steps`` caps the pieces. Reward: the score's change. Observation:
    ``action_mask`` (40), ``board`` (200 cells), ``heights`` (each column's stack / 20), ``holes`` (each
    column's empty cells under its top / 20), the ``next`` and current ``piece`` types one-hot, and
    ``placements`` (160): what each action's drop would do, 4 blocks of 40 indexed by action, all 0 for
    an illegal one (an afterstate summary): the rows it fills / 4; the empty cells it covers (in each of
    its columns, those between its lowest cell there and the next locked cell or the floor; at most 4)
    / 4; the stack height at its top cell / 20; the change in bumpiness (the sum of |height difference|
    of neighbouring columns, before rows clear; clipped to [-16, 16]) / 16.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_tetris_place"}
    PARAMS = ("max_steps",)
    METRICS = ("lines", "pieces", "score", "invalid")

    def __init__(self, max_steps: int = 10_000, render_mode: str | None = None):
        super().__init__(
            max_steps=check_positive("tetris_place", "max_steps", max_steps), placements=False, render_mode=render_mode
        )
        box = lambda n: spaces.Box(0.0, 1.0, (n,), dtype=np.float32)
        self.observation_space = spaces.Dict(
            {
                "action_mask": box(ACTIONS),
                "board": box(CELLS),
                "heights": box(W),
                "holes": box(W),
                "next": box(7),
                "piece": box(7),
                "placements": spaces.Box(-1.0, 1.0, (FEATURES * ACTIONS,), dtype=np.float32),
            }
        )
        self.action_space = spaces.Discrete(ACTIONS)

    def observe(self) -> dict:  # type: ignore[override]
        heights, holes = np.zeros(W, dtype=np.float32), np.zeros(W, dtype=np.float32)
        tops = self.tops()
        for c in range(W):
            heights[c] = (H - tops[c]) / H
            holes[c] = sum(1 for r in range(tops[c] + 1, H) if not self.board[r][c]) / H
        types = np.zeros(14, dtype=np.float32)
        types[self.next] = 1.0
        types[7 + self.piece] = 1.0
        mask, placements = self.placement_features()
        return {
            "action_mask": mask,
            "board": np.array(self.board, dtype=np.float32).reshape(-1),
            "heights": heights,
            "holes": holes,
            "next": types[:7],
            "piece": types[7:],
            "placements": placements.reshape(-1),
        }

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # type: ignore[override]
        self.invalid = 0
        return super().reset(seed=seed, options=options)

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:  # type: ignore[override]
        action = int(action)
        if self.legal(action):
            self.rot = action // W
            self.x, self.y = target(self.piece, self.rot, action % W)
        else:
            self.invalid += 1
        reward = 0
        while self.fits(self.rot, self.x, self.y + 1):
            self.y += 1
            reward += HARD_DROP_POINTS
        reward += self.lock()
        self.score += reward
        self.steps += 1
        terminated = self.over
        truncated = not terminated and self.steps >= self.max_steps
        info = {}
        if terminated or truncated:
            info = {
                "lines": float(self.lines),
                "pieces": float(self.pieces),
                "score": float(self.score),
                "invalid": float(self.invalid),
            }
        return self.observe(), float(np.float32(reward)), terminated, truncated, info


GAME = Game(
    "tetris_place",
    TetrisPlace,
    solved_return=10_000.0,
    solved_meaning="scores 10,000 a game: about 33 rows cleared (random legal placements: 390 points, no row, 20 pieces)",
    # The bar is ocean/tetris's: the same game, only the controls differ. Choosing where a piece lands
    # skips the moves that place it: a decision a piece, not 4-6 (ocean/tetris solves it at 4.4-6.1M
    # moves with the same placements observed, 250-370 s). Mastered with the
    # ``placements`` key (each action's drop: rows filled, cells covered, height, bumpiness change):
    # the defaults solve it at 1.61M / 1.46M / 1.46M pieces in 96 / 71 / 57 s (seeds 1-3, load 2;
    # `benchmarks/bench_ocean.py --part solve --games tetris_place --seeds 1`, then `--seeds 2 3`). Without
    # that key (board, heights, holes, pieces only) the same defaults reached 1,960 at 3.2M pieces
    # (193 s, load 2-7) and stayed flat (7.5 rows over 57 pieces a game at 3.6M), and each column's
    # holes made no difference by 1M pieces. A fixed linear score of the key alone (3 x filled - 4 x
    # covered - height - bumpiness change) plays games of thousands of pieces.
    config={
        "train": {"total_steps": 50_000_000, **LEARNER},
        "vec": {"num_envs": 256},
        "policy": {"hidden_size": 256},
    },
    check_kwargs={"max_steps": 20},
    cuda_type="TetrisPlace",
)
