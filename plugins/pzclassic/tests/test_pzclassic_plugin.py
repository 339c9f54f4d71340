"""PettingZoo's classic games through pufferbox: conformance, masks, the versus-random env, availability."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pufferbox import api
from pufferbox.conformance import assert_conforms
from pufferbox.conformance.testing import assert_unavailable_without


def spec(name: str):
    return api.get_registry().get(name)


@pytest.mark.parametrize("game", ["tictactoe", "connect_four", "leduc_holdem"])
def test_game_conforms(game):
    assert_conforms(spec(f"pzclassic/{game}"), steps=80, num_envs=2)


@pytest.mark.slow
@pytest.mark.parametrize("game", ["chess", "go"])
def test_big_board_game_conforms(game):
    assert_conforms(spec(f"pzclassic/{game}"), steps=40, num_envs=2)


def test_versus_random_masks_or_not_as_asked():
    masked = spec("pzclassic/tictactoe-vs-random")
    assert masked.flattening()[0].mask is not None
    assert masked.flattening(mask=False)[0].mask is None  # the same legal moves, observed but not applied
    env = masked.make_raw(mask=False)
    obs, _ = env.reset(seed=3)
    taken = int(np.flatnonzero(obs["legal_moves"] == 0)[0]) if not obs["legal_moves"].all() else None
    if taken is not None:  # an illegal move loses at once
        _, reward, terminated, _, _ = env.step(taken)
        assert terminated and reward == -1.0


def test_versus_random_conforms():
    assert_conforms(spec("pzclassic/tictactoe-vs-random"), steps=80, num_envs=2)


def test_chess_and_poker_are_unavailable_without_their_packages():
    rows, error = assert_unavailable_without(["pzclassic/chess"], hide=["chess"])
    assert "pip install -c tank/constraints.txt 'chess==1.11.2'" in rows["pzclassic/chess"]["reason"]
    assert error.startswith("Error: env 'pzclassic/chess' is unavailable: missing chess")


def test_tictactoe_self_play_meets_the_perfect_player_with_the_symmetric_policy_by_default(tmp_path):
    from pufferbox_pzclassic import symmetry, tactics

    assert spec("pzclassic/tictactoe").load_policy() is symmetry.TicTacToePolicy
    assert spec("pzclassic/connect_four").load_policy() is symmetry.ConnectFourPolicy
    league = spec("pzclassic/tictactoe").training.config["league"]
    assert api.resolve(league["scripted_opponent"]) is tactics.tictactoe_perfect and 0 < league["random_opponent"] < 1
    four = spec("pzclassic/connect_four").training.config["league"]
    assert api.resolve(four["scripted_opponent"]) is tactics.connect_four and 0 < four["random_opponent"] < 1
    run = tmp_path / "run"
    args = ["train", "pzclassic/tictactoe", "--total-steps", "4096", "--run-dir", str(run), "--no-tensorboard"]
    done = subprocess.run([sys.executable, "-m", "pufferbox", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'scripted_opponent = "pufferbox_pzclassic.tactics:tictactoe_perfect"' in (run / "config.toml").read_text()
    # the symmetric policy through eval (registered by the plugin, so trusted), against random moves
    args = ["eval", "pzclassic/tictactoe", "--checkpoint", str(run), "--opponent", "random", "--side", "second"]
    args += ["--episodes", "6", "--deterministic"]
    done = subprocess.run([sys.executable, "-m", "pufferbox", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "second" in done.stdout
