"""A hub model folder gets every check a ``.pt`` checkpoint gets (issue 54, defect 9): a tampered folder
(weights that do not fit its config, another env, missing tensors, NaN weights, damaged groups metadata or
config.toml, ``[env]`` settings the env refuses) is one ``Error:`` line in ``eval``, exit 2, no traceback."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands

pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    load_commands()
    root = tmp_path_factory.mktemp("hub")
    quick = ["--num-envs", "4", "--set", "train.num_steps=32", "--no-tensorboard", "--total-steps", "256"]
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(root / "run"), *quick])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["export", str(root / "run"), "--to", "hub", str(root / "hub"), "--episodes", "1"])
    assert result.exit_code == 0, result.output
    return root / "hub"


def rewrite(folder: Path, tensors: Callable[[dict], dict] | None = None, meta: Callable[[dict], dict] | None = None):
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    path = str(folder / "model.safetensors")
    with safe_open(path, framework="pt") as fh:
        metadata = fh.metadata()
    weights = load_file(path)
    save_file((tensors or (lambda t: t))(weights), path, metadata=(meta or (lambda m: m))(metadata))


def first_model_key(weights: dict) -> str:
    return next(k for k in sorted(weights) if k.startswith("model."))


TAMPERS = {
    "hidden_size": (lambda d: config(d, lambda s: re.sub(r"hidden_size = \d+", "hidden_size = 32", s)), "do not fit"),
    "env": (lambda d: rewrite(d, meta=lambda m: {**m, "env": "acrobot"}), "do not fit"),
    "shape": (lambda d: rewrite(d, tensors=lambda t: {**t, first_model_key(t): t[first_model_key(t)][:1]}), "do not fit"),
    "missing": (lambda d: rewrite(d, tensors=lambda t: {k: v for k, v in t.items() if k != first_model_key(t)}), "Missing"),
    "nan": (lambda d: rewrite(d, tensors=lambda t: {k: v * float("nan") for k, v in t.items()}), "NaN/inf"),
    "groups": (lambda d: rewrite(d, meta=lambda m: {**m, "groups": "{not json"}), "groups metadata is not JSON"),
    "config": (lambda d: config(d, lambda s: "this is [not toml"), "not a readable config"),
    "env-setting": (lambda d: config(d, lambda s: s.replace("[env]\n", "[env]\nbogus = 3\n")), "env.bogus: cartpole"),
}


def config(folder: Path, edit: Callable[[str], str]) -> None:
    (folder / "config.toml").write_text(edit((folder / "config.toml").read_text()))


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_eval_of_a_tampered_hub_folder_is_one_line(hub, tmp_path, tamper):
    folder = tmp_path / "hub"
    shutil.copytree(hub, folder)
    change, needle = TAMPERS[tamper]
    change(folder)
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(folder), "--episodes", "1"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], result.output


@pytest.mark.parametrize("where", ["under-a-file", "full-disk"])
def test_a_video_that_cannot_be_written_is_one_line(hub, tmp_path, monkeypatch, where):
    """Also found: `eval --video /etc/passwd/x.gif` played its episode, then a FileExistsError traceback."""
    import errno

    import pufferbox.train.evaluate as evaluate

    video = tmp_path / "a-file" / "x.gif"
    (tmp_path / "a-file").write_text("not a folder\n")
    if where == "full-disk":
        video = tmp_path / "x.gif"

        def full(frames, path, fps=30):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        monkeypatch.setattr(evaluate, "save_video", full)
    result = CliRunner().invoke(cli, ["eval", "--checkpoint", str(hub), "--episodes", "1", "--video", str(video)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {video}: cannot write the video"), result.output
