"""The symmetric board policies against PettingZoo's own games: each image of a position is the position
PettingZoo shows after the image moves, and the agent scores every image of a position alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pettingzoo.classic import connect_four_v3, tictactoe_v3
from pufferbox_pzclassic import symmetry

import pufferbox.vector
from pufferbox import api

GAMES = {
    "tictactoe": (tictactoe_v3, symmetry.tictactoe_images, "TicTacToePolicy"),
    "connect_four": (connect_four_v3, symmetry.connect_four_images, "ConnectFourPolicy"),
}


def specs(game: str):
    venv = pufferbox.vector.make(api.get_registry().get(f"pzclassic/{game}"), backend="serial", num_envs=1)
    try:
        return venv.obs_spec, venv.act_spec
    finally:
        venv.close()


def random_positions(module, seed: int, count: int):
    """``(moves, flat observation of the player to move)`` along one random legal game, replayable."""
    rng, env, moves, out = np.random.default_rng(seed), module.env(), [], []
    env.reset(seed=0)
    while not any(env.terminations.values()) and len(out) < count:
        observation = env.observe(env.agent_selection)
        out.append((list(moves), observation))
        move = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        env.step(move)
        moves.append(move)
    return out


@pytest.mark.parametrize("game", GAMES)
def test_each_image_is_the_position_pettingzoo_shows_after_the_image_moves(game):
    module, images, name = GAMES[game]
    obs_spec, act_spec = specs(game)
    policy = getattr(symmetry, name)(obs_spec, act_spec, hidden_size=8)
    for seed in range(3):
        for moves, observation in random_positions(module, seed, 12):
            real = obs_spec.flatten(observation)
            for index, (_, image_moves) in enumerate(images()):
                inverse = np.argsort(image_moves)
                env = module.env()
                env.reset(seed=0)
                for move in moves:
                    env.step(int(inverse[move]))  # the image of real move m
                mirrored = obs_spec.flatten(env.observe(env.agent_selection))
                assert np.array_equal(real[policy.gather[index].numpy()], mirrored), (game, moves, index)


@pytest.mark.parametrize("game", GAMES)
def test_the_agent_scores_every_image_of_a_position_alike(game):
    module, images, name = GAMES[game]
    obs_spec, act_spec = specs(game)
    torch.manual_seed(0)
    agent = api.build_agent(obs_spec, act_spec, {"encoder": f"pufferbox_pzclassic.symmetry:{name}", "hidden_size": 16})
    plain = api.build_agent(obs_spec, act_spec, {"encoder": "mlp", "hidden_size": 16})
    gather = agent.encoder.gather.numpy()
    rows = np.stack([obs_spec.flatten(o) for _, o in random_positions(module, 7, 8)])
    with torch.no_grad():
        logits, value = agent.heads(agent.encoder(torch.from_numpy(rows)))
        plain_logits, _ = plain.heads(plain.encoder(torch.from_numpy(rows)))
        for index, (_, image_moves) in enumerate(images()):
            image_logits, image_value = agent.heads(agent.encoder(torch.from_numpy(rows[:, gather[index]])))
            torch.testing.assert_close(image_logits, logits[:, image_moves])  # image move p is real move moves[p]
            torch.testing.assert_close(image_value, value)
            if index:  # the plain MLP has no such symmetry: the check can fail
                image_plain, _ = plain.heads(plain.encoder(torch.from_numpy(rows[:, gather[index]])))
                assert not torch.allclose(image_plain, plain_logits[:, image_moves], atol=1e-6)
    masked = agent.greedy(torch.from_numpy(rows))[0].numpy()  # greedy moves are legal, as with any masked agent
    assert all(rows[i, masked[i]] == 1 for i in range(len(rows)))  # the mask is the row's first leaf


def test_a_symmetric_policy_behind_an_lstm_is_one_line():
    obs_spec, act_spec = specs("tictactoe")
    with pytest.raises(Exception, match="policy.lstm: the encoder TicTacToePolicy brings its own output layers") as error:
        api.build_agent(obs_spec, act_spec, {"encoder": "pufferbox_pzclassic.symmetry:TicTacToePolicy", "lstm": True})
    assert error.type.__name__ == "ConfigError"  # the trainer's one-line error (not part of the plugin API)
