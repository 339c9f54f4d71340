"""Sokoban in small generated rooms: the readable reference of ``c/sokoban.h`` (same rules, same draws).

Example:
    >>> env = Sokoban()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space
    ((675,), Discrete(4))
    >>> sum(env.box) == env.boxes == 2 and sum(b and t for b, t in zip(env.box, env.target)) < 2
    True
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

SIDE = 8
CELLS = SIDE * SIDE
INNER = 6  # the interior is 6 x 6
VIEW = 2 * SIDE - 1  # the observed window, centred on the player
MAX_BOXES = 4
MAX_WALLS = 12
DELTAS = (-SIDE, SIDE, -1, 1)  # actions 0 up, 1 down, 2 left, 3 right


class Sokoban(SingleAgentReference):
    """Sokoban: push every box onto a target in a small generated room (8 x 8, walled).

    Actions 0 up, 1 down, 2 left, 3 right move the player; walking into a box pushes it if the cell
    beyond holds neither a wall nor a box (else nothing moves). Levels are made by playing backwards
    from a solved position (every box on its target), so every level can be solved: ``walls`` random
    interior walls, the targets with their boxes, the player, then ``scramble`` random backward moves
    that pull a box right behind the player along; a level left solved is drawn again. Reward: -0.01 a
    step, +1 per box pushed onto a target, -1 per box pushed off one, +10 for the last one, which ends
    the episode (terminal); else it is truncated after ``max_steps``. Observation: the 15 x 15 window
    centred on the player (the whole room from any cell; outside it is wall), row-major, per cell 1/0
    for wall, box, target (675 floats).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_sokoban"}
    PARAMS = ("boxes", "walls", "scramble", "max_steps")
    METRICS = ("solved", "on_target")

    def __init__(
        self, boxes: int = 2, walls: int = 4, scramble: int = 30, max_steps: int = 100, render_mode: str | None = None
    ):
        self.boxes = check_positive("sokoban", "boxes", boxes, 1, MAX_BOXES)
        self.walls = check_positive("sokoban", "walls", walls, 0, MAX_WALLS)
        self.scramble = check_positive("sokoban", "scramble", scramble, 1, 10_000)
        self.max_steps = check_positive("sokoban", "max_steps", max_steps)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, (3 * VIEW * VIEW,), dtype=np.float32)
        self.action_space = spaces.Discrete(4)
        self.rng = Rng()
        self.wall = [0] * CELLS
        self.box = [0] * CELLS
        self.target = [0] * CELLS
        self.player = self.steps = 0

    def interior(self) -> int:
        k = self.rng.below(INNER * INNER)
        return (1 + k // INNER) * SIDE + 1 + k % INNER

    def on_target(self) -> int:
        return sum(1 for b, t in zip(self.box, self.target) if b and t)

    def generate(self) -> None:
        """Backward play from a solved position until a level with a box off its target comes out."""
        while True:
            self.wall = [int(c // SIDE in (0, SIDE - 1) or c % SIDE in (0, SIDE - 1)) for c in range(CELLS)]
            self.box = [0] * CELLS
            self.target = [0] * CELLS
            for _ in range(self.walls):
                self.wall[self.interior()] = 1
            for _ in range(self.boxes):
                c = self.interior()
                while self.wall[c] or self.target[c]:
                    c = self.interior()
                self.target[c] = self.box[c] = 1
            p = self.interior()
            while self.wall[p] or self.box[p]:
                p = self.interior()
            for _ in range(self.scramble):
                d = DELTAS[self.rng.below(4)]
                if self.wall[p + d] or self.box[p + d]:
                    continue
                if self.box[p - d]:  # the box behind follows: a push, played backwards
                    self.box[p - d], self.box[p] = 0, 1
                p += d
            self.player = p
            if self.on_target() < self.boxes:
                return

    def observe(self) -> np.ndarray:
        room = np.stack([self.wall, self.box, self.target], axis=1).astype(np.float32).reshape(SIDE, SIDE, 3)
        obs = np.zeros((VIEW + SIDE - 1, VIEW + SIDE - 1, 3), dtype=np.float32)
        obs[..., 0] = 1.0  # outside the room: wall
        obs[SIDE - 1 : 2 * SIDE - 1, SIDE - 1 : 2 * SIDE - 1] = room
        r, c = divmod(self.player, SIDE)
        return obs[r : r + VIEW, c : c + VIEW].reshape(-1).copy()

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.generate()
        self.steps = 0
        return self.observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        d = DELTAS[int(action)]
        nxt = self.player + d
        cents = -1  # the reward in hundredths
        if not self.wall[nxt]:
            if not self.box[nxt]:
                self.player = nxt
            elif not self.wall[nxt + d] and not self.box[nxt + d]:
                self.box[nxt], self.box[nxt + d] = 0, 1
                cents += 100 * (self.target[nxt + d] - self.target[nxt])
                self.player = nxt
        on = self.on_target()
        solved = on == self.boxes
        if solved:
            cents += 1000
        self.steps += 1
        truncated = not solved and self.steps >= self.max_steps
        info = {"solved": float(solved), "on_target": float(on)} if solved or truncated else {}
        return self.observe(), float(np.float32(cents / 100)), solved, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(SIDE, SIDE)
        for c in range(CELLS):
            glyph = (
                "#" if self.wall[c] else ("*" if self.target[c] else "o") if self.box[c] else "." if self.target[c] else " "
            )
            canvas.cell(c % SIDE, c // SIDE, glyph)
        canvas.cell(self.player % SIDE, self.player // SIDE, "@")
        return canvas.show(self.render_mode, f"step {self.steps}  on target {self.on_target()}/{self.boxes}")


GAME = Game(
    "sokoban",
    Sokoban,
    solved_return=9.0,
    solved_meaning=(
        "a mean return of 9 on 2-box rooms: about 85% of levels solved within 100 steps (random actions: 1.7, 25% solved)"
    ),
    config={
        "train": {
            "total_steps": 20_000_000,
            "stop_on_solve": True,
            "solve_window": 2048,
            "num_steps": 64,
            "num_minibatches": 8,
            "update_epochs": 4,
            "learning_rate": 1e-3,
            "ent_coef": 0.01,
        },
        "vec": {"num_envs": 256},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={"boxes": 2, "walls": 4, "scramble": 30, "max_steps": 30},
    cuda_type="Sokoban",
)
