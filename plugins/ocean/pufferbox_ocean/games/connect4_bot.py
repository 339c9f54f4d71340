"""Connect Four against a searching bot: the readable reference of ``c/connect4_bot.h`` (same rules, same
draws).

Example:
    >>> env = Connect4Bot()
    >>> obs, _ = env.reset(seed=1)
    >>> obs["board"].shape, obs["action_mask"].shape, env.action_space
    ((84,), (7,), Discrete(7))
    >>> _ = env.step(3)  # the agent's disc in the middle column; the bot answers
    >>> int((env.cells == 1).sum()), int((env.cells == 2).sum())
    (1, 1)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Game, SingleAgentReference, check_positive
from pufferbox_ocean.games.connect4 import CELLS, COLS, ROWS, Connect4
from pufferbox_ocean.rng import Rng

MAX_DEPTH = 6
LOSS = -(MAX_DEPTH + 1)  # below any score a legal column can get


def wins(cells: np.ndarray, row: int, col: int, who: int) -> bool:
    """Whether ``who``'s disc at (row, col) completes four in a row."""
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        n = 1
        for sign in (1, -1):
            r, c = row + sign * dr, col + sign * dc
            while 0 <= r < ROWS and 0 <= c < COLS and cells[r, c] == who:
                n, r, c = n + 1, r + sign * dr, c + sign * dc
        if n >= 4:
            return True
    return False


class Connect4Bot(SingleAgentReference):
    """Connect Four (7 x 6, :class:`~pufferbox_ocean.games.connect4.Connect4`'s board) against a built-in bot.

    The agent drops disc 1 and moves first; within the same step the bot drops disc 2. Action: the column.
    A full column loses the game at once (reward -1, ``illegal``); four in a row wins (+1 to the agent, -1
    when the bot makes it); a full board is a draw (0). The bot looks ``bot_depth`` plies ahead (its move
    and the replies) and scores each column by minimax: a side that makes four in a row ``k`` plies into the
    search scores ``bot_depth + 1 - k`` (sooner is better), anything else 0 (the C computes the same scores
    with alpha-beta cuts). It plays one of its best-scored columns uniformly at random. Observation:
    ``action_mask`` (7: the columns with room) and ``board`` (84: the agent's discs on the 42 cells, then
    the bot's; row-major, row 0 the bottom).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_connect4_bot"}
    PARAMS = ("bot_depth",)
    METRICS = ("win", "loss", "draw", "illegal")
    TRUNCATES = False  # every game ends within 21 agent moves

    def __init__(self, bot_depth: int = 4, render_mode: str | None = None):
        self.bot_depth = check_positive("connect4_bot", "bot_depth", bot_depth, 1, MAX_DEPTH)
        self.render_mode = render_mode
        self.observation_space = spaces.Dict(
            {
                "action_mask": spaces.Box(0.0, 1.0, (COLS,), dtype=np.float32),
                "board": spaces.Box(0.0, 1.0, (2 * CELLS,), dtype=np.float32),
            }
        )
        self.action_space = spaces.Discrete(COLS)
        self.rng = Rng()
        self.cells = np.zeros((ROWS, COLS), dtype=np.int64)  # 0 empty, 1 the agent's disc, 2 the bot's
        self.height = np.zeros(COLS, dtype=np.int64)
        self.discs = 0
        self.result = ""

    def drop(self, col: int, who: int) -> bool:
        """Drops ``who``'s disc into ``col`` (which has room); whether it makes four in a row."""
        row = int(self.height[col])
        self.cells[row, col] = who
        self.height[col] += 1
        self.discs += 1
        return wins(self.cells, row, col, who)

    def lift(self, col: int) -> None:
        self.height[col] -= 1
        self.cells[self.height[col], col] = 0
        self.discs -= 1

    def score(self, who: int, depth: int) -> int:
        """Minimax score for ``who`` to move, ``depth`` plies ahead (0: nothing seen)."""
        best = LOSS
        for col in range(COLS):
            if self.height[col] == ROWS:
                continue
            won = self.drop(col, who)
            value = depth if won else 0 if self.discs == CELLS or depth == 1 else -self.score(3 - who, depth - 1)
            self.lift(col)
            best = max(best, value)
            if won:
                break  # nothing scores more than a win now
        return 0 if best == LOSS else best  # no column has room: the board is full

    def bot_column(self) -> int:
        depth, values = self.bot_depth, []
        for col in range(COLS):
            if self.height[col] == ROWS:
                values.append(LOSS)
                continue
            won = self.drop(col, 2)
            values.append(depth if won else 0 if self.discs == CELLS or depth == 1 else -self.score(1, depth - 1))
            self.lift(col)
        best = max(values)
        pool = [col for col in range(COLS) if values[col] == best]
        return pool[self.rng.below(len(pool))]

    def observe(self) -> dict:
        cells = self.cells.reshape(-1)
        board = np.concatenate([cells == 1, cells == 2]).astype(np.float32)
        return {"action_mask": (self.height < ROWS).astype(np.float32), "board": board}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.cells[:] = 0
        self.height[:] = 0
        self.discs = self.illegal = 0
        self.result = ""
        return self.observe(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        col = int(action)
        if self.height[col] == ROWS:
            self.illegal = 1
            return self.end(-1.0, "a full column: the agent loses")
        if self.drop(col, 1):
            return self.end(1.0, "the agent (x) wins")
        if self.discs == CELLS:
            return self.end(0.0, "draw")
        if self.drop(self.bot_column(), 2):
            return self.end(-1.0, "the bot (o) wins")
        if self.discs == CELLS:
            return self.end(0.0, "draw")
        return self.observe(), 0.0, False, False, {}

    def end(self, reward: float, result: str) -> tuple[dict, float, bool, bool, dict]:
        self.result = result
        info = {
            "win": float(reward > 0),
            "loss": float(reward < 0),
            "draw": float(reward == 0),
            "illegal": float(self.illegal),
        }
        return self.observe(), reward, True, False, info

    def render(self) -> str | np.ndarray | None:
        view = Connect4(render_mode=self.render_mode)
        view.cells, view.moves = self.cells, self.discs
        view.result = self.result or f"disc {self.discs + 1}: x (the agent) to move, o the bot"
        return view.render()

    def close(self) -> None:
        pass


GAME = Game(
    "connect4_bot",
    Connect4Bot,
    solved_return=0.9,
    solved_meaning="wins 95% of games against the built-in bot searching 4 plies (random columns win about 1%)",
    config={
        "train": {"total_steps": 10_000_000, "ent_coef": 0.01},
        "vec": {"num_envs": 256},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"bot_depth": 2},
    cuda_type="Connect4Bot",
)
