"""The C game SDK (pufferbox.native) and `pufferbox new-env`: a plugin's header compiles with the shared
binding into a block equal to its reference, a header that does not compile is one line naming it and
the compiler's first error (and nothing else breaks), and a scaffolded plugin installs into a fresh
venv, passes `pufferbox check` and trains, as CI must show."""

from __future__ import annotations

import importlib
import os
import pickle
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.conformance import check_env_spec
from pufferbox.native import CGame, CGameLibrary
from pufferbox.native.build import SDK_DIR, compile_flags, find_cc, generated_source
from pufferbox.native.scaffold import write_plugin
from pufferbox.registry import Registry

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no C compiler")

HEADER = """#include "ocean.h"
static const int64_t TINY_ACT_N[1] = {2};
#define TINY_GAME OCEAN_GAME(ROW, Tiny, 1, sizeof(float), 1, TINY_ACT_N, 0, 0)
typedef struct { OceanRng rng; int64_t t; } Tiny;
OCEAN_FN int ROW_configure(Tiny *env, const int64_t *params) { (void)env; (void)params; return 0; }
OCEAN_FN void ROW_reset(Tiny *env, float *obs) { env->t = 0; obs[0] = 0.0f; }
OCEAN_FN int ROW_step(Tiny *env, const int64_t *a, float *obs, float *r, uint8_t *te, uint8_t *tr, double *m)
{
    (void)m; env->t += 1; obs[0] = (float)a[0]; r[0] = 1.0f; te[0] = env->t == 3; tr[0] = 0; BODY
    return te[0];
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PUFFERBOX_CACHE", str(tmp_path / "cache"))


def tiny_library(tmp_path: Path, row: str = "tiny", body: str = "") -> CGameLibrary:
    folder = tmp_path / "c"
    folder.mkdir(exist_ok=True)
    (folder / "tiny.h").write_text(HEADER.replace("ROW", row).replace("BODY", body))
    return CGameLibrary("tiny_games", folder)


def test_a_header_compiles_with_the_binding_into_its_table(tmp_path):
    library = tiny_library(tmp_path)
    assert library.names == ("tiny",)
    assert library.error() is None
    assert library.layouts()["tiny"] == (16, 1, 4, 1, (2,), 0, 0)


def test_a_header_that_does_not_compile_is_one_line_naming_it_and_the_first_error(tmp_path):
    library = tiny_library(tmp_path, body="int broken = ;")
    error = library.error()
    assert error is not None and "\n" not in error
    assert re.match(r"C game does not compile: .*/c/tiny\.h:\d+:\d+: expected expression", error), error
    with pytest.raises(Exception, match="tiny.h"):
        library.block("tiny", object, 1)
    from pufferbox_ocean.block import LIBRARY  # another plugin's games are untouched

    assert LIBRARY.error() is None


def test_a_call_to_an_undefined_function_is_a_compile_error_naming_the_header_not_a_failed_load(tmp_path):
    error = tiny_library(tmp_path, body="undefined_helper(env);").error()
    assert error is not None and re.search(r"/c/tiny\.h:\d+:\d+: implicit declaration of function .undefined_helper", error)


def test_a_folder_without_games_or_with_a_badly_named_header_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "no game headers (*.h); fix:" in (CGameLibrary("none_games", tmp_path / "empty").error() or "")
    (tmp_path / "empty" / "my-game.h").write_text("")
    error = CGameLibrary("bad_games", tmp_path / "empty").error() or ""
    assert "my-game.h: is not named as a C identifier" in error and "\n" not in error


def test_a_table_row_named_unlike_its_file_is_refused_naming_the_file(tmp_path):
    error = tiny_library(tmp_path, row="other").error()
    assert error is not None and "tiny.h: its table row is not named 'tiny'" in error
    assert "fix: #define TINY_GAME OCEAN_GAME(tiny, ...)" in error


def test_every_header_needs_its_record_and_every_record_its_header(tmp_path):
    library = tiny_library(tmp_path)
    with pytest.raises(ValueError, match=r"tiny\.h has no CGame record; fix: add CGame\('tiny', \.\.\.\)"):
        library.register(lambda spec: None, [])
    ghost = CGame("ghost", object, solved_return=1.0, solved_meaning="-")
    with pytest.raises(ValueError, match=r"CGame 'ghost' has no header; fix: add .*ghost\.h"):
        library.register(lambda spec: None, [CGame("tiny", object, 1.0, "-"), ghost])


def test_the_binding_casts_no_function_pointer_and_compiles_without_warnings(tmp_path):
    """Each game is called through typed wrappers (ocean.h's OCEAN_GAME_WRAPPERS), so ISO C's rule on calls
    through a pointer of another type holds; -Wcast-function-type and -Wpedantic stay silent."""
    text = (SDK_DIR / "binding.c").read_text() + (SDK_DIR / "ocean.h").read_text()
    assert not re.search(r"\((ocean_\w+_fn|PyCFunction|initproc|destructor)\)", text)
    from pufferbox_ocean.block import LIBRARY

    source = tmp_path / "all.c"
    source.write_text(generated_source("all_games", LIBRARY.headers))
    flags = [*compile_flags(LIBRARY.headers), "-Wcast-function-type", "-Wpedantic", "-Werror"]
    done = subprocess.run([find_cc(), *flags, str(source), "-o", str(tmp_path / "all.so")], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr


def test_a_c_game_spec_pickles_for_workers_started_with_spawn():
    import numpy as np

    from pufferbox.registry import get_registry

    spec = get_registry().get("ocean/pong")
    again = pickle.loads(pickle.dumps(spec))
    blocks = [spec.build.native(2), again.build.native(2)]
    for block in blocks:
        block.vec_reset(seed=5)
        block.vec_step(np.array([1, 2]))
    np.testing.assert_array_equal(blocks[0].buffers.observations, blocks[1].buffers.observations)
    assert again.build.cuda.reference_class()(num_envs=2).num_envs == 2
    assert again.unavailable_reason is None


def scaffolded(tmp_path: Path, monkeypatch, name: str, c: bool):
    write_plugin(name, tmp_path / name, c=c)
    monkeypatch.syspath_prepend(str(tmp_path / name))
    plugin = importlib.import_module(f"pufferbox_{name}.plugin")
    return Registry(only=[], extra_plugins=[(name, plugin)]).load().get(name)


@pytest.mark.parametrize("c", [False, True], ids=["python", "c"])
def test_a_scaffolded_env_conforms(tmp_path, monkeypatch, c):
    name = f"sdkcatch_{'c' if c else 'py'}"
    spec = scaffolded(tmp_path, monkeypatch, name, c)
    assert (spec.build.native is not None) == c and (spec.build.cuda is not None) == c
    results = check_env_spec(spec, steps=150)
    assert all(r.ok for r in results), [str(r) for r in results]


def test_new_env_refuses_bad_names_and_used_folders_in_one_line(tmp_path):
    load_commands()
    runner = CliRunner()
    for name, says in [("Bad-Name", "not a usable name"), ("int", "keyword"), ("classic", "installed already")]:
        done = runner.invoke(cli, ["new-env", name, "--dir", str(tmp_path / "x")])
        assert done.exit_code == 2 and len(done.output.strip().splitlines()) == 1, done.output
        assert says in done.output and "fix:" in done.output
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "file").write_text("")
    done = runner.invoke(cli, ["new-env", "fine", "--c", "--dir", str(tmp_path / "used")])
    assert done.exit_code == 2 and "is not an empty folder; fix:" in done.output
    done = runner.invoke(cli, ["new-env", "fine", "--c", "--dir", str(tmp_path / "new")])
    assert done.exit_code == 0 and (tmp_path / "new" / "pufferbox_fine" / "c" / "fine.h").is_file()


def fresh_venv(root: Path) -> Path:
    """A venv over this one's packages (torch etc. are not installed again): a .pth adds our site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "_pufferbox_parent.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python


@pytest.mark.slow
def test_a_scaffolded_c_plugin_installs_checks_trains_and_fails_alone(tmp_path):
    """docs/tutorials/c-game-sdk.md's commands, in a fresh venv, without the network; then a broken header."""
    load_commands()
    assert CliRunner().invoke(cli, ["new-env", "sdkcatch", "--c", "--dir", str(tmp_path / "plugin")]).exit_code == 0
    python = fresh_venv(tmp_path / "venv")
    env = {**os.environ, "PUFFERBOX_CACHE": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([python, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)

    install = ["-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-e", "plugin"]
    assert run(*install).returncode == 0
    done = run("-m", "pufferbox.cli", "check", "sdkcatch", "--cuda", "--host")
    assert done.returncode == 0 and "sdkcatch: all 10 checks passed" in done.stdout, done.stdout + done.stderr
    done = run("-m", "pufferbox.cli", "train", "sdkcatch", "--total-steps", "2048", "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 0 and "done: sdkcatch 2,048 steps" in done.stdout, done.stdout + done.stderr
    done = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "plugin/tests")  # the plugin's own tests
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout + done.stderr

    header = tmp_path / "plugin" / "pufferbox_sdkcatch" / "c" / "sdkcatch.h"
    header.write_text(header.read_text().replace("env->ball_y += 1;", "env->ball_y += 1 +;"))
    done = run("-m", "pufferbox.cli", "check", "sdkcatch")
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert re.fullmatch(
        r"Error: env 'sdkcatch' is unavailable: C game does not compile: "
        r"\S+/sdkcatch\.h:\d+:\d+: expected expression[^\n]*\n",
        done.stderr,
    ), done.stderr
    done = run("-m", "pufferbox.cli", "check", "ocean/pong", "--check", "native")
    assert done.returncode == 0 and "all 1 checks passed" in done.stdout, done.stdout + done.stderr
