"""Turn-based (PettingZoo AEC) envs: stepped turn by turn, waiting rows masked, rewards to their own rows,
GAE over each agent's own moves, conformance, training and matches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pettingzoo.classic import tictactoe_v3

import pufferbox.conformance.checks as checks
from pufferbox.conformance import check_env_spec
from pufferbox.emulation import AECEmulator, emulate
from pufferbox.registry import EnvBuild, EnvSpec, TrainDefaults
from pufferbox.train.config import resolve_config
from pufferbox.train.learner import gae
from pufferbox.train.trainer import Trainer


def tictactoe_groups(raw_env):
    return {"first": ["player_1"], "second": ["player_2"]}


def tictactoe_spec() -> EnvSpec:
    """An unmodified PettingZoo AEC env, wrapped only by its binding (as a third-party plugin would)."""
    return EnvSpec("ttt", EnvBuild(tictactoe_v3.env), TrainDefaults(groups=tictactoe_groups))


# -- the emulator ---------------------------------------------------------------------------
def test_binding_returning_an_aec_env_gets_the_turn_based_emulator():
    env = emulate(tictactoe_v3.env(), name="ttt")
    assert isinstance(env, AECEmulator) and env.num_agents == 2
    assert env.obs_spec.mask is not None and env.obs_spec.mask.sizes == (9,)


def test_only_the_mover_acts_and_the_losers_reward_reaches_its_own_row():
    env = emulate(tictactoe_v3.env(), name="ttt")
    env.vec_reset(seed=0)
    b = env.buffers
    assert b.masks.tolist() == [True, False]  # player_1 moves first
    # player_1 plays 0, 1, 2 (top row) while player_2 plays 3, 4; the waiting row's action is ignored
    moves = [(0, 8), (8, 3), (1, 8), (8, 4)]
    for t, (p1, p2) in enumerate(moves):
        env.vec_step(np.array([p1, p2]))
        assert b.masks.tolist() == ([False, True] if t % 2 == 0 else [True, False])
        assert b.rewards.tolist() == [0.0, 0.0] and not b.terminals.any()
    board = env.obs_spec.unflatten(b.observations)["observation"]
    assert board[0, 0, 0, 0] == 1 and board[0, 1, 0, 1] == 1  # each row: its own marks in plane 0
    episode = env.vec_step(np.array([2, 0]))
    assert b.rewards.tolist() == [1.0, -1.0]  # the loser's -1 arrived while it waited: its own row
    assert b.terminals.tolist() == [True, True] and not b.truncations.any()
    assert len(episode) == 1 and episode.lengths.tolist() == [5] and episode.returns.tolist() == [0.0]
    assert b.masks.tolist() == [True, False]  # the next game started in the same step (SAME_STEP)
    assert not env.obs_spec.unflatten(b.observations)["observation"].any()


def test_parallel_face_plays_the_movers_action_only():
    env = emulate(tictactoe_v3.env(), name="ttt")
    obs, _ = env.reset(seed=1)
    assert set(obs) == {"player_1", "player_2"}
    _, rewards, terms, _, _ = env.step({"player_1": 4, "player_2": 4})
    assert rewards == {"player_1": 0.0, "player_2": 0.0} and not any(terms.values())
    assert env.env.agent_selection == "player_2"


# -- GAE over each agent's own moves ------------------------------------------------------------
def reference_advantages(r, v, starts, acting, gamma, lam):
    """Per row, the acting steps as their own MDP: a move's reward is its own plus the waiting rewards until
    the row's next move (or an episode end); GAE on that sequence."""
    out = np.zeros((r.shape[0], r.shape[1] - 1))
    steps = r.shape[1] - 1
    for row in range(r.shape[0]):
        moves = [t for t in range(steps) if acting[row, t]]
        nxt_adv = 0.0
        for i in reversed(range(len(moves))):
            t = moves[i]
            end = moves[i + 1] if i + 1 < len(moves) else steps
            reward, cut = r[row, t], False
            for s in range(t + 1, end + 1):
                if starts[row, s]:
                    cut = True
                    break
                if s < end:
                    reward += r[row, s]
            boot = 0.0 if cut else gamma * (v[row, end] + lam * (nxt_adv if end < steps else 0.0))
            nxt_adv = reward - v[row, t] + boot
            out[row, t] = nxt_adv
    return out


@pytest.mark.parametrize("seed", range(6))
def test_turn_gae_is_gae_on_each_agents_own_moves(seed):
    rng = np.random.default_rng(seed)
    shape = (5, 17)
    r, v = rng.normal(size=shape), rng.normal(size=shape)
    starts, acting = rng.random(shape) < 0.15, rng.random(shape) < 0.5
    adv, returns = gae(*(torch.tensor(x) for x in (r, v, starts)), 0.97, 0.9, torch.tensor(acting))
    expected = reference_advantages(r, v, starts, acting, 0.97, 0.9)
    live = acting[:, :-1]
    assert np.allclose(adv.numpy()[live], expected[live], atol=1e-5)
    assert np.allclose((returns - torch.tensor(v[:, :-1])).numpy()[live], expected[live], atol=1e-5)


def test_turn_gae_with_every_step_acting_is_plain_gae():
    rng = np.random.default_rng(0)
    r, v = torch.tensor(rng.normal(size=(4, 9))), torch.tensor(rng.normal(size=(4, 9)))
    starts = torch.tensor(rng.random((4, 9)) < 0.2)
    plain, _ = gae(r, v, starts, 0.99, 0.95)
    turns, _ = gae(r, v, starts, 0.99, 0.95, torch.ones(4, 9, dtype=torch.bool))
    assert torch.allclose(plain, turns, atol=1e-6)


# -- conformance ------------------------------------------------------------------------------
def test_an_unmodified_aec_env_passes_every_check():
    results = {r.name: r for r in check_env_spec(tictactoe_spec(), steps=80, num_envs=2)}
    assert all(r.ok for r in results.values()), [str(r) for r in results.values() if not r.ok]
    assert results["masks"].detail == "" and results["serial"].detail == ""


def test_serial_check_catches_an_emulator_that_drops_the_waiting_agents_reward(monkeypatch):
    advance = AECEmulator.advance

    def movers_reward_only(self, action):
        mover = self.env.agent_selection
        rewards, *rest = advance(self, action)
        return ({a: (r if a == mover else 0.0) for a, r in rewards.items()}, *rest)

    monkeypatch.setattr(AECEmulator, "advance", movers_reward_only)
    (result,) = check_env_spec(tictactoe_spec(), steps=80, num_envs=2, checks=["serial"])
    assert not result.ok and "rewards differ" in result.detail


def test_masks_check_catches_a_sampler_that_ignores_the_mask_on_a_turn_based_env(monkeypatch):
    monkeypatch.setattr(checks, "mask_logits", lambda logits, legal, sizes: logits)
    (result,) = check_env_spec(tictactoe_spec(), steps=40, num_envs=2, checks=["masks"])
    assert not result.ok and "illegal action" in result.detail


# -- training and matches ---------------------------------------------------------------------
def quick_config(*extra: str) -> dict:
    return resolve_config(
        {},
        overrides=[
            "train.checkpoint_interval=0",
            "vec.num_envs=4",
            "train.num_steps=16",
            "train.num_minibatches=2",
            "train.update_epochs=2",
            *extra,
        ],
    )


@pytest.mark.parametrize("backend", ["serial", "multiprocessing"])
def test_self_play_trains_on_a_turn_based_env(monkeypatch, backend):
    """Both seats' policies update; an illegal move (which tic-tac-toe reports through PettingZoo's logger)
    fails the run where the env runs in this process."""
    from pettingzoo.utils.env_logger import EnvLogger

    def refuse(*args, **kwargs):
        raise AssertionError("an illegal move reached the env")

    monkeypatch.setattr(EnvLogger, "warn_on_illegal_move", refuse)
    extra = ["vec.num_workers=2"] if backend == "multiprocessing" else []
    trainer = Trainer(tictactoe_spec(), quick_config(f"vec.backend={backend}", *extra))
    try:
        history = trainer.train_steps(4 * 2 * 16 * 3)
    finally:
        trainer.close()
    last = history[-1]
    assert any(k.startswith("first/") for k in last) and any(k.startswith("second/") for k in last), sorted(last)
    assert all(np.isfinite(v) for k, v in last.items() if k.endswith("policy_loss")), last


def test_turn_state_is_read_past_forwarding_wrappers_only():
    """PettingZoo's own wrappers forward every read of the turn state to the unwrapped env, so the
    emulator reads it there (one lookup, not one per layer); a wrapper that defines any of it itself
    keeps every read on the outermost env, and the loser's reshaped reward still reaches its row."""
    from pettingzoo.utils.wrappers import BaseWrapper

    from pufferbox.emulation import turn_state_holder

    plain = tictactoe_v3.env()
    assert turn_state_holder(plain) is plain.unwrapped

    class HalfRewards(BaseWrapper):
        @property
        def rewards(self):
            return {agent: reward / 2 for agent, reward in self.env.rewards.items()}

    shaped = HalfRewards(tictactoe_v3.env())
    assert turn_state_holder(shaped) is shaped
    env = emulate(HalfRewards(tictactoe_v3.env()), name="ttt")
    env.vec_reset(seed=0)
    for p1, p2 in [(0, 8), (8, 3), (1, 8), (8, 4), (2, 0)]:
        env.vec_step(np.array([p1, p2]))
    assert env.buffers.rewards.tolist() == [0.5, -0.5]
