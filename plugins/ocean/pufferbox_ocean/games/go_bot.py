"""Go against a built-in bot: the readable reference of ``c/go_bot.h`` (same rules, same draws).

Example:
    >>> env = GoBot(size=5)
    >>> obs, _ = env.reset(seed=1)
    >>> obs["board"].shape, obs["action_mask"].shape, env.action_space
    ((163,), (82,), Discrete(82))
    >>> _ = env.step(12)  # black in the centre; the bot answers
    >>> int((env.go.board == 1).sum()), int((env.go.board == 2).sum())
    (1, 1)
    >>> _ = env.step(12)  # occupied: refused, the bot waits
    >>> env.illegal, int((env.go.board == 2).sum())
    (1, 1)
"""

from __future__ import annotations

import itertools

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Game, SingleAgentReference, check_positive
from pufferbox_ocean.games.go import BLACK, EMPTY, MAX_CELLS, MAX_MOVES, MAX_SIZE, MIN_SIZE, WHITE, Go
from pufferbox_ocean.rng import Rng

CAPTURE, SAVE, NO_LEVEL = 0, 1, 5  # the bot's levels; 2-4: press an agent group with that many liberties


class GoBot(SingleAgentReference):
    """Go (:class:`~pufferbox_ocean.games.go.Go`'s board and rules) as black against a built-in bot.

    Action ``i < size*size`` plays the point, ``size*size`` passes. An illegal move (occupied, suicide,
    simple ko, off the board) is refused: nothing is played, the bot waits, the step counts (``illegal``).
    After the agent's move or pass the bot replies as white unless the last two plies were passes: it
    plays a liberty of the weakest group in reach, by level: the last liberty of an agent group in atari
    (capture), the last liberty of its own group in atari (save), then a liberty of an agent group with 2,
    3 or 4 liberties; among its legal points of the best level one uniformly at random; with none a
    uniformly random legal point; with no legal point it passes. Two passes in a row or ``max_moves``
    agent steps end the game (terminated), scored by area with ``komi_half_points / 2`` for white: reward
    +1 to a black win, -1 to a loss, 0 to a tie, nothing before. Observation: ``action_mask`` (82, by
    action: black's legal points, the pass always, 0 off the board) and ``board`` (163: black's stones,
    white's stones, cell ``i`` as the action index, then 1 if the last ply was a pass). Defaults: PufferLib's
    Go (7x7, komi 7.5, 3 x 49 agent steps).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_go_bot"}
    PARAMS = ("size", "komi_half_points", "max_moves")
    METRICS = ("win", "draw", "illegal", "margin")
    TRUNCATES = False  # the move limit ends the game by its rules: scored, terminated

    def __init__(self, size: int = 7, komi_half_points: int = 15, max_moves: int = 147, render_mode: str | None = None):
        self.size = check_positive("go_bot", "size", size, MIN_SIZE, MAX_SIZE)
        self.komi_half_points = check_positive("go_bot", "komi_half_points", komi_half_points, 0, 2 * MAX_CELLS)
        self.max_moves = check_positive("go_bot", "max_moves", max_moves, 1, MAX_MOVES)
        self.go = Go(size=size, komi_half_points=komi_half_points, max_moves=1)
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {
                "action_mask": spaces.Box(0.0, 1.0, (MAX_CELLS + 1,), dtype=np.float32),
                "board": spaces.Box(0.0, 1.0, (2 * MAX_CELLS + 1,), dtype=np.float32),
            }
        )
        self.action_space = spaces.Discrete(MAX_CELLS + 1)
        self.rng = Rng()
        self.steps = self.illegal = 0
        self.result = ""

    def legal_for(self, color: int) -> np.ndarray:
        s = self.size
        return np.array([self.go.play(i // s, i % s, color) is not None for i in range(s * s)])

    def ply(self, after: np.ndarray | None) -> None:
        """One ply: the board after a move, or None for a pass."""
        go = self.go
        go.before_last_ply = go.board.copy()
        go.passes = 0 if after is not None else go.passes + 1
        if after is not None:
            go.board = after
        go.moves += 1

    def levels(self) -> list[int]:
        """Each point's level for the bot: the lowest over the groups it is a liberty of."""
        go, s = self.go, self.size
        level, seen = [NO_LEVEL] * (s * s), set()
        for r, c in itertools.product(range(s), repeat=2):
            if go.board[r, c] == EMPTY or (r, c) in seen:
                continue
            stones, liberties = go.group(go.board, r, c)
            seen |= stones
            n = len(liberties)
            if go.board[r, c] == BLACK:
                rank = CAPTURE if n == 1 else n if n <= 4 else NO_LEVEL
            else:
                rank = SAVE if n == 1 else NO_LEVEL
            for lr, lc in liberties:
                level[lr * s + lc] = min(level[lr * s + lc], rank)
        return level

    def bot_point(self) -> int | None:
        legal, level = self.legal_for(WHITE), self.levels()
        points = [i for i in range(self.size**2) if legal[i]]
        if not points:
            return None
        best = min(level[i] for i in points)
        pool = [i for i in points if level[i] == best]
        return pool[self.rng.below(len(pool))]

    def observe(self) -> dict:
        s = self.size
        mask, board = np.zeros(MAX_CELLS + 1, dtype=np.float32), np.zeros(2 * MAX_CELLS + 1, dtype=np.float32)
        mask[: s * s], mask[s * s] = self.legal_for(BLACK), 1.0
        cells = self.go.board.reshape(-1)
        board[: s * s], board[MAX_CELLS : MAX_CELLS + s * s] = cells == BLACK, cells == WHITE
        board[2 * MAX_CELLS] = float(self.go.passes > 0)
        return {"action_mask": mask, "board": board}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.go.reset()
        self.steps = self.illegal = 0
        self.result = ""
        return self.observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        go, s, action = self.go, self.size, int(action)
        after = go.play(action // s, action % s, BLACK) if action < s * s else None
        if action == s * s or after is not None:
            self.ply(after)
            if go.passes < 2:
                point = self.bot_point()
                self.ply(None if point is None else go.play(point // s, point % s, WHITE))
        else:
            self.illegal += 1
        self.steps += 1
        terminated = go.passes >= 2 or self.steps >= self.max_moves
        if not terminated:
            return self.observe(), 0.0, False, False, {}
        margin = go.margin_half_points()
        reward = 1.0 if margin > 0 else -1.0 if margin < 0 else 0.0
        info = {"win": float(margin > 0), "draw": float(margin == 0), "illegal": float(self.illegal), "margin": margin / 2}
        self.result = (
            "black (x) wins" if margin > 0 else "draw" if margin == 0 else "the bot (o) wins"
        ) + f" by {abs(margin) / 2}"
        return self.observe(), reward, True, False, info

    def render(self) -> str | np.ndarray | None:
        self.go.render_mode, self.go.result = self.render_mode, self.result or f"agent step {self.steps}"
        return self.go.render()

    def close(self) -> None:
        pass


GAME = Game(
    "go_bot",
    GoBot,
    solved_return=0.9,
    solved_meaning="wins 95% of games on 7x7 against the built-in bot with komi 7.5 (random legal moves win about 1%)",
    config={
        "train": {"total_steps": 3_000_000, "ent_coef": 0.01},
        "vec": {"num_envs": 256},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"size": 9, "max_moves": 30},
    cuda_type="GoBot",
)
