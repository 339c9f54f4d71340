"""A new user's small trips, through the command line: unknown [env] keys, --num-envs, eval defaults, --video.

Each test provokes the fault (a key no creator takes, a negative count, eval without
--checkpoint, a headless --video) and checks the one-line error or the working result.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.envargs import EnvArgumentError, check_env_kwargs
from pufferbox.registry import get_registry

QUICK = ["--num-envs", "2", "--set", "train.num_steps=16", "--set", "policy.hidden_size=8"]


def pufferbox(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m pufferbox.cli ARGS`` as a user runs it (a fresh process, its own cwd)."""
    return subprocess.run(
        [sys.executable, "-m", "pufferbox.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr[-2000:]
    return lines[0]


# --- [env] keys a creator does not accept -----------------------------------------------------------------


def test_env_key_refused_by_a_closed_signature_names_key_and_accepted_ones(tmp_path):
    line = error_line(pufferbox("train", "bandit", "--set", "env.gravity_x=3", "--run-dir", "r", cwd=tmp_path))
    assert line.startswith("Error: env.gravity_x: bandit does not accept this key")
    assert "accepted: arm_seed, horizon, num_arms, p_bad, p_good" in line
    assert not (tmp_path / "r").exists()  # refused before the run directory or any env exists


@pytest.mark.parametrize(
    ("env", "setting", "says"),
    [
        ("ocean/pong", "env.max_score=-1", "pong: max_score must be >= 1, got -1"),  # native block with **kwargs
        ("tag", "env.num_runners=-1", "tag needs at least one tagger and one runner"),
        ("bandit", "env.num_arms=0", "bandit"),  # a closed signature: built once all the same
    ],
)
def test_env_value_out_of_range_is_one_line_before_the_run_dir(tmp_path, env, setting, says):
    line = error_line(pufferbox("train", env, "--set", setting, "--run-dir", "r", cwd=tmp_path))
    assert line.startswith(f"Error: {setting}: {env} refuses it: ") and says in line
    assert not (tmp_path / "r").exists()


def test_env_key_refused_by_a_kwargs_binding_is_one_line_too(tmp_path):
    """cartpole's creators take **kwargs (gymnasium.make): the key is tried once and refused by name."""
    line = error_line(pufferbox("train", "cartpole", "--set", "env.gravity_x=3", "--run-dir", "r", cwd=tmp_path))
    assert line.startswith("Error: env.gravity_x: cartpole does not accept this key")
    assert not (tmp_path / "r").exists()
    line = error_line(pufferbox("train", "tag", "--set", "env.gravity_x=3", "--run-dir", "r", cwd=tmp_path))
    assert "env.gravity_x: tag does not accept this key" in line and "known keys:" in line and "num_runners" in line


def test_check_env_kwargs_follows_the_creator_the_run_uses():
    registry = get_registry()
    tag, cartpole, bandit = registry.get("tag"), registry.get("cartpole"), registry.get("bandit")
    accepted = r"accepted: cell_capacity, episode_length"
    with pytest.raises(EnvArgumentError, match=r"env.gravity_x: tag .*kernel reference.*" + accepted):
        check_env_kwargs(tag, {"gravity_x": 3}, backend="cuda")  # static: no GPU, no env built
    check_env_kwargs(tag, {"num_runners": 2}, backend="cuda")
    check_env_kwargs(tag, {"num_runners": 2})  # the CPU binding passes it on to the reference
    check_env_kwargs(cartpole, {"max_episode_steps": 50})  # native and gymnasium.make both take it
    check_env_kwargs(cartpole, {"kernel": "numpy"})  # the native block's own option
    with pytest.raises(EnvArgumentError, match="env.kernel: cartpole"):
        check_env_kwargs(cartpole, {"kernel": "numpy"}, native=False)  # gymnasium's CartPoleEnv does not
    with pytest.raises(EnvArgumentError, match="env.seed_x: bandit"):
        check_env_kwargs(bandit, {"seed_x": 1}, native=False)


# --- counts -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-4", "0"])
def test_num_envs_below_one_says_at_least_one(value):
    load_commands()
    result = CliRunner().invoke(cli, ["train", "cartpole", "--num-envs", value])
    assert result.exit_code == 2
    assert f"Error: vec.num_envs: must be >= 1, got {value} (--num-envs)" in result.output


# --- eval without --checkpoint ------------------------------------------------------------------------------


def train(tmp_path: Path, env: str, run_dir: str, *extra: str) -> None:
    proc = pufferbox("train", env, "--run-dir", run_dir, "--total-steps", "32", *QUICK, *extra, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_eval_without_checkpoint_takes_the_newest_run_of_that_env(tmp_path):
    train(tmp_path, "cartpole", "runs/cartpole-a")
    train(tmp_path, "bandit", "runs/bandit-a")
    train(tmp_path, "cartpole", "runs/my-named-run")  # found by its config.toml, not by its name
    later = 2_000_000_000
    newest = tmp_path / "runs/my-named-run/checkpoints/ckpt-00000001.pt"
    os.utime(newest, (later, later))
    proc = pufferbox("eval", "cartpole", "--episodes", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"checkpoint: {Path('runs/my-named-run/checkpoints/ckpt-00000001.pt')}" in proc.stderr
    assert '"env": "cartpole"' in proc.stdout and "my-named-run" in proc.stdout


def test_eval_without_checkpoint_or_runs_is_one_line(tmp_path):
    line = error_line(pufferbox("eval", "cartpole", cwd=tmp_path))
    assert "no checkpoint of cartpole under runs/" in line and "pufferbox train cartpole" in line
    line = error_line(pufferbox("eval", cwd=tmp_path))
    assert "name an env" in line and "--checkpoint" in line


def test_eval_set_plays_the_game_with_another_setting_and_reports_its_metrics(tmp_path):
    """A checkpoint judged under a setting it did not train with (Slime Volleyball with the bot on the right
    in every game): the episodes follow the setting, and the game's episode metrics come back averaged."""
    train(tmp_path, "ocean/slimevolley", "run", "--set", "env.max_score=1")
    args = ["eval", "ocean/slimevolley", "--checkpoint", "run", "--episodes", "4", "--seed", "3"]
    proc = pufferbox(*args, "--set", "env.bot_share=100", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["metrics"]["against_bot"] == 1.0 and set(result["metrics"]) >= {"bot_beaten", "left_win"}
    proc = pufferbox(*args, "--set", "env.bot_share=0", cwd=tmp_path)
    assert json.loads(proc.stdout)["metrics"]["against_bot"] == 0.0  # the run's own setting was 50


def test_eval_set_refuses_what_is_not_a_game_setting_in_one_line(tmp_path):
    train(tmp_path, "bandit", "run")
    base = ["eval", "bandit", "--checkpoint", "run", "--episodes", "1"]
    line = error_line(pufferbox(*base, "--set", "train.learning_rate=1", cwd=tmp_path))
    assert "--set train.learning_rate=1: eval takes env.KEY=VALUE only" in line
    line = error_line(pufferbox(*base, "--set", "env.gravity_x=3", cwd=tmp_path))
    assert line.startswith("Error: env.gravity_x: bandit does not accept this key")
    line = error_line(pufferbox(*base, "--set", "env.num_arms", cwd=tmp_path))
    assert "expected SECTION.KEY=VALUE" in line
    line = error_line(pufferbox(*base, "--set", "env.num_arms=3", "--opponent", "random", cwd=tmp_path))
    assert "--set plays a single checkpoint's episodes" in line
    line = error_line(pufferbox(*base, "--set", "env.num_arms=7", cwd=tmp_path))  # 7 actions: not the policy's 4
    assert "--set env.num_arms=7: the game's spaces change with it" in line and "Discrete(4) -> Discrete(7)" in line
    proc = pufferbox(*base, "--set", "env.horizon=5", cwd=tmp_path)  # the same spaces: played
    assert proc.returncode == 0 and json.loads(proc.stdout)["mean_length"] == 5.0, proc.stderr[-2000:]


@pytest.mark.slow
def test_readme_eval_nethack_render_after_training(tmp_path):
    """The README's two lines, verbatim but for the short training: train, then `eval nethack --render`."""
    pytest.importorskip("nle", reason="pufferbox-nethack needs nle")
    train(tmp_path, "nethack", "runs/nethack-short", "--set", "env.max_episode_steps=40")  # short eval episodes
    proc = pufferbox("eval", "nethack", "--render", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"episodes": 10' in proc.stdout
    text = re.sub(r"\x1b\[[0-9;]*m", "", proc.stderr)  # one colour code per character
    assert text.count("Dlvl:") >= 10  # NetHack's bottom line, in one frame per step


# --- --video on a headless machine --------------------------------------------------------------------------


def headless_env() -> dict:
    env = {
        k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "SDL_VIDEODRIVER")
    }
    return env


def test_video_works_headless_without_sdl_complaints(tmp_path):
    train(tmp_path, "cartpole", "runs/cp")
    proc = pufferbox("eval", "cartpole", "--episodes", "1", "--video", "out.gif", cwd=tmp_path, env=headless_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "XDG_RUNTIME_DIR" not in proc.stderr and "error" not in proc.stderr.lower(), proc.stderr
    import imageio.v2 as imageio

    frames = np.asarray(imageio.mimread(tmp_path / "out.gif"))
    assert frames.shape[0] > 1 and frames.shape[-1] == 3
    assert np.abs(np.diff(frames.astype(int), axis=0)).sum() > 0  # the pole moved: real frames, not blanks


def test_video_with_an_unknown_suffix_is_one_line(tmp_path):
    train(tmp_path, "cartpole", "runs/cp")
    line = error_line(
        pufferbox("eval", "cartpole", "--episodes", "1", "--video", "out.avi", cwd=tmp_path, env=headless_env())
    )
    assert "out.avi: video must end in .gif or .mp4" in line
