"""A shared policy plays one seat of a match (issue 54, defect 15): a third-party two-player turn-based
game registered without groups trains one shared policy; `eval --opponent random` (or a past checkpoint)
plays it per seat instead of refusing it."""

from __future__ import annotations

import json

from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.registry import EnvSpec, get_registry


def test_a_shared_policy_plays_each_seat_against_random_and_a_past_checkpoint(tmp_path, monkeypatch):
    load_commands()
    registry = get_registry()
    game = EnvSpec(name="stranger/tictactoe", build=registry.get("pzclassic/tictactoe").build)  # no groups declared
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda name, plugin=None: game if name == game.name else real_get(name, plugin))
    run = tmp_path / "run"
    quick = ["--num-envs", "4", "--set", "train.num_steps=16", "--set", "train.checkpoint_interval=2"]
    trained = CliRunner().invoke(cli, ["train", game.name, "--run-dir", str(run), "--total-steps", "512", *quick])
    assert trained.exit_code == 0, trained.output
    checkpoints = sorted((run / "checkpoints").glob("ckpt-*.pt"))
    for opponent, side in [("random", None), ("random", "player_2"), (str(checkpoints[0]), "player_1")]:
        args = ["eval", "--checkpoint", str(checkpoints[-1]), "--opponent", opponent, "--episodes", "6"]
        result = CliRunner().invoke(cli, args + (["--side", side] if side else []))
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output.strip().splitlines()[-1])
        assert summary["games"] == 6 and summary["side"] == (side or "player_1"), summary
