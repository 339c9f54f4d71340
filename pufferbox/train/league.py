"""Head-to-head matches between checkpoints of a multi-agent (grouped) run, and their ratings.

A *match* puts checkpoint A's policy on one group (``side``, default the first group) and
checkpoint B's policies (or ``"random"``: uniform actions) on every other group, plays
``episodes`` episodes and scores each from A's side: a **win** when the env's outcome rule
(``EnvSpec.outcome``, e.g. Tag: the taggers win by tagging every runner, the runners by one
surviving) names A's group, or, without a rule, when A's group has a higher episode return (mean
over its agents) than every other group; a **draw** on a tie, else a **loss**. The win rate gets
a 95% Wilson score interval.

Ratings: one OpenSkill (Plackett-Luce) rating per checkpoint, updated game by game, persisted
in ``RUN_DIR/league.sqlite`` (tables ``ratings`` and ``matches``); ``pufferbox league RUN_DIR``
prints them ranked by the conservative estimate ``mu - 3 sigma``.

Example:
    >>> wilson(7, 10)  # doctest: +ELLIPSIS
    (0.39..., 0.89...)
"""

from __future__ import annotations

import math
import sqlite3
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from pufferbox.groups import winner
from pufferbox.train.config import (
    ConfigError,
    PolicyConfig,
    merge,
    resolve_config,
    typed,
)

__all__ = ["RANDOM", "MatchResult", "Ratings", "play_match", "round_robin", "wilson"]

RANDOM = "random"


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% for ``z = 1.96``); (0, 1) when ``n == 0``."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class MatchResult:
    """Wins, draws and losses of ``a`` (playing ``side``) against ``b``; the per-game outcomes (1, 0.5, 0)
    and each game's group returns (mean over a group's agents)."""

    a: str
    b: str
    side: str
    wins: int
    draws: int
    losses: int
    outcomes: list[float]
    returns: list[dict[str, float]] = field(default_factory=list)
    opponent_side: str = ""  # the group(s) ``b`` played ("runner"; "a+b" for several); "" if unknown
    steps: int = 0  # env steps the match took (every env of the vector, finished episodes or not)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def summary(self) -> dict[str, Any]:
        low, high = wilson(self.wins, self.games)
        return {
            "a": self.a,
            "b": self.b,
            "side": self.side,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "win_rate": self.wins / max(1, self.games),
            "win_rate_ci95": [round(low, 4), round(high, 4)],
        }


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
    if "groups" not in state:
        raise ConfigError(
            f"{path}: holds one shared policy, not agent groups; matches need a checkpoint of a "
            "run with [groups] (or an env that declares groups, e.g. tag)"
        )
    return state


def build_match_agent(
    spec: Any, venv: Any, config: dict, layout: Any, side: str, state_a: dict, state_b: dict | None
) -> Any:
    """A :class:`GroupedAgent` with A's weights on ``side`` and B's (or uniform actions) on the rest."""
    from pufferbox.train.groups import grouped_agent, load_group

    grouped = grouped_agent(spec, layout, venv, typed(PolicyConfig, config["policy"]))
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
    from pufferbox.groups import checkpoint_layout
    from pufferbox.registry import get_registry
    from pufferbox.train.collector import HostCollector

    state_a = grouped_state(checkpoint)
    state_b = None if str(opponent) == RANDOM else grouped_state(opponent)
    if state_b is not None and state_b.get("env") != state_a.get("env"):
        raise ConfigError(f"{opponent}: trained on {state_b.get('env')!r}, not {state_a.get('env')!r}")
    spec = get_registry().get(state_a["env"])
    config = merge(resolve_config(), tomllib.loads(state_a["config"]), "checkpoint config")
    env_kwargs = dict(config.get("env", {}))
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
    higher mean return; see :func:`pufferbox.groups.winner`)."""
    if rule is not None:
        won = winner(returns, rule, env_kwargs)
        return 1.0 if won == side else 0.5 if won is None else 0.0
    best_other = max(v for k, v in returns.items() if k != side)
    return 1.0 if returns[side] > best_other else 0.5 if returns[side] == best_other else 0.0


@torch.no_grad()
def play_episodes(collector: Any, layout: Any, episodes: int, seed: int, greedy: bool) -> tuple[list[dict[str, float]], int]:
    """Per finished episode, each group's return (mean over its agents), and the env steps played. An env's
    episode ends where all its rows start together (finished agents are terminal at every step until then)."""
    apr, venv = len(layout.slot_group), collector.venv
    acc = np.zeros(venv.num_agents, dtype=np.float64)
    out: list[dict[str, float]] = []
    steps = 0
    collector.reset(seed)
    while len(out) < episodes:
        if collector.pending is not None:
            venv.send(collector.pending)
        obs, rewards, terminals, truncations, _, env_ids, _ = venv.recv()
        rows = collector.rows_of(env_ids)
        steps += len(rows) // apr
        fresh = collector.first[rows].reshape(-1, apr).all(1)
        starts = np.logical_or(terminals, truncations) | collector.first[rows]
        collector.first[rows] = False
        acc[rows] += rewards
        for e in np.nonzero(starts.reshape(-1, apr).all(1) & ~fresh)[0]:
            env_rows = rows.reshape(-1, apr)[e]
            out.append({name: float(acc[env_rows][layout.slot_group == g].mean()) for g, name in enumerate(layout.names)})
            acc[env_rows] = 0.0
        collector.pending = collector.choose(obs, starts, rows, greedy)[0]
    return out[:episodes], steps


class Ratings:
    """OpenSkill ratings per (checkpoint, group) in a SQLite file (``RUN_DIR/league.sqlite``).

    A checkpoint holds one policy per group, and in an asymmetric game (taggers vs runners) how well
    its tagger plays says nothing about its runner: each (checkpoint, group) is its own player, rated
    against the players it met on the other side.

    Example:
        >>> import tempfile, os
        >>> r = Ratings(os.path.join(tempfile.mkdtemp(), "league.sqlite"))
        >>> r.record(MatchResult("a", "b", "tagger", 3, 0, 0, [1.0, 1.0, 1.0], opponent_side="runner"))
        >>> [(row["name"], row["group"]) for row in r.table()]
        [('b', 'runner'), ('a', 'tagger')]
    """

    def __init__(self, path: str | Path):
        from openskill.models import PlackettLuce

        self.path = Path(path)
        self.model = PlackettLuce()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS group_ratings (name TEXT, grp TEXT, mu REAL, sigma REAL, "
                "games INTEGER, wins INTEGER, draws INTEGER, losses INTEGER, PRIMARY KEY (name, grp))"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS matches (id INTEGER PRIMARY KEY AUTOINCREMENT, a TEXT, b TEXT, "
                "side TEXT, wins INTEGER, draws INTEGER, losses INTEGER, time REAL)"
            )

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, db: sqlite3.Connection, name: str, group: str) -> list:
        row = db.execute(
            "SELECT mu, sigma, games, wins, draws, losses FROM group_ratings WHERE name = ? AND grp = ?", (name, group)
        ).fetchone()
        if row is None:
            fresh = self.model.rating(name=name)
            return [fresh.mu, fresh.sigma, 0, 0, 0, 0]
        return list(row)

    def record(self, match: MatchResult) -> None:
        """Update both players' ratings game by game (ranks: winner first, a draw ties them) and log the match:
        ``(match.a, match.side)`` against ``(match.b, match.opponent_side)``."""
        group_a, group_b = match.side, match.opponent_side or "others"
        with self.connect() as db:
            a, b = self.get(db, match.a, group_a), self.get(db, match.b, group_b)
            ra, rb = self.model.rating(mu=a[0], sigma=a[1]), self.model.rating(mu=b[0], sigma=b[1])
            for outcome in match.outcomes:
                ranks = [1.0, 2.0] if outcome == 1.0 else [2.0, 1.0] if outcome == 0.0 else [1.0, 1.0]
                [[ra], [rb]] = self.model.rate([[ra], [rb]], ranks=ranks)
            wins, draws, losses = match.wins, match.draws, match.losses
            sides = ((match.a, group_a, ra, a, (wins, draws, losses)), (match.b, group_b, rb, b, (losses, draws, wins)))
            for name, group, r, old, (w, d, lost) in sides:
                db.execute(
                    "INSERT OR REPLACE INTO group_ratings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (name, group, r.mu, r.sigma, old[2] + w + d + lost, old[3] + w, old[4] + d, old[5] + lost),
                )
            db.execute(
                "INSERT INTO matches (a, b, side, wins, draws, losses, time) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (match.a, match.b, match.side, wins, draws, losses, time.time()),
            )

    def table(self) -> list[dict[str, Any]]:
        """Every rated (checkpoint, group), by group, best conservative estimate (``mu - 3 sigma``) first."""
        with self.connect() as db:
            rows = db.execute("SELECT name, grp, mu, sigma, games, wins, draws, losses FROM group_ratings").fetchall()
        out = [dict(zip(("name", "group", "mu", "sigma", "games", "wins", "draws", "losses"), r)) for r in rows]
        for row in out:
            row["ordinal"] = row["mu"] - 3 * row["sigma"]
        return sorted(out, key=lambda r: (r["group"], -r["ordinal"]))


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
