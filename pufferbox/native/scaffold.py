"""``pufferbox new-env NAME [--c]``: a new plugin folder that installs, conforms and trains as written.

The plugin is ``pufferbox-NAME`` (package ``pufferbox_NAME``) with one env, ``NAME``: Catch, a small
real game (move the paddle under the falling ball; +1 per ball caught, -1 per ball missed). Its Python
reference (``env.py``) is a Gymnasium env; with ``--c`` the same rules are also a C header
(``c/NAME.h``, the C game SDK's three functions and table row) that pufferbox compiles, steps in
blocks, checks against the reference bit for bit and runs as a CUDA kernel. Then::

    pip install -e ./pufferbox-NAME && pufferbox check NAME && pufferbox train NAME

Example:
    >>> files = plugin_files("catch", c=True)
    >>> sorted(files)[:3]
    ['README.md', 'pufferbox_catch/__init__.py', 'pufferbox_catch/c/catch.h']
"""

from __future__ import annotations

import importlib.util
import keyword
import re
from pathlib import Path
from string import Template

from pufferbox.errors import PufferboxError

__all__ = ["ScaffoldError", "check_name", "plugin_files", "write_plugin"]

NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
# words NAME cannot be: it prefixes C and CUDA (C++) functions and names a Python package
C_KEYWORDS = (
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while"
)
RESERVED = {*keyword.kwlist, *C_KEYWORDS.split(), "ocean", "rng"}


class ScaffoldError(PufferboxError, ValueError):
    """A name or folder ``new-env`` cannot use (one line: the problem and the fix)."""


PYPROJECT = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "pufferbox-$name"
version = "0.1.0"
description = "pufferbox plugin: $name, $what"
requires-python = ">=3.10"
dependencies = ["pufferbox", "numpy", "gymnasium"]

[project.entry-points.pufferbox]
$name = "pufferbox_$name.plugin"

[tool.setuptools.packages.find]
include = ["pufferbox_$name*"]

[tool.setuptools.package-data]
pufferbox_$name = ["c/*.h"]

[tool.pytest.ini_options]
markers = ["slow: trains for a few seconds"]
"""

README = """\
# pufferbox-$name

A pufferbox plugin with one env, `$name` (Catch: move the paddle under the falling ball). $about

    pip install -e .
    pufferbox check $name
    pufferbox train $name --total-steps 200000
    pytest tests
"""

ABOUT_PY = "The env is `pufferbox_$name/env.py`, registered in `plugin.py`."
ABOUT_C = (
    "The game is the C header `pufferbox_$name/c/$name.h` and its Python reference `env.py` (same rules, same "
    "generator, bit for bit): pufferbox compiles the header on first use, steps it in blocks, checks it against "
    "the reference (`pufferbox check $name`, `--cuda --host` for its CUDA kernel). Guide: docs/tutorials/c-game-sdk.md "
    "in pufferbox."
)

ENV = '''\
"""Catch: the readable reference of the game (the C header, where there is one, follows it bit for bit).

Example:
    >>> env = $Name()
    >>> obs, _ = env.reset(seed=1)
    >>> obs.shape, env.action_space
    ((4,), Discrete(3))
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces
from pufferbox.api import GameRng, SingleAgentReference


def positive(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"$name: {name} must be an integer >= {low}, got {value!r}")
    return int(value)


class $Name(SingleAgentReference):
    """Catch: move the paddle (bottom row) under the falling ball; +1 per ball caught, -1 per ball missed.

    A ball falls one row per step from a random column of the top row; ``balls`` balls make an episode.
    Observation: ball column and row, paddle column (each / its largest value), the share of balls left.
    Actions: 0 left, 1 stay, 2 right.
    """

    metadata: ClassVar[dict] = {"render_modes": ["ansi"], "name": "$name"}
    PARAMS = ("width", "height", "balls")  # the int parameters the C game reads, in order
    METRICS = ("caught",)  # what an ended episode reports

    def __init__(self, width: int = 5, height: int = 6, balls: int = 5, render_mode: str | None = None):
        self.width = positive("width", width, 2)
        self.height = positive("height", height, 2)
        self.balls = positive("balls", balls, 1)
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, (4,), dtype=np.float32)
        self.action_space = spaces.Discrete(3)
        self.rng = GameRng()

    def observe(self) -> np.ndarray:
        w, h = self.width - 1, self.height - 1
        left = self.balls - self.dropped
        return np.array([self.ball_x / w, self.ball_y / h, self.paddle / w, left / self.balls], dtype=np.float32)

    def drop(self) -> None:
        self.ball_x, self.ball_y = self.rng.below(self.width), 0

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = GameRng(seed)
        self.paddle = self.width // 2
        self.caught = self.dropped = 0
        self.drop()
        return self.observe(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.paddle = min(max(self.paddle + int(action) - 1, 0), self.width - 1)
        self.ball_y += 1
        reward = 0.0
        if self.ball_y == self.height - 1:
            hit = self.paddle == self.ball_x
            reward = 1.0 if hit else -1.0
            self.caught += hit
            self.dropped += 1
            if self.dropped < self.balls:
                self.drop()
        terminated = self.dropped == self.balls
        info = {"caught": float(self.caught)} if terminated else {}
        return self.observe(), reward, terminated, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        rows = [["."] * self.width for _ in range(self.height)]
        rows[self.ball_y][self.ball_x] = "o"
        rows[-1][self.paddle] = "=" if rows[-1][self.paddle] == "." else "@"
        return "\\n".join("".join(row) for row in rows)
'''

HEADER = """\
/* Catch in C: the same rules as pufferbox_$name/env.py, the same generator (OceanRng = GameRng),
 * the same operations in the same order, so pufferbox's native check compares them bit for bit.
 * ocean.h (shipped with pufferbox: pufferbox/native/c/ocean.h) says what the three functions are. */
#ifndef ${NAME}_H
#define ${NAME}_H
#include "ocean.h"

#define ${NAME}_N_PARAMS 3  /* width, height, balls: the reference's PARAMS, in order */
#define ${NAME}_N_METRICS 1 /* caught: the reference's METRICS */

static const int64_t ${NAME}_ACT_N[1] = {3};
/* The table row: OCEAN_GAME(name, struct, agents, observation bytes, actions per agent, their sizes,
 * parameters, metrics). The name is the file's: c/$name.h. */
#define ${NAME}_GAME OCEAN_GAME($name, $Name, 1, 4 * sizeof(float), 1, ${NAME}_ACT_N, ${NAME}_N_PARAMS, ${NAME}_N_METRICS)

typedef struct {
    OceanRng rng; /* first, always */
    int64_t width, height, balls;
    int64_t ball_x, ball_y, paddle, caught, dropped;
} $Name;

OCEAN_FN int ${name}_configure($Name *env, const int64_t *params)
{
    if (params[0] < 2) return -1;
    if (params[1] < 2) return -2;
    if (params[2] < 1) return -3;
    env->width = params[0];
    env->height = params[1];
    env->balls = params[2];
    return 0;
}

OCEAN_FN void ${name}_observe(const $Name *env, float *obs)
{
    const double w = (double)(env->width - 1), h = (double)(env->height - 1);
    obs[0] = (float)((double)env->ball_x / w);
    obs[1] = (float)((double)env->ball_y / h);
    obs[2] = (float)((double)env->paddle / w);
    obs[3] = (float)((double)(env->balls - env->dropped) / (double)env->balls);
}

OCEAN_FN void ${name}_drop($Name *env)
{
    env->ball_x = rng_below(&env->rng, env->width);
    env->ball_y = 0;
}

OCEAN_FN void ${name}_reset($Name *env, float *obs)
{
    env->paddle = env->width / 2;
    env->caught = env->dropped = 0;
    ${name}_drop(env);
    ${name}_observe(env, obs);
}

OCEAN_FN int ${name}_step($Name *env, const int64_t *actions, float *obs, float *rewards, uint8_t *terminals,
                         uint8_t *truncations, double *metrics)
{
    int64_t paddle = env->paddle + actions[0] - 1;
    env->paddle = paddle < 0 ? 0 : (paddle > env->width - 1 ? env->width - 1 : paddle);
    env->ball_y += 1;
    float reward = 0.0f;
    if (env->ball_y == env->height - 1) {
        const int hit = env->paddle == env->ball_x;
        reward = hit ? 1.0f : -1.0f;
        env->caught += hit;
        env->dropped += 1;
        if (env->dropped < env->balls) ${name}_drop(env);
    }
    rewards[0] = reward;
    terminals[0] = env->dropped == env->balls;
    truncations[0] = 0;
    ${name}_observe(env, obs);
    if (terminals[0]) {
        metrics[0] = (double)env->caught;
        return 1;
    }
    return 0;
}

#endif
"""

PLUGIN_PY = '''\
"""Registers `$name` with pufferbox (the `pufferbox` entry point in pyproject.toml names this module)."""

from __future__ import annotations

from pufferbox.api import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl

from pufferbox_$name.env import $Name

# Settings that solve Catch in seconds on a laptop CPU; `pufferbox train $name --set train.X=...` overrides.
CONFIG = {
    "train": {"total_steps": 100_000, "stop_on_solve": True, "learning_rate": 3e-3, "num_steps": 64},
    "vec": {"num_envs": 16},
}


@hookimpl
def register_envs(register):
    register(
        EnvSpec(
            name="$name",
            build=EnvBuild(binding=$Name, episode_metrics=$Name.METRICS),
            training=TrainDefaults(config=CONFIG, solved_return=3.0),
            meta=EnvMeta(description="Catch: move the paddle under the falling ball."),
        )
    )
'''

PLUGIN_C = '''\
"""Registers `$name` with pufferbox: its C header (c/$name.h) and its Python reference (env.py), through the
C game SDK (the `pufferbox` entry point in pyproject.toml names this module).

Every c/NAME.h is one game, compiled with pufferbox's binding on first use; each needs its CGame record.
"""

from __future__ import annotations

from pathlib import Path

from pufferbox.api import CGame, CGameLibrary, hookimpl

from pufferbox_$name.env import $Name

LIBRARY = CGameLibrary("pufferbox_${name}_games", Path(__file__).parent / "c")

GAMES = [
    CGame(
        "$name",
        $Name,
        solved_return=3.0,
        solved_meaning="catches 4 of 5 balls on average",
        # settings that solve it in seconds on a laptop CPU (`pufferbox train $name --set train.X=...` overrides)
        config={
            "train": {"total_steps": 100_000, "stop_on_solve": True, "learning_rate": 3e-3, "num_steps": 64},
            "vec": {"num_envs": 16},
        },
        cuda_type="$Name",  # the C struct: the same header also runs as a CUDA kernel (--backend cuda)
    )
]


@hookimpl
def register_envs(register):
    LIBRARY.register(register, GAMES)
'''

TESTS = '''\
"""`$name` conforms to pufferbox's plugin contract$c_note, and trains."""

from __future__ import annotations

import pytest
from pufferbox.conformance.testing import smoke_train


def test_conforms(pufferbox_check):
    pufferbox_check("$name", steps=200)
$c_test

@pytest.mark.slow
def test_trains(tmp_path):
    smoke_train("$name", tmp_path / "run", total_steps=2048, num_envs=2)
'''

C_TEST = """

def test_the_c_game_equals_the_reference_bit_for_bit():
    import numpy as np

    from pufferbox_$name.env import $Name
    from pufferbox_$name.plugin import LIBRARY

    block = LIBRARY.block("$name", $Name, num_envs=4)
    block.vec_reset(seed=3)
    envs = [$Name() for _ in range(4)]
    expected = np.stack([env.reset(seed=3 + i)[0] for i, env in enumerate(envs)])
    rng = np.random.default_rng(0)
    for _ in range(100):
        np.testing.assert_array_equal(block.buffers.observations, expected)
        actions = rng.integers(0, 3, 4)
        block.vec_step(actions)
        rows = []
        for env, action in zip(envs, actions, strict=True):
            obs, reward, terminated, _, _ = env.step(int(action))
            obs = env.reset()[0] if terminated else obs
            rows.append(obs)
            assert block.buffers.rewards[len(rows) - 1] == reward
        expected = np.stack(rows)
"""


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_") if part) or "Game"


def check_name(name: str) -> None:
    """Refuse a NAME that is not a lowercase identifier, is reserved, or whose package exists already."""
    if not NAME.match(name):
        raise ScaffoldError(
            f"new-env: {name!r} is not a usable name; fix: lowercase letters, digits and _, starting with a letter "
            "(it names the env, the package pufferbox_NAME and the C functions NAME_step...)"
        )
    if name in RESERVED:
        raise ScaffoldError(f"new-env: {name!r} is a C or Python keyword or a name the SDK uses; fix: pick another name")
    if importlib.util.find_spec(f"pufferbox_{name}") is not None:
        raise ScaffoldError(f"new-env: a package pufferbox_{name} is installed already; fix: pick another name")


def plugin_files(name: str, c: bool) -> dict[str, str]:
    """The plugin's files, ``{relative path: text}``."""
    words = {"name": name, "Name": camel(name), "NAME": name.upper()}

    def fill(text: str, **more: str) -> str:
        return Template(text).substitute(words, **more)

    package = f"pufferbox_{name}"
    what = "a C game with its Python reference" if c else "a Python env"
    files = {
        "pyproject.toml": fill(PYPROJECT, what=what),
        "README.md": fill(README, about=fill(ABOUT_C if c else ABOUT_PY)),
        f"{package}/__init__.py": f'"""pufferbox plugin: {name}."""\n',
        f"{package}/env.py": fill(ENV),
        f"{package}/plugin.py": fill(PLUGIN_C if c else PLUGIN_PY),
        f"tests/test_{name}.py": fill(
            TESTS,
            c_note=" and its C game equals the reference" if c else "",
            c_test=fill(C_TEST) if c else "",
        ),
    }
    if c:
        files[f"{package}/c/{name}.h"] = fill(HEADER)
    return files


def write_plugin(name: str, folder: Path, c: bool) -> list[Path]:
    """Write the plugin into ``folder`` (new or empty); the paths written."""
    check_name(name)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ScaffoldError(f"new-env: {folder} exists and is not an empty folder; fix: remove it or pass --dir")
    written = []
    for relative, text in plugin_files(name, c).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
