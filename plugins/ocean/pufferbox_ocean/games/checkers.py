"""English draughts (checkers) by self-play: the readable reference of ``c/checkers.h`` (same rules, same observations).

Two agents, fixed seats: ``first`` moves first (its men start on rows 5-7 and move up), ``second``
answers (rows 0-2, moving down); each trains its own policy (the groups ``first`` and ``second``). Both
act every step; only the mover's action counts, and the observation's ``action_mask`` holds its legal
actions.

Example:
    >>> env = Checkers()
    >>> obs, _ = env.reset(seed=1)
    >>> obs["first"]["action_mask"].shape, obs["first"]["board"].shape, env.action_space("second")
    ((128,), (131,), Discrete(128))
    >>> [int(a) for a in np.nonzero(obs["first"]["action_mask"])[0]]  # square * 4 + direction
    [81, 84, 85, 88, 89, 92, 93]
    >>> _, rewards, _, _, _ = env.step({"first": 81, "second": 0})  # square 20 (row 5, column 0) up-right
    >>> env.mover, env.board[4, 1]
    (1, 1)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, MultiAgentReference, check_positive
from pufferbox_ocean.rng import Rng

SIDE, SQUARES = 8, 32
ACTIONS = 4 * SQUARES
BOARD = 4 * SQUARES + 3
MAX_PLIES = 10_000
DIRECTIONS = ((-1, -1), (-1, 1), (1, -1), (1, 1))  # (row, column) steps: up-left, up-right, down-left, down-right
EMPTY, FIRST_MAN, FIRST_KING, SECOND_MAN, SECOND_KING = range(5)


def square(k: int) -> tuple[int, int]:
    """Dark square ``k`` (row-major over the squares with row + column odd) as (row, column)."""
    row = k // 4
    return row, 2 * (k % 4) + 1 - row % 2


class Checkers(MultiAgentReference):
    """English draughts on 8x8 by two policies: men and kings, mandatory jumps, multi-jump moves.

    Action ``square * 4 + direction`` (32 dark squares row-major; 0 up-left, 1 up-right, 2 down-left,
    3 down-right) moves that square's piece one step, or jumps over an opponent's piece (removed). Men
    go forward only, kings both ways. A jump is compulsory when one is possible; a piece that has jumped
    must jump on while it can (the same player moves again next step); a man reaching the far row is
    crowned and the move ends. An illegal action is replaced by the lowest-numbered legal one (counted in
    ``illegal``); the waiting agent's mask allows only action 0. A player with no legal move loses (+1 /
    -1); ``draw_plies`` steps without a capture or a crowning draw the game (0 each); after
    ``max_plies`` steps it is truncated. Observation: ``action_mask`` (128 int8) and ``board`` (131 floats,
    from the agent's side): its men, its kings, the opponent's men, the opponent's kings (32 squares
    each), 1 if it is its turn, 1 if the mover is mid multi-jump, quiet steps / ``draw_plies``.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_checkers"}
    PARAMS = ("draw_plies", "max_plies")
    METRICS = ("first_win", "second_win", "draw", "illegal", "plies")

    def __init__(self, draw_plies: int = 80, max_plies: int = 400, render_mode: str | None = None):
        self.draw_plies = check_positive("checkers", "draw_plies", draw_plies, 1, MAX_PLIES)
        self.max_plies = check_positive("checkers", "max_plies", max_plies, 1, MAX_PLIES)
        self.render_mode = render_mode
        self.possible_agents = ["first", "second"]
        self.agents: list[str] = []
        space = spaces.Dict(
            {
                "action_mask": spaces.Box(0, 1, (ACTIONS,), dtype=np.int8),
                "board": spaces.Box(0.0, 1.0, (BOARD,), dtype=np.float32),
            }
        )
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(ACTIONS) for a in self.possible_agents}
        self.rng = Rng()  # unused: the game has no chance; kept like every Ocean game's
        self.board = np.zeros((SIDE, SIDE), dtype=np.int64)
        self.mover = 0
        self.chain: tuple[int, int] | None = None  # the (row, column) of a piece that must jump on
        self.plies = self.quiet = self.illegal = 0
        self.legal = np.zeros(ACTIONS, dtype=bool)
        self.jumping = False
        self.result = ""  # how the last game ended, for render()

    def at(self, row: int, col: int) -> int | None:
        """The piece at (row, col), or None off the board."""
        return int(self.board[row, col]) if 0 <= row < SIDE and 0 <= col < SIDE else None

    def piece_moves(self, k: int, jumps: bool) -> None:
        row, col = square(k)
        piece = self.board[row, col]
        king = piece in (FIRST_KING, SECOND_KING)
        directions = range(4) if king else ((0, 1) if self.mover == 0 else (2, 3))
        for d in directions:
            dr, dc = DIRECTIONS[d]
            nxt = self.at(row + dr, col + dc)
            if jumps:
                ok = nxt not in (None, EMPTY) and (nxt >= SECOND_MAN) != (self.mover == 1)
                ok = ok and self.at(row + 2 * dr, col + 2 * dc) == EMPTY
            else:
                ok = nxt == EMPTY
            if ok:
                self.legal[4 * k + d] = True

    def generate(self) -> None:
        """The mover's legal actions: the chained piece's jumps, else every jump, else every step."""
        self.legal[:] = False
        self.jumping = True
        if self.chain is not None:
            self.piece_moves([square(k) for k in range(SQUARES)].index(self.chain), True)
            return
        for jumps in (True, False):
            self.jumping = jumps
            for k in range(SQUARES):
                piece = self.board[square(k)]
                if piece != EMPTY and (piece >= SECOND_MAN) == (self.mover == 1):
                    self.piece_moves(k, jumps)
            if self.legal.any():
                return

    def observe(self, seat: int) -> dict:
        if seat == self.mover:
            mask = self.legal.astype(np.int8)
        else:
            mask = np.zeros(ACTIONS, dtype=np.int8)
            mask[0] = 1.0
        pieces = np.array([self.board[square(k)] for k in range(SQUARES)])
        own, opp = (FIRST_MAN, SECOND_MAN) if seat == 0 else (SECOND_MAN, FIRST_MAN)
        planes = [pieces == own, pieces == own + 1, pieces == opp, pieces == opp + 1]
        flags = [float(seat == self.mover), float(self.chain is not None), self.quiet / self.draw_plies]
        board = np.concatenate([*planes, flags]).astype(np.float32)
        return {"action_mask": mask, "board": board}

    def observations(self) -> dict:
        return {a: self.observe(i) for i, a in enumerate(self.possible_agents)}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = Rng(seed)
        self.board[:] = EMPTY
        for k in range(SQUARES):
            if k < 12:
                self.board[square(k)] = SECOND_MAN
            elif k >= 20:
                self.board[square(k)] = FIRST_MAN
        self.plies = self.quiet = self.illegal = 0
        self.mover, self.chain = 0, None
        self.generate()
        self.agents = list(self.possible_agents)
        self.result = ""
        return self.observations(), {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        mover = self.mover
        action = int(actions[self.possible_agents[mover]])
        if not self.legal[action]:
            self.illegal += 1
            action = int(np.nonzero(self.legal)[0][0])
        (row, col), (dr, dc) = square(action // 4), DIRECTIONS[action % 4]
        reach = 2 if self.jumping else 1
        to = (row + reach * dr, col + reach * dc)
        piece = int(self.board[row, col])
        self.board[row, col] = EMPTY
        if self.jumping:
            self.board[row + dr, col + dc] = EMPTY
        promoted = (piece == FIRST_MAN and to[0] == 0) or (piece == SECOND_MAN and to[0] == SIDE - 1)
        self.board[to] = piece + 1 if promoted else piece
        self.plies += 1
        self.quiet = 0 if self.jumping or promoted else self.quiet + 1
        self.chain = None
        if self.jumping and not promoted:
            self.chain = to  # jump on if this piece can
            self.generate()
            if not self.legal.any():
                self.chain = None
        if self.chain is None:
            self.mover = 1 - mover
            self.generate()
        lost = not self.legal.any()
        drawn = not lost and self.quiet >= self.draw_plies
        terminated = lost or drawn
        truncated = not terminated and self.plies >= self.max_plies
        rewards = {a: 0.0 for a in self.possible_agents}
        if lost:
            rewards[self.possible_agents[self.mover]] = -1.0
            rewards[self.possible_agents[1 - self.mover]] = 1.0
        observations = self.observations()
        info: dict = {}
        if terminated or truncated:
            info = {
                "first_win": float(lost and self.mover == 1),
                "second_win": float(lost and self.mover == 0),
                "draw": float(drawn),
                "illegal": float(self.illegal),
                "plies": float(self.plies),
            }
            winner = self.possible_agents[1 - self.mover]
            self.result = f"{winner} wins" if lost else ("draw" if drawn else "truncated")
            self.agents = []
        return self.together(observations, rewards, terminated, truncated, info)

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(SIDE, SIDE)
        for row in range(SIDE):
            for col in range(SIDE):
                canvas.cell(col, row, ("." if (row + col) % 2 else " ", "x", "*", "o", "@")[self.board[row, col]])
        status = self.result or f"{self.possible_agents[self.mover]} to move (x first, o second; kings * @)"
        return canvas.show(self.render_mode, f"ply {self.plies}: {status}")

    def close(self) -> None:
        pass


GAME = Game(
    "checkers",
    Checkers,
    solved_return=0.8,
    solved_meaning=(
        "as either seat, a mean return of 0.8 or more against uniformly random legal moves "
        "(`pufferbox eval ocean/checkers --opponent random --side first|second`: about 90% of games won; random "
        "against random: first wins 48%, second 51%, 0.4% drawn, 72 plies a game); in self-play the seats' "
        "returns sum to 0"
    ),
    # As Connect Four's: in half of the training games one seat plays uniformly random legal moves, untrained
    # (league.random_opponent), so both seats meet careless play as well as their own.
    config={
        "train": {
            "total_steps": 3_000_000,
            "ent_coef": 0.01,
            "num_steps": 128,
            "update_epochs": 4,
            "num_minibatches": 8,
            "learning_rate": 1e-3,
        },
        "vec": {"num_envs": 256},
        "policy": {"hidden_size": 128},
        "league": {"random_opponent": 0.5},
    },
    groups={"first": ["first"], "second": ["second"]},
    check_kwargs={"draw_plies": 30, "max_plies": 60},
    cuda_type="Checkers",
)
