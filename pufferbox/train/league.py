"""Head-to-head matches between checkpoints of a multi-agent (grouped) run, and their ratings.

A *match* puts checkpoint A's policy on one group (``side``, default the first group) and
checkpoint B's policies (or ``"random"``: uniform actions) on every other group, plays
``episodes`` episodes and scores each from A's side: a **win** when the env's outcome rule
(``EnvSpec.outcome``, e.g. Tag: the taggers win by tagging every runner, the runners by one
surviving) names A's group, or, without a rule, when A's group has a higher episode return (mean
over its agents) than every other group; a **draw** on a tie, else a **loss**. The win rate gets
a 95% Wilson score interval.

Ratings (:mod:`pufferbox.train.ratings`, shared with the tournament): one OpenSkill (Plackett-Luce)
rating per (checkpoint, group), updated game by game, persisted in ``RUN_DIR/league.sqlite``;
``pufferbox league RUN_DIR`` prints them ranked by the conservative estimate ``mu - 3 sigma``.

Example:
    >>> wilson(7, 10)  # doctest: +ELLIPSIS
    (0.39..., 0.89...)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from pufferbox.group_layout import winner
from pufferbox.train.config import ConfigError, RunConfig
from pufferbox.train.ratings import MatchResult, Ratings, wilson

if TYPE_CHECKING:
    from pufferbox.train.collector import HostCollector

__all__ = ["RANDOM", "MatchResult", "Ratings", "play_match", "round_robin", "wilson"]  # the last three: ratings.py

RANDOM = "random"


def checkpoint_file(path: str | Path) -> str:
    """The ``ckpt-*.pt`` a path names (a run directory: its newest finite one), so ratings key one file."""
    from pufferbox.train.checkpoint import latest_finite_checkpoint

    path = Path(path)
    if path.is_dir():
        found = latest_finite_checkpoint(path / "checkpoints") or latest_finite_checkpoint(path)
        return str(found) if found is not None else str(path)
    return str(path)


def grouped_state(path: str | Path) -> dict[str, Any]:
    from pufferbox.train.checkpoint import load_checkpoint

    state = load_checkpoint(path)
    return state if "groups" in state else seats_state(state, path)


def seats_state(state: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """A shared policy's checkpoint as one group per seat (each agent slot, named by its agent), every seat
    holding the shared weights: so the one policy can play any seat of a match (a third-party two-player
    game registered without groups trains this way)."""
    from pufferbox.registry import get_registry

    spec = get_registry().get_trained(str(state.get("env")), state.get("distribution"))
    raw = spec.make_raw(**dict(RunConfig.from_toml(state["config"]).env))
    try:
        agents = [str(a) for a in getattr(raw, "possible_agents", [])]
    finally:
        raw.close()
    if len(agents) < 2:
        raise ConfigError(f"{path}: {spec.name} has one agent; a match needs an env with two or more seats")
    groups = {agent: {"slots": torch.tensor([slot])} for slot, agent in enumerate(agents)}
    model = {f"groups.{agent}.{key}": value for agent in agents for key, value in state["model"].items()}
    return {**state, "groups": groups, "model": model}


def build_match_agent(
    spec: Any, venv: Any, config: RunConfig, layout: Any, side: str, state_a: dict, state_b: dict | None
) -> Any:
    """A :class:`GroupedAgent` with A's weights on ``side`` and B's (or uniform actions) on the rest."""
    from pufferbox.train.groups import grouped_agent, load_group

    grouped = grouped_agent(spec, layout, venv, config.policy)
    for name, agent in grouped.agents.items():
        source = state_a if name == side else state_b
        if source is None:  # uniform (legal) actions: zero logits (Box: mean 0, std 1)
            linear = cast(torch.nn.Linear, agent.actor.linear)
            torch.nn.init.zeros_(linear.weight)
            torch.nn.init.zeros_(linear.bias)
            agent.uniform = True  # random even when the match is --deterministic
            continue
        load_group(agent, name, source["model"])
    grouped.eval()
    return grouped


def play_match(
    checkpoint: str | Path,
    opponent: str | Path,
    episodes: int = 20,
    side: str | None = None,
    seed: int = 12345,
    num_envs: int = 8,
    deterministic: bool = False,
) -> MatchResult:
    """Play ``episodes`` episodes: ``checkpoint`` on group ``side``, ``opponent`` (a checkpoint or
    ``"random"``) on the others."""
    import pufferbox.vector
    from pufferbox.group_layout import checkpoint_layout
    from pufferbox.registry import get_registry
    from pufferbox.train.collector import HostCollector

    state_a = grouped_state(checkpoint)
    state_b = None if str(opponent) == RANDOM else grouped_state(opponent)
    if state_b is not None and state_b.get("env") != state_a.get("env"):
        raise ConfigError(f"{opponent}: trained on {state_b.get('env')!r}, not {state_a.get('env')!r}")
    spec = get_registry().get_trained(state_a["env"], state_a.get("distribution"))  # the plugin it trained on
    config = RunConfig.from_toml(state_a["config"])
    env_kwargs = dict(config.env)
    venv = pufferbox.vector.make(spec, backend="serial", num_envs=min(num_envs, episodes), env_kwargs=env_kwargs)
    try:
        layout = checkpoint_layout(spec, env_kwargs, state_a, f"{checkpoint} groups")
        side = side or layout.names[0]
        if side not in layout.names:
            raise ConfigError(f"--side: unknown group {side!r}; groups are {layout.names}")
        torch.manual_seed(seed)
        agent = build_match_agent(spec, venv, config, layout, side, state_a, state_b)
        returns, steps = play_episodes(HostCollector(venv, agent, horizon=1), layout, episodes, seed, deterministic)
    finally:
        venv.close()
    outcomes = [score(r, side, spec.training.outcome, env_kwargs) for r in returns]
    b = RANDOM if state_b is None else checkpoint_file(opponent)
    wins, draws, losses = (outcomes.count(x) for x in (1.0, 0.5, 0.0))
    others = "+".join(name for name in layout.names if name != side)
    return MatchResult(checkpoint_file(checkpoint), b, side, wins, draws, losses, outcomes, returns, others, steps)


def score(returns: dict[str, float], side: str, rule: Any = None, env_kwargs: Any = None) -> float:
    """``side``'s result of one episode: 1 a win, 0.5 a draw, 0 a loss (the env's outcome rule, else the
    higher mean return; see :func:`pufferbox.group_layout.winner`)."""
    if rule is not None:
        won = winner(returns, rule, env_kwargs)
        return 1.0 if won == side else 0.5 if won is None else 0.0
    best_other = max(v for k, v in returns.items() if k != side)
    return 1.0 if returns[side] > best_other else 0.5 if returns[side] == best_other else 0.0


def play_episodes(
    collector: HostCollector, layout: Any, episodes: int, seed: int, greedy: bool
) -> tuple[list[dict[str, float]], int]:
    """Per finished episode, each group's return (mean over its agents), and the env steps played. An env's
    episode ends where all its rows start together (finished agents are terminal at every step until then)."""
    apr = len(layout.slot_group)
    acc = np.zeros(collector.num_rows, dtype=np.float64)
    out: list[dict[str, float]] = []
    steps = 0
    collector.reset(seed)
    for played in collector.play_steps(greedy):
        rows = played.rows
        steps += len(rows) // apr
        fresh = played.first.reshape(-1, apr).all(1)
        acc[rows] += played.rewards
        for e in np.nonzero(played.starts.reshape(-1, apr).all(1) & ~fresh)[0]:
            env_rows = rows.reshape(-1, apr)[e]
            out.append({name: float(acc[env_rows][layout.slot_group == g].mean()) for g, name in enumerate(layout.names)})
            acc[env_rows] = 0.0
        if len(out) >= episodes:
            break
    return out[:episodes], steps


def round_robin(run_dir: str | Path, episodes: int = 20, seed: int = 12345) -> list[MatchResult]:
    """Every pair of the run's checkpoints (and ``random``), each side of each group; recorded in
    ``RUN_DIR/league.sqlite``."""
    from pufferbox.train.checkpoint import list_checkpoints

    run_dir = Path(run_dir)
    players = [str(p) for p in list_checkpoints(run_dir / "checkpoints")]
    if not players:
        raise ConfigError(f"{run_dir}: no checkpoints/ckpt-*.pt to rate")
    names = list(grouped_state(players[0])["groups"])
    ratings, results = Ratings(run_dir / "league.sqlite"), []
    for i, a in enumerate(players):
        for b in players[i + 1 :] + [RANDOM]:
            for side in names:
                match = play_match(a, b, episodes=episodes, side=side, seed=seed)
                ratings.record(match)
                results.append(match)
    return results
