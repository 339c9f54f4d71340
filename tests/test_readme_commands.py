"""Every command in the README's and the docs' shell blocks is run by some test (issue 19: a newcomer
copies them; issue 53: the tutorials moved to docs/).

The commands are the lines of the ```bash blocks of README.md and every page under docs/ (a trailing
``# comment`` dropped). Each one is, in exactly one of these tables:

- ``RUN_HERE``: run by this file in a fresh working directory with a fresh HOME (so ``runs/`` and
  caches start empty), verbatim except for a lower step budget (``--total-steps``) where the
  README's would take minutes, and checked for its exit status and output;
- ``RUN_BY``: run by the named test (``path::function``), whose source must contain the command's
  subcommand and every ``--flag`` it shows (so the pair cannot drift apart); ``A::test via B::helper``
  when the test runs it through a helper (the test must call it, the helper must spell it); or by a
  named script (``.ci/run``, ``ci/container-test.sh``) that must contain the given text;
- ``CHECKED_ONLY``: too long or needing what CI lacks (a GPU, a second machine, minutes of an idle
  machine), so only its command line is checked against ``--help`` (every flag it shows exists);
  each entry says why it is not run.

A command in the README or the docs and in none of the tables fails ``test_every_readme_command_is_covered``
with the line to add (and the page that shows it).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PUFFERBOX = str(Path(sys.executable).with_name("pufferbox"))


def readme_commands(text: str) -> list[str]:
    """The lines of the README's bash blocks, without trailing comments; in order, each once."""
    commands: list[str] = []
    for body in re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, re.S):
        for line in body.splitlines():
            command = re.split(r"\s+#\s", line.strip(), maxsplit=1)[0].strip()
            if command and not command.startswith("#") and command not in commands:
                commands.append(command)
    return commands


BUDGET = ("--total-steps", "1024")  # RUN_HERE may lower a command's --total-steps (or add one); nothing else changes
MY_TOML = "[train]\ntotal_steps = 2048\n"  # the reader's own my.toml, as a test can have one

# command -> (extra arguments: none or BUDGET, expected exit status, text the output must contain)
RUN_HERE: dict[str, tuple[tuple[str, ...], int, str]] = {
    "pufferbox envs": ((), 0, "cartpole"),
    "pufferbox info nethack": ((), 0, "glyphs"),
    "pufferbox doctor": ((), 0, "train device"),
    "pufferbox check tag_continuous": ((), 0, "checks passed"),
    "pufferbox check tag --cuda --host": ((), 0, "0 mismatches"),
    "pufferbox autotune cartpole": ((), 0, "pufferbox bench cartpole"),
    "pufferbox bench cartpole --backend multiprocessing --num-envs 16 --num-workers 2 --seconds 3 --json": ((), 0, '"sps"'),
    "pufferbox train cartpole": ((), 0, "solved"),
    "pufferbox eval cartpole --video cp.gif": ((), 0, "cp.gif"),
    "pufferbox train breakout --total-steps 100000": (BUDGET, 0, "done: atari/breakout"),
    "pufferbox train procgen/bigfish --set env.distribution_mode='\"hard\"'": (BUDGET, 0, "done: procgen/bigfish"),
    "pufferbox train squared --num-envs 64 --set train.learning_rate=3e-4 --set policy.lstm=true": (
        BUDGET,
        0,
        "done: squared",
    ),
    "pufferbox train cartpole --config my.toml --backend multiprocessing --num-workers 2 --batch-size 8 --num-envs 16": (
        (),
        0,
        "done: cartpole 2,048 steps",
    ),
    "pufferbox train tag": (BUDGET, 0, "done: tag"),
    "pufferbox tournament cartpole --pods 4 --cpus-per-pod 0.5 --total-steps 1000000 --run-dir runs/t": (
        ("--total-steps", "4096"),
        0,
        "tournament finished",
    ),
    "pufferbox leaderboard runs/t": ((), 0, "score"),
    "pufferbox plot runs/t": ((), 0, "curves.png"),
    "pufferbox tournament cartpole --pods 4 --total-steps 500000 --halving --slice-steps 8192": (
        ("--total-steps", "16384"),  # two slices of 8,192
        0,
        "tournament finished",
    ),
    "pufferbox train ocean/pong": (BUDGET, 0, "done: ocean/pong"),
    "pufferbox eval ocean/pong --render --episodes 1": ((), 0, "scripted"),
    "pufferbox train ocean/connect4": (BUDGET, 0, "done: ocean/connect4"),
    "pufferbox eval ocean/connect4 --opponent random --side second": ((), 0, "win"),
    "pufferbox check ocean/snake --cuda --host": ((), 0, "0 mismatches"),
}
RUN_HERE_ORDER = list(RUN_HERE)  # eval reads the checkpoint that `train cartpole` wrote under runs/ before it

RUN_BY: dict[str, str] = {
    "pufferbox export runs/cartpole-20250101-000000 --to onnx exported/cartpole": "tests/test_export.py::test_cartpole_onnx_graph_acts_like_the_agent_and_its_sidecar_describes_the_row via tests/test_export.py::export",
    "pufferbox export runs/nethack-... --to torchscript exported/nethack-ts": "tests/test_export.py::test_cartpole_torchscript_runs_without_pufferbox_code via tests/test_export.py::export",
    "pufferbox export runs/breakout-... --to hub hub/breakout": "tests/test_export.py::test_breakout_cnn_exports_to_onnx_and_hub via tests/test_export.py::export",
    "pufferbox eval --checkpoint hub/breakout --episodes 10": "tests/test_export.py::test_breakout_cnn_exports_to_onnx_and_hub",
    "make train": "Makefile: $(VENV)/bin/pufferbox train cartpole",  # the recipe; RUN_HERE runs that command
    "make test": ".ci/run: make test",
    "pufferbox eval nethack --render": "tests/test_cli_small_errors.py::test_readme_eval_nethack_render_after_training",
    "pufferbox train --resume runs/cartpole-20260101-120000 --total-steps 500000": "tests/test_train_cli.py::test_resume_continues_the_run",
    "pufferbox eval cartpole --checkpoint runs/cartpole-20260101-120000 --episodes 20 [--render | --video cp.gif]": "tests/test_train_cli.py::test_eval_saves_a_gif",
    "pufferbox plot runs/cartpole-a runs/cartpole-b -o curves.png": "tests/test_train_cli.py::test_plot_overlays_runs",
    "pufferbox train cartpole --backend ray --ray-address HEAD_IP:6379": "tests/test_ray_dir.py::test_train_with_a_wrong_ray_address_is_one_line_within_seconds",
    "pufferbox eval tag --checkpoint runs/tag-a --opponent random --side runner --episodes 200": "tests/test_groups.py::test_eval_opponent_reports_counts_and_interval",
    "pufferbox eval tag --checkpoint runs/tag-a --opponent runs/tag-a/checkpoints/ckpt-00000100.pt --league runs/tag-a": "tests/test_groups.py::test_eval_opponent_reports_counts_and_interval",
    "pufferbox tournament tag --pods 4 --total-steps 2000000 --score-group runner --score-opponent random": "tests/test_tournament_groups.py::test_a_tournament_on_tag_scores_and_stores_the_runner_group",
    "pufferbox league runs/tag-a --play 50": "tests/test_groups.py::test_league_play_rates_every_checkpoint_against_random",
    "pufferbox sweep cartpole --trials 30 --run-dir runs/cp-sweep --set train.total_steps=200000": "tests/test_sweep.py::test_a_killed_sweep_continues_where_it_stopped",
    "pufferbox sweep cartpole --trials 40 --run-dir runs/cp-sweep ...": "tests/test_sweep.py::test_a_killed_sweep_continues_where_it_stopped",
    "pufferbox sweep --show runs/cp-sweep": "tests/test_sweep.py::test_show_prints_best_trials_and_writes_a_plot",
    "pufferbox train cartpole --wandb --wandb-project pb --wandb-tags baseline --wandb-artifacts": "tests/test_tracking.py::test_offline_run_holds_metrics_config_and_checkpoints",
    "pufferbox check tag --cuda": "tests/test_cli_envs.py::test_check_cuda_reports_the_consistency_result",
    "pufferbox train tag --backend cuda": "tests/test_train_cuda.py::test_cli_on_a_cpu_machine_names_the_cpu_backends",
    "pufferbox train cuda_cartpole --backend cuda --set vec.device=host --num-envs 16": "tests/test_train_cuda.py::test_trains_end_to_end_on_the_host_simulator",
    # docs/tutorials/c-game-sdk.md: the scaffolded plugin, installed, checked, trained and tested as the guide shows
    "pufferbox new-env catch --c": "tests/test_native_sdk.py::test_a_scaffolded_c_plugin_installs_checks_trains_and_fails_alone",
    "pip install -e ./pufferbox-catch": "tests/test_native_sdk.py::test_a_scaffolded_c_plugin_installs_checks_trains_and_fails_alone",
    "pufferbox check catch": "tests/test_native_sdk.py::test_a_scaffolded_c_plugin_installs_checks_trains_and_fails_alone",
    "pufferbox check catch --cuda --host": "tests/test_native_sdk.py::test_a_scaffolded_c_plugin_installs_checks_trains_and_fails_alone",
    "pufferbox train catch": "tests/test_native_sdk.py::test_a_scaffolded_c_plugin_installs_checks_trains_and_fails_alone",
    "pytest pufferbox-catch/tests": "tests/test_native_sdk.py::test_a_scaffolded_c_plugin_installs_checks_trains_and_fails_alone",
    # the container CI runs the tank with podman-compose (what `docker compose` is there), same service and commands
    "docker compose up -d": "ci/container-test.sh: up -d",
    "docker compose exec tank pufferbox train nethack": "ci/container-test.sh: tank pufferbox train nethack",
    "docker compose run --rm tank pufferbox train nethack": "ci/container-test.sh: run --rm tank pufferbox train",
}

CHECKED_ONLY: dict[str, str] = {
    "pufferbox sweep squared --trials 50 --parallel 2 --config space.toml --objective return,steps": "50 trials take an hour; parallel and multi-objective sweeps run in tests/test_sweep.py",
    "pufferbox sweep cartpole --trials 200 --ray-address auto --storage postgresql://user@db/optuna": "needs a Ray cluster and a PostgreSQL server",
    "pufferbox tournament nethack --pods 32 --hours 12 --ray-address HEAD_IP:6379 --run-dir /shared/runs/t": "a 12-hour run on a cluster",
    "ray start --head --port=6379": "starts a cluster head on a real machine; tests start private raylets (tests/conftest.py ray_cluster)",
    "ray start --address=HEAD_IP:6379": "joins a second machine to a cluster",
    "pip install -e '.[cuda]' -e plugins/warp": "PyCUDA builds only against a CUDA driver; tank/constraints-cuda.txt pins it for the image",
    ".venv/bin/python benchmarks/bench_vectorization.py --seconds 2 --write": "a benchmark: minutes of an idle machine, results in benchmarks/RESULTS.md",
    ".venv/bin/python benchmarks/bench_nethack.py --seconds 3 --write": "a benchmark: minutes of an idle machine",
    ".venv/bin/python benchmarks/bench_train_peers.py --setup": "downloads the peers' pinned stacks (~10 min)",
    ".venv/bin/python benchmarks/bench_train_peers.py --envs breakout,bigfish,nethack --seeds 1 2 3 --write": "an hour of training",
    ".venv/bin/python benchmarks/profile_train.py nethack --updates 3": "a profile of a minute of NetHack training",
    "python benchmarks/bench_cuda.py": "needs a GPU",
    "pufferbox train ocean/snake --backend cuda": "needs a GPU (RESULTS.md: solved in 7 s on an H200); the kernel runs on the host in `check ocean/snake --cuda --host`",
    "python benchmarks/bench_cuda_train.py": "needs a GPU",
}


def flags_of(command: str) -> list[str]:
    return [word.split("=")[0] for word in command.split() if word.startswith("--")]


def words_of(command: str) -> list[str]:
    """The words a test running ``command`` must spell: its pufferbox subcommand and every flag."""
    words = command.split()
    sub = [w for w in words[1:] if not w.startswith("-")][:1] if words[0] == "pufferbox" else []
    return sub + flags_of(command)


def string_constants(path: Path, function: str) -> str | None:
    """All string literals in ``function`` of ``path`` (None when there is no such function)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return "\n".join(c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return None


def shown_commands() -> dict[str, str]:
    """Every command of README.md's and the docs pages' bash blocks -> the first file that shows it."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    shown: dict[str, str] = {}
    for page in pages:
        for command in readme_commands(page.read_text()):
            shown.setdefault(command, str(page.relative_to(ROOT)))
    return shown


def test_every_readme_command_is_covered():
    shown = shown_commands()
    commands = list(shown)
    assert len(commands) > 30, "the bash blocks of README.md and docs/ were not found"
    tables = (RUN_HERE, RUN_BY, CHECKED_ONLY)
    missing = [f"{c}    (in {shown[c]})" for c in commands if not any(c in table for table in tables)]
    assert not missing, "commands no test runs; add each to RUN_HERE, RUN_BY or CHECKED_ONLY:\n  " + "\n  ".join(missing)
    stale = [c for table in tables for c in table if c not in commands]
    assert not stale, "entries for commands neither the README nor docs/ shows (remove them):\n  " + "\n  ".join(stale)
    assert all(len(reason.split()) >= 3 for reason in CHECKED_ONLY.values()), "each command not run says why"


@pytest.mark.parametrize("command", list(RUN_BY))
def test_the_test_named_for_a_command_runs_it(command):
    where = RUN_BY[command]
    if " via " in where:  # the test calls a helper that spells the command
        test, where = where.split(" via ")
        path, function = test.split("::")
        tree = ast.parse((ROOT / path).read_text())
        node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function), None)
        assert node is not None, f"{test}: no such test (README command: {command})"
        helper = where.split("::")[1]
        assert any(isinstance(n, ast.Name) and n.id == helper for n in ast.walk(node)), f"{test} never calls {helper}"
    if "::" in where:
        path, function = where.split("::")
        source = string_constants(ROOT / path, function)
        assert source is not None, f"{where}: no such test (README command: {command})"
        absent = [w for w in words_of(command) if w not in source]
        assert not absent, f"{where} does not run `{command}`: it never spells {absent}"
    else:
        path, text = where.split(": ", 1)
        assert text in (ROOT / path).read_text(), f"{path} does not contain {text!r} (README command: {command})"


@pytest.mark.parametrize("command", list(CHECKED_ONLY))
def test_commands_not_run_here_still_parse(command, tmp_path):
    words = shlex.split(command)
    if words[0] == "pufferbox":
        sub = next(w for w in words[1:] if not w.startswith("-"))
        argv = [PUFFERBOX, sub, "--help"]
    elif "benchmarks/" in command:
        argv = [sys.executable, str(ROOT / next(w for w in words if w.startswith("benchmarks/"))), "--help"]
    else:  # ray start / pip install: the tool is installed and knows the flags
        argv = [str(Path(sys.executable).with_name(words[0])), *words[1:2], "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, f"`{' '.join(argv)}` failed: {done.stderr[-500:]}"
    absent = [f for f in flags_of(command) if f not in done.stdout]
    assert not absent, f"`{command}` shows flags its --help does not know: {absent}"


@pytest.fixture(scope="module")
def newcomer_dir(tmp_path_factory):
    """A fresh working directory and HOME, as a newcomer's first shell has."""
    work = tmp_path_factory.mktemp("newcomer")
    (work / "home").mkdir()
    return work


@pytest.mark.parametrize("command", RUN_HERE_ORDER)
def test_readme_command_runs_verbatim(command, newcomer_dir):
    extra, expected_status, expected_text = RUN_HERE[command]
    env = {**os.environ, "HOME": str(newcomer_dir / "home")}
    (newcomer_dir / "my.toml").write_text(MY_TOML)
    words = shlex.split(command)
    if extra and "--total-steps" in words:  # the README's budget gives way to the short one
        at = words.index("--total-steps")
        words = words[:at] + words[at + 2 :]
    done = subprocess.run(
        [PUFFERBOX, *words[1:], *extra], capture_output=True, text=True, timeout=300, cwd=newcomer_dir, env=env
    )
    output = done.stdout + done.stderr
    assert done.returncode == expected_status, f"`{command}` exited {done.returncode}:\n{output[-2000:]}"
    assert expected_text in output, f"`{command}` printed no {expected_text!r}:\n{output[-2000:]}"
    assert "Traceback" not in output
