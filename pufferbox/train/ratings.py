"""How players are ranked, for the league and the tournament alike.

* Head-to-head games (``pufferbox league``, ``eval --opponent``): a :class:`MatchResult` (wins,
  draws, losses; a 95% :func:`wilson` interval on the win rate) updates one OpenSkill
  (Plackett-Luce) rating per (checkpoint, group), persisted by :class:`Ratings` in
  ``RUN_DIR/league.sqlite`` and ranked by the conservative estimate ``mu - 3 sigma``.
* Scores from evaluation episodes (the tournament's leaderboard: mean return, its standard
  deviation, the number of episodes): :func:`standard_error`, and :func:`clearly_behind`, the rule
  that tells a worse agent from one whose lower score is noise.

Example:
    >>> wilson(7, 10)  # doctest: +ELLIPSIS
    (0.39..., 0.89...)
    >>> clearly_behind(380.0, standard_error(60.0, 10), best=420.0, best_se=standard_error(90.0, 10))
    False
"""

from __future__ import annotations

import math
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["COLLAPSED", "NOISE_Z", "MatchResult", "Ratings", "clearly_behind", "standard_error", "wilson"]

NOISE_Z = 2.0  # scores closer than this many standard errors are ties
COLLAPSED = 0.75  # a score below best - COLLAPSED * |best| is behind, however noisy; closer ones may be ties


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


def standard_error(std: float, episodes: int) -> float:
    """The standard error of a mean score over ``episodes`` episodes whose returns spread by ``std``."""
    return std / math.sqrt(max(1, episodes))


def clearly_behind(score: float, se: float, best: float, best_se: float) -> bool:
    """Whether ``score`` (standard error ``se``) is clearly below ``best``: by more than the larger of
    ``NOISE_Z`` standard errors of the two and ``COLLAPSED`` times the best's magnitude."""
    return score < best - max(NOISE_Z * (best_se + se), COLLAPSED * abs(best))
