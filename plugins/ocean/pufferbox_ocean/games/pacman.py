"""Pac-Man: the readable reference of ``c/pacman.h`` (same rules, same draws).

Example:
    >>> env = Pacman()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space, env.pellets
    ((206,), Discrete(4), 150)
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from pufferbox_ocean.games.common import Canvas, Game, SingleAgentReference, check_positive
from pufferbox_ocean.rng import Rng

# '#' wall, '-' the house's door, '.' pellet, 'o' power pellet, 'P' Pac-Man's start, 'B' the cell above
# the door (Blinky's start, where ghosts leave the house), '1' '2' '3' Pinky's, Inky's and Clyde's places
CLASSIC = (
    "############################",
    "#............##............#",
    "#.####.#####.##.#####.####.#",
    "#o####.#####.##.#####.####o#",
    "#.####.#####.##.#####.####.#",
    "#..........................#",
    "#.####.##.########.##.####.#",
    "#.####.##.########.##.####.#",
    "#......##....##....##......#",
    "######.##### ## #####.######",
    "######.##### ## #####.######",
    "######.##    B     ##.######",
    "######.## ###--### ##.######",
    "######.## #      # ##.######",
    "      .   #2 1 3 #   .      ",
    "######.## #      # ##.######",
    "######.## ######## ##.######",
    "######.##          ##.######",
    "######.## ######## ##.######",
    "######.## ######## ##.######",
    "#............##............#",
    "#.####.#####.##.#####.####.#",
    "#.####.#####.##.#####.####.#",
    "#o..##.......P .......##..o#",
    "###.##.##.########.##.##.###",
    "###.##.##.########.##.##.###",
    "#......##....##....##......#",
    "#.##########.##.##########.#",
    "#.##########.##.##########.#",
    "#..........................#",
    "############################",
)
SMALL = (
    "###################",
    "#........#........#",
    "#o##.###.#.###.##o#",
    "#.................#",
    "#.##.#.#####.#.##.#",
    "#....#...#...#....#",
    "####.### # ###.####",
    "####.#   B   #.####",
    "####.# ##-## #.####",
    "    .  #213#  .    ",
    "####.# ##### #.####",
    "####.#       #.####",
    "####.# ##### #.####",
    "#........#........#",
    "#.##.###.#.###.##.#",
    "#o.#.....P.....#.o#",
    "##.#.#.#####.#.#.##",
    "#....#...#...#....#",
    "#.######.#.######.#",
    "#.................#",
    "###################",
)
MAZES = {"classic": CLASSIC, "small": SMALL}  # in the C game's order (maze_index)
EMPTY, WALL, PELLET, POWER = 0, 1, 2, 3
HOUSE, CHASING, FRIGHTENED = 0, 1, 2  # ghost states
UP, LEFT, DOWN, RIGHT = 0, 1, 2, 3
DX, DY = (0, -1, 0, 1), (-1, 0, 1, 0)
GHOSTS = 4  # Blinky, Pinky, Inky, Clyde
VIEW = 5  # the window's radius
SIDE = 2 * VIEW + 1
EATEN_WAIT = 10  # steps an eaten ghost waits in the house
CELL_VALUE = {WALL: -1.0, EMPTY: 0.0, PELLET: 0.5, POWER: 1.0}
BLOCKS_W, BLOCKS_H = 7, 8  # the pellet map: blocks of 4 x 4 cells


class Pacman(SingleAgentReference):
    """Pac-Man: eat every pellet of the maze while four ghosts hunt you.

    Actions: 0 up, 1 left, 2 down, 3 right (Pac-Man turns when that way is open, else keeps going). A
    pellet scores 10, a power pellet 50 and frightens the ghosts for ``frightened_steps`` (eating them:
    200, 400, 800, 1600); the last pellet clears the level and the next starts (every pellet back); a
    chasing ghost costs a life (none left: the game ends). Ghosts follow the arcade's scatter/chase targets (see
    ``c/pacman.h`` for the rules and simplifications). Reward: points / 100. ``maze``: "small" (19x21,
    150 pellets) or "classic" (the arcade's 28x31, 244). Observation (206 floats): the 11x11 cells around
    Pac-Man, its state, each ghost's offset and state, and a map of the
    pellets left in blocks of 4 x 4 cells.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "name": "ocean_pacman"}
    PARAMS = (
        "lives",
        "frightened_steps",
        "scatter_steps",
        "chase_steps",
        "mode_switches",
        "ghost_speed",
        "release_steps",
        "max_steps",
        "maze_index",
    )
    METRICS = ("score", "levels", "pellets", "ghosts")

    def __init__(
        self,
        maze: str = "small",
        lives: int = 3,
        frightened_steps: int = 40,
        scatter_steps: int = 50,
        chase_steps: int = 150,
        mode_switches: int = 7,
        ghost_speed: int = 90,
        release_steps: int = 20,
        max_steps: int = 2000,
        render_mode: str | None = None,
    ):
        if maze not in MAZES:
            raise ValueError(f"pacman: maze must be one of {sorted(MAZES)}, got {maze!r}")
        self.maze = maze
        self.maze_index = list(MAZES).index(maze)
        self.lives = check_positive("pacman", "lives", lives, 1, 9)
        self.frightened_steps = check_positive("pacman", "frightened_steps", frightened_steps)
        self.scatter_steps = check_positive("pacman", "scatter_steps", scatter_steps)
        self.chase_steps = check_positive("pacman", "chase_steps", chase_steps)
        self.mode_switches = check_positive("pacman", "mode_switches", mode_switches, 0)
        self.ghost_speed = check_positive("pacman", "ghost_speed", ghost_speed, 1, 100)
        self.release_steps = check_positive("pacman", "release_steps", release_steps, 0)
        self.max_steps = check_positive("pacman", "max_steps", max_steps)
        self.render_mode = render_mode
        self.layout = MAZES[maze]
        self.height, self.width = len(self.layout), len(self.layout[0])
        where = {c: (x, y) for y, row in enumerate(self.layout) for x, c in enumerate(row) if c in "PB123"}
        self.start, self.exit = where["P"], where["B"]
        self.homes = [where["1"], where["1"], where["2"], where["3"]]  # an eaten Blinky waits mid-house
        size = SIDE * SIDE + 9 + 5 * GHOSTS + BLOCKS_W * BLOCKS_H
        self.observation_space = spaces.Box(-1.0, 1.0, (size,), dtype=np.float32)
        self.action_space = spaces.Discrete(4)
        self.rng = Rng()
        self.cells: list[list[int]] = []
        self.total = self.pellets = self.score = self.eaten = self.levels = self.clock = self.played = 0
        self.lives_left = self.lives
        self.round()

    def round(self) -> None:
        """Pac-Man and the ghosts back at their start (after a life is lost, and at a new game)."""
        (self.px, self.py), self.pdir = self.start, LEFT
        self.phase, self.phase_left = 0, self.scatter_steps
        self.frightened_left = self.combo = 0
        self.gx = [self.exit[0]] + [self.homes[i][0] for i in range(1, GHOSTS)]
        self.gy = [self.exit[1]] + [self.homes[i][1] for i in range(1, GHOSTS)]
        self.gdir = [LEFT, UP, UP, UP]
        self.gstate = [CHASING, HOUSE, HOUSE, HOUSE]
        self.gwait = [i * self.release_steps for i in range(GHOSTS)]
        self.greverse = [False] * GHOSTS

    def open(self, x: int, y: int, d: int) -> bool:
        nx, ny = (x + DX[d]) % self.width, y + DY[d]
        return 0 <= ny < self.height and self.cells[ny][nx] != WALL

    def moved(self, x: int, y: int, d: int) -> tuple[int, int]:
        return (x + DX[d]) % self.width, y + DY[d]

    def observe(self) -> np.ndarray:
        w, h = self.width, self.height
        obs = []
        for dy in range(-VIEW, VIEW + 1):
            y = self.py + dy
            if not 0 <= y < h:
                obs += [-1.0] * SIDE
                continue
            obs += [CELL_VALUE[self.cells[y][(self.px + dx) % w]] for dx in range(-VIEW, VIEW + 1)]
        inv_w, inv_h = 1.0 / w, 1.0 / h
        obs += [self.px * inv_w, self.py * inv_h] + [1.0 if self.pdir == d else 0.0 for d in range(4)]
        obs += [self.frightened_left * (1.0 / self.frightened_steps), self.lives_left * (1.0 / self.lives)]
        obs += [self.pellets * (1.0 / self.total)]
        for i in range(GHOSTS):
            obs += [(self.gx[i] - self.px) * inv_w, (self.gy[i] - self.py) * inv_h]
            obs += [float(self.gstate[i] == s) for s in (HOUSE, CHASING, FRIGHTENED)]
        blocks = [0] * (BLOCKS_W * BLOCKS_H)
        for y, row in enumerate(self.cells):
            for x, c in enumerate(row):
                if c in (PELLET, POWER):
                    blocks[(y >> 2) * BLOCKS_W + (x >> 2)] += 1
        obs += [b * 0.0625 for b in blocks]
        return np.array(obs, dtype=np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = Rng(seed)
        self.fill()
        self.lives_left = self.lives
        self.score = self.eaten = self.levels = self.clock = self.played = 0
        self.round()
        return self.observe(), {}

    def fill(self) -> None:
        """Every pellet back in place (a new game or the next level)."""
        kinds = {"#": WALL, "-": WALL, ".": PELLET, "o": POWER}
        self.cells = [[kinds.get(c, EMPTY) for c in row] for row in self.layout]
        self.total = self.pellets = sum(c in (PELLET, POWER) for row in self.cells for c in row)

    def meet(self, old: tuple[list[int], list[int], int, int] | None) -> tuple[bool, int]:
        """Pac-Man meets the ghosts outside the house on its cell (with ``old`` positions, also one it
        swapped cells with): eats the frightened ones; returns (caught by a chasing one, points)."""
        caught, points = False, 0
        for i in range(GHOSTS):
            if self.gstate[i] == HOUSE:
                continue
            met = (self.gx[i], self.gy[i]) == (self.px, self.py)
            if old is not None:
                old_gx, old_gy, old_px, old_py = old
                met = met or ((self.gx[i], self.gy[i]) == (old_px, old_py) and (old_gx[i], old_gy[i]) == (self.px, self.py))
            if not met:
                continue
            if self.gstate[i] == FRIGHTENED:
                points += 200 << min(self.combo, 3)
                self.combo += 1
                self.eaten += 1
                self.gstate[i] = HOUSE
                self.gx[i], self.gy[i] = self.homes[i]
                self.gdir[i], self.gwait[i], self.greverse[i] = UP, EATEN_WAIT, False
            else:
                caught = True
        return caught, points

    def target(self, i: int) -> tuple[int, int]:
        corner = [(self.width - 3, -4), (2, -4), (self.width - 1, self.height), (0, self.height)][i]
        scatter = self.phase % 2 == 0
        if scatter or (i == 3 and (self.gx[3] - self.px) ** 2 + (self.gy[3] - self.py) ** 2 <= 64):
            return corner
        if i == 1:
            return self.px + 4 * DX[self.pdir], self.py + 4 * DY[self.pdir]
        if i == 2:
            return 2 * (self.px + 2 * DX[self.pdir]) - self.gx[0], 2 * (self.py + 2 * DY[self.pdir]) - self.gy[0]
        return self.px, self.py

    def direction(self, i: int, tx: int, ty: int) -> int:
        back = (self.gdir[i] + 2) % 4
        options = [d for d in range(4) if d != back and self.open(self.gx[i], self.gy[i], d)]
        if not options:
            return back
        if len(options) == 1:
            return options[0]
        if self.gstate[i] == FRIGHTENED:
            return options[self.rng.below(len(options))]
        dist = [(self.gx[i] + DX[d] - tx) ** 2 + (self.gy[i] + DY[d] - ty) ** 2 for d in options]
        return options[dist.index(min(dist))]

    def move_ghosts(self) -> None:
        t, s = self.clock, self.ghost_speed
        normal = (t * s) // 100 != ((t - 1) * s) // 100
        slow = (t * s) // 200 != ((t - 1) * s) // 200
        for i in range(GHOSTS):
            if self.gstate[i] == HOUSE:
                self.gwait[i] -= 1
                if self.gwait[i] <= 0:
                    self.gstate[i] = CHASING
                    self.gx[i], self.gy[i] = self.exit
                    self.gdir[i] = LEFT
                continue
            if not (slow if self.gstate[i] == FRIGHTENED else normal):
                continue
            if self.greverse[i]:
                self.greverse[i] = False
                back = (self.gdir[i] + 2) % 4
                if self.open(self.gx[i], self.gy[i], back):
                    self.gdir[i] = back
                    self.gx[i], self.gy[i] = self.moved(self.gx[i], self.gy[i], back)
                    continue
            d = self.direction(i, *self.target(i))
            self.gdir[i] = d
            if self.open(self.gx[i], self.gy[i], d):
                self.gx[i], self.gy[i] = self.moved(self.gx[i], self.gy[i], d)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = int(action)
        points, ended = 0, False
        self.clock += 1
        self.played += 1
        if self.frightened_left > 0:
            self.frightened_left -= 1
            if self.frightened_left == 0:
                self.combo = 0
                self.gstate = [CHASING if s == FRIGHTENED else s for s in self.gstate]
        elif self.phase < self.mode_switches:
            self.phase_left -= 1
            if self.phase_left == 0:
                self.phase += 1
                self.phase_left = self.chase_steps if self.phase % 2 else self.scatter_steps
                self.greverse = [s != HOUSE for s in self.gstate]
        old_px, old_py = self.px, self.py
        if self.open(self.px, self.py, action):
            self.pdir = action
        if self.open(self.px, self.py, self.pdir):
            self.px, self.py = self.moved(self.px, self.py, self.pdir)
        cell = self.cells[self.py][self.px]
        if cell in (PELLET, POWER):
            self.cells[self.py][self.px] = EMPTY
            self.pellets -= 1
            points += 10 if cell == PELLET else 50
            if cell == POWER:
                self.frightened_left, self.combo = self.frightened_steps, 0
                for i in range(GHOSTS):
                    if self.gstate[i] != HOUSE:
                        self.gstate[i], self.greverse[i] = FRIGHTENED, True
        if self.pellets == 0:  # the level is cleared: the next starts at once
            self.levels += 1
            self.fill()
            self.round()
        else:
            caught, eaten = self.meet(None)
            points += eaten
            if not caught:
                old = (list(self.gx), list(self.gy), old_px, old_py)
                self.move_ghosts()
                caught, eaten = self.meet(old)
                points += eaten
            if caught:
                self.lives_left -= 1
                if self.lives_left == 0:
                    ended = True
                else:
                    self.round()
        self.score += points
        truncated = not ended and self.played >= self.max_steps
        info = {}
        if ended or truncated:
            info = {
                "score": float(self.score),
                "levels": float(self.levels),
                "pellets": float(self.levels * self.total + self.total - self.pellets),
                "ghosts": float(self.eaten),
            }
        return self.observe(), float(np.float32(points / 100)), ended, truncated, info

    def render(self) -> str | np.ndarray | None:
        canvas = Canvas(self.width, self.height)
        glyphs = {WALL: "#", PELLET: ".", POWER: "o"}
        for y, row in enumerate(self.cells):
            for x, c in enumerate(row):
                if c in glyphs:
                    canvas.cell(x, y, glyphs[c])
        for i in range(GHOSTS):
            canvas.cell(self.gx[i], self.gy[i], "*" if self.gstate[i] == FRIGHTENED else "x+@x"[i])
        canvas.cell(self.px, self.py, "o" if self.frightened_left == 0 else "O")
        title = f"score {self.score}  lives {self.lives_left}  pellets {self.pellets}"
        return canvas.show(self.render_mode, title)


GAME = Game(
    "pacman",
    Pacman,
    solved_return=33.0,
    solved_meaning=(
        "scores 3,300 a game on the small maze over 3 lives: about 142 of its 150 pellets (1,660 points for all) "
        "and 5-6 frightened ghosts, though rarely the whole level (random actions: 537, 48 pellets)"
    ),
    config={
        "train": {
            "total_steps": 20_000_000,
            "stop_on_solve": True,
            "num_steps": 64,
            "num_minibatches": 8,
            "update_epochs": 4,
            "learning_rate": 1e-3,
            "ent_coef": 0.01,
        },
        "vec": {"num_envs": 128},
        "policy": {"hidden_size": 128},
    },
    check_kwargs={
        "lives": 2,
        "max_steps": 60,
        "release_steps": 2,
        "frightened_steps": 10,
        "scatter_steps": 5,
        "chase_steps": 8,
    },
    cuda_type="Pacman",
)
