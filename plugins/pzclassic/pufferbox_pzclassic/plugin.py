"""Registers PettingZoo's classic turn-based games: the AEC envs themselves, unmodified.

Each binding returns PettingZoo's own ``AECEnv`` (``pettingzoo.classic.<game>.env()``); pufferbox steps
it turn by turn (only the agent to move acts) and masks illegal moves with the ``action_mask`` every
classic game puts beside its observation.

* ``pzclassic/tictactoe``, ``pzclassic/connect_four``: boards, +1/-1 for a win/loss, 0 for a draw;
* ``pzclassic/chess`` (``chess``; 4,672 moves), ``pzclassic/go`` (9x9 by default: ``env.board_size``);
* ``pzclassic/leduc_holdem`` (``rlcard``): two-player poker, rewards in chips.

Self-play: one policy per seat (groups ``first`` and ``second``), so ``pufferbox eval GAME
--opponent random --side first|second`` plays a seat against uniformly random legal moves; the winner
is the seat with the higher return (a draw when equal). Tic-tac-toe's and connect four's defaults also train each seat
against a careless one (``league.random_opponent``), half of the time a scripted player of
:mod:`pufferbox_pzclassic.tactics` (``league.scripted_opponent``: tic-tac-toe's perfect player, connect
four's one-ply tactician): self-play alone leaves the two seats with blind spots neither punishes.
Tic-tac-toe's policy sees each position through the board's eight symmetries, connect four's through
its mirror (:mod:`pufferbox_pzclassic.symmetry`; ``--set policy.encoder="mlp"`` for a plain MLP).

``pzclassic/tictactoe-vs-random``: the single-agent game against a uniformly random opponent
(a seeded coin picks the seat each episode), with the mask under ``action_mask`` (``mask=True``) or under
``legal_moves`` (``mask=False``: pufferbox does not mask, an illegal move loses; the episode metric
``illegal`` says whether the game ended that way): masked vs unmasked learning on the same env.

The game packages are imported inside the bindings only, so without them the envs are listed as
unavailable with the install command.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium
import numpy as np

from pufferbox import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, hookimpl

PETTINGZOO = {"pettingzoo": "pettingzoo==1.27.0"}
SEATS = ("first", "second")

# name -> (module under pettingzoo.classic, binding kwargs, extra requirements, description, train config)
GAMES: dict[str, tuple[str, dict, dict, str, dict]] = {
    "tictactoe": (
        "tictactoe_v3",
        {},
        {},
        "tic-tac-toe, 9 moves (masked)",
        {
            "train": {
                "total_steps": 1_000_000,
                "num_steps": 64,
                "ent_coef": 0.1,
                "learning_rate": 1e-3,
                "num_minibatches": 4,
            },
            "vec": {"num_envs": 32},
            "policy": {"hidden_size": 128},
            # in 80% of the games one seat is careless: half of those uniformly random, half a perfect player,
            # which punishes every losing reply (self-play's seats share blind spots neither punishes)
            "league": {"random_opponent": 0.8, "scripted_opponent": "pufferbox_pzclassic.tactics:tictactoe_perfect"},
        },
    ),
    "connect_four": (
        "connect_four_v3",
        {},
        {},
        "connect four on 6x7, 7 moves (masked)",
        {
            "train": {
                "total_steps": 3_000_000,
                "num_steps": 64,
                "ent_coef": 0.01,
                "learning_rate": 1e-3,
                "num_minibatches": 4,
            },
            "vec": {"num_envs": 64},
            "policy": {"hidden_size": 128},
            "league": {"random_opponent": 0.8, "scripted_opponent": "pufferbox_pzclassic.tactics:connect_four"},
        },
    ),
    "chess": (
        "chess_v6",
        {},
        {"chess": "chess==1.11.2"},
        "chess, 8x8x111 planes, 4,672 moves (masked)",
        {"train": {"total_steps": 10_000_000}, "vec": {"num_envs": 16}},
    ),
    "go": (
        "go_v5",
        {"board_size": 9},
        {},
        "go on 9x9 (env.board_size), 82 moves with pass (masked)",
        {"train": {"total_steps": 10_000_000}, "vec": {"num_envs": 16}},
    ),
    "leduc_holdem": (
        "leduc_holdem_v4",
        {},
        {"rlcard": "rlcard==1.2.0"},
        "Leduc hold'em poker, 2 players, 4 actions (masked)",
        {"train": {"total_steps": 2_000_000, "ent_coef": 0.01}, "vec": {"num_envs": 32}},
    ),
}


# the boards' symmetric policies (pufferbox_pzclassic.symmetry): every image of a position played alike
POLICIES = {
    "tictactoe": "pufferbox_pzclassic.symmetry:TicTacToePolicy",
    "connect_four": "pufferbox_pzclassic.symmetry:ConnectFourPolicy",
}


def make_game(module: str, **kwargs: Any) -> Any:
    """``pettingzoo.classic.<module>.env(**kwargs)``: the AEC env, as PettingZoo builds it."""
    return importlib.import_module(f"pettingzoo.classic.{module}").env(**kwargs)


def seat_groups(raw_env: Any) -> dict[str, list[str]]:
    """One group per seat, in ``possible_agents`` order (``first`` moves first)."""
    return {seat: [agent] for seat, agent in zip(SEATS, raw_env.possible_agents)}


class VersusRandom(gymnasium.Env):
    """A classic game as a single-agent env: the learner plays a seat drawn each episode and a
    uniformly random legal opponent the other. ``mask=False`` renames ``action_mask`` to ``legal_moves``
    (still observed, no longer applied by pufferbox)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, module: str = "tictactoe_v3", mask: bool = True, render_mode: str | None = None, **kwargs: Any):
        self.game = make_game(module, **kwargs)
        if not mask:  # an unmasked learner moves illegally often: the ``illegal`` metric counts it, quietly
            from pettingzoo.utils.env_logger import EnvLogger

            EnvLogger.suppress_output()
        agent = self.game.possible_agents[0]
        space = self.game.observation_space(agent)
        self.key = "action_mask" if mask else "legal_moves"
        self.observation_space = gymnasium.spaces.Dict({"observation": space["observation"], self.key: space["action_mask"]})
        self.action_space = self.game.action_space(agent)
        self.render_mode = render_mode

    def view(self) -> dict:
        obs = self.game.observe(self.me)
        return {"observation": obs["observation"], self.key: obs["action_mask"]}

    def reply(self) -> float:
        """The opponent moves until it is the learner's turn or the game ended; the learner's rewards."""
        reward = 0.0
        while self.game.agents and self.game.agent_selection != self.me:
            who = self.game.agent_selection
            done = self.game.terminations[who] or self.game.truncations[who]
            legal = np.flatnonzero(self.game.observe(who)["action_mask"])
            self.game.step(None if done else int(self.np_random.choice(legal)))
            reward += float(self.game.rewards.get(self.me, 0.0))
        return reward

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.game.reset(seed=seed)
        self.me = self.game.possible_agents[int(self.np_random.integers(2))]
        self.reply()
        return self.view(), {}

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        illegal = not self.game.observe(self.me)["action_mask"][int(action)]
        self.game.step(int(action))
        reward = float(self.game.rewards.get(self.me, 0.0))
        if not (self.game.terminations[self.me] or self.game.truncations[self.me]):
            reward += self.reply()
        terminated = bool(self.game.terminations.get(self.me, True))
        truncated = bool(self.game.truncations.get(self.me, False)) and not terminated
        return self.view(), reward, terminated, truncated, {"illegal": float(illegal)}

    def render(self) -> str | None:
        return str(self.game.unwrapped.board) if self.render_mode == "ansi" else None


def make_versus_random(module: str = "tictactoe_v3", mask: bool = True, **kwargs: Any) -> VersusRandom:
    return VersusRandom(module, mask, **kwargs)


@hookimpl
def register_envs(register: Any) -> None:
    for name, (module, kwargs, requires, description, config) in GAMES.items():
        register(
            EnvSpec(
                f"pzclassic/{name}",
                EnvBuild(make_game, kwargs={"module": module, **kwargs}),
                TrainDefaults(config=config, groups=seat_groups, policy=POLICIES.get(name)),
                EnvMeta(description=description, requires={**PETTINGZOO, **requires}),
            )
        )
    register(
        EnvSpec(
            "pzclassic/tictactoe-vs-random",
            EnvBuild(make_versus_random, kwargs={"module": "tictactoe_v3", "mask": True}, episode_metrics=("illegal",)),
            TrainDefaults(
                config={
                    "train": {"total_steps": 300_000, "num_steps": 64, "ent_coef": 0.01, "num_minibatches": 4},
                    "vec": {"num_envs": 16},
                    "policy": {"hidden_size": 128},
                },
                solved_return=0.9,
            ),
            EnvMeta(description="tic-tac-toe against random legal moves (env.mask=false: unmasked)", requires=PETTINGZOO),
        )
    )
