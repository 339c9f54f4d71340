"""Evaluation and matches play the plain game: ``TrainDefaults.match_env`` overrides the training run's env
settings (Connect Four's training-only random seat)."""

from __future__ import annotations


def test_matches_play_without_the_training_opponent(tmp_path, monkeypatch):
    """Eval and matches play the plain game: the plugin's match_env switches the random seat off."""
    from click.testing import CliRunner

    import pufferbox.vector
    from pufferbox.cli import cli, load_commands
    from pufferbox.registry import get_registry
    from pufferbox.train.league import play_match

    assert get_registry().get("ocean/connect4").training.match_env == {"random_seat": 0}
    load_commands()
    run = tmp_path / "c4"
    args = ["train", "ocean/connect4", "--run-dir", str(run), "--total-steps", "1024", "--num-envs", "4"]
    args += ["--set", "train.num_steps=64", "--set", "env.random_seat=1000", "--no-tensorboard"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    made = []
    make = pufferbox.vector.make
    monkeypatch.setattr(pufferbox.vector, "make", lambda *a, **k: made.append(k["env_kwargs"]) or make(*a, **k))
    match = play_match(run, "random", episodes=4, side="second")
    assert match.wins + match.draws + match.losses == 4
    assert made and all(kwargs["random_seat"] == 0 for kwargs in made)
