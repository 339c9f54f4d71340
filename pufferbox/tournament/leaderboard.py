"""The tournament's leaderboard: the best K agents, durable in SQLite under the run directory.

Each entry is one evaluated agent: its checkpoint file, hyperparameters, lineage
(parent entry and generation) and score (mean and standard deviation of evaluated
episode returns). Besides the best ``capacity`` entries, the checkpoints of the
``keep_recent`` newest entries are kept even when they miss the board: a lineage's
latest agent can still be continued (:meth:`Leaderboard.candidates`), so its steps are
not thrown away for an unlucky evaluation. Every write is one SQLite transaction, so a
driver killed at any moment leaves a consistent board; checkpoints are copied into ``RUN_DIR/leaderboard/``
atomically before their row is committed.

Example:
    >>> board = Leaderboard("/tmp/run", capacity=4)                     # doctest: +SKIP
    >>> rank = board.insert(Entry(pod=0, score=480.0, score_std=5.0, ...))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pufferbox.train.config import ConfigError

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    pod INTEGER NOT NULL,
    parent INTEGER,
    generation INTEGER NOT NULL,
    score REAL NOT NULL,
    score_std REAL NOT NULL,
    episodes INTEGER NOT NULL,
    steps INTEGER NOT NULL,
    hyperparams TEXT NOT NULL,
    checkpoint TEXT,
    on_board INTEGER NOT NULL DEFAULT 1,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS best_history (
    wall_time REAL NOT NULL,
    total_steps INTEGER NOT NULL,
    best_score REAL NOT NULL,
    eval_steps INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


@dataclass
class Entry:
    """One evaluated agent."""

    pod: int
    score: float
    score_std: float
    episodes: int
    steps: int  # environment steps this agent's lineage has trained for
    hyperparams: dict = field(default_factory=dict)
    parent: int | None = None
    generation: int = 0
    checkpoint: str | bytes | None = None  # a file path, or the checkpoint's bytes to store
    id: int | None = None
    on_board: bool = True
    created: float = 0.0


class LeaderboardError(ConfigError):
    """The leaderboard database is missing, empty or unreadable (a user error: one line, exit 2)."""


def check_file(path: Path) -> None:
    if path.exists() and path.stat().st_size == 0:
        raise LeaderboardError(
            f"{path}: empty file, not a leaderboard (a tournament that never started?); "
            f"delete it and start the tournament again"
        )


def unreadable(path: Path, exc: sqlite3.Error) -> LeaderboardError:
    return LeaderboardError(
        f"{path}: not a readable leaderboard database ({exc}); restore it from a backup or start a new --run-dir"
    )


class Leaderboard:
    """Best-``capacity`` agents by evaluated score, persisted in ``RUN_DIR/leaderboard.sqlite``.

    ``Leaderboard(run_dir)`` opens (or creates) it for the tournament driver;
    :meth:`open_read_only` is for readers (``leaderboard``, ``plot``): it never writes, so it
    works on read-only storage and next to a running tournament.
    """

    def __init__(self, run_dir: str | os.PathLike, capacity: int = 8, keep_recent: int = 0):
        self.keep_recent = keep_recent
        self.run_dir = Path(run_dir)
        self.capacity = capacity
        self.path = self.run_dir / "leaderboard.sqlite"
        check_file(self.path)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.checkpoint_dir = self.run_dir / "leaderboard"
        self.checkpoint_dir.mkdir(exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(SCHEMA)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(best_history)")}
            if "eval_steps" not in columns:  # a board written before evaluation steps were recorded
                self.db.execute("ALTER TABLE best_history ADD COLUMN eval_steps INTEGER NOT NULL DEFAULT 0")
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise unreadable(self.path, exc) from None

    @classmethod
    def open_read_only(cls, run_dir: str | os.PathLike) -> Leaderboard:
        """The board of ``run_dir`` for reading only (``mode=ro``: no WAL, schema or file changes).

        Raises :class:`LeaderboardError` (one line, naming the file) when it is missing, empty or corrupt.
        """
        board = cls.__new__(cls)
        board.run_dir, board.capacity, board.keep_recent = Path(run_dir), 8, 0
        board.path = board.run_dir / "leaderboard.sqlite"
        board.checkpoint_dir = board.run_dir / "leaderboard"
        if not board.path.is_file():
            raise LeaderboardError(f"{run_dir}: no leaderboard.sqlite (not a tournament run directory)")
        check_file(board.path)
        uri = board.path.resolve().as_uri()
        # A live driver keeps ``-wal`` beside the file: read through it (mode=ro). Without one nobody is
        # writing, and ``immutable`` reads without creating ``-wal``/``-shm`` (works on read-only storage).
        live = board.path.with_name(board.path.name + "-wal").exists()
        try:
            board.db = sqlite3.connect(
                f"{uri}?mode=ro" if live else f"{uri}?immutable=1", uri=True, isolation_level=None, timeout=30
            )
            board.db.execute("SELECT COUNT(*) FROM entries").fetchone()
        except sqlite3.DatabaseError as exc:
            raise unreadable(board.path, exc) from None
        return board

    def start(self, settings: dict, config: dict, progress: dict) -> None:
        """Record a new tournament's settings, config and initial progress in one transaction."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for key, value in (("settings", settings), ("config", config), ("progress", progress)):
                self.set_state(key, value)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()

    # -- writes -----------------------------------------------------------------------
    def insert(
        self,
        entry: Entry,
        total_steps: int | None = None,
        wall_time: float | None = None,
        state: dict | None = None,
        eval_steps: int = 0,
    ) -> int | None:
        """Store ``entry`` (copying its checkpoint in) and return its 1-based rank, or None if it
        did not make the board. Entries off the board lose their checkpoint file (the path is
        cleared) unless they are among the ``keep_recent`` newest.

        ``total_steps`` (training steps taken so far) and ``eval_steps`` (evaluation steps so far), if
        given, are recorded in the best-score history. ``state`` key/values are written in the same
        transaction, so counters such as the tournament's total steps never disagree with the board
        after a crash."""
        entry.created = entry.created or time.time()
        stored_ckpt = None
        if entry.checkpoint is not None:
            stored_ckpt = self.checkpoint_dir / f"pod{entry.pod}-{int(entry.created * 1e6)}.pt"
            tmp = stored_ckpt.with_suffix(".tmp")
            if isinstance(entry.checkpoint, bytes):
                tmp.write_bytes(entry.checkpoint)
            else:
                shutil.copyfile(entry.checkpoint, tmp)
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, stored_ckpt)
        previous_best = self.best()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cur = self.db.execute(
                "INSERT INTO entries (pod, parent, generation, score, score_std, episodes, steps, hyperparams,"
                " checkpoint, on_board, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
                (
                    entry.pod,
                    entry.parent,
                    entry.generation,
                    float(entry.score),
                    float(entry.score_std),
                    entry.episodes,
                    entry.steps,
                    json.dumps(entry.hyperparams, sort_keys=True),
                    str(stored_ckpt) if stored_ckpt else None,
                    entry.created,
                ),
            )
            entry.id = cur.lastrowid
            entry.checkpoint = str(stored_ckpt) if stored_ckpt else None
            board = self.db.execute(
                "SELECT id, checkpoint FROM entries WHERE on_board = 1 ORDER BY score DESC, id ASC"
            ).fetchall()
            for entry_id, _ in board[self.capacity :]:
                self.db.execute("UPDATE entries SET on_board = 0 WHERE id = ?", (entry_id,))
            dropped = self.db.execute(
                "SELECT id, checkpoint FROM entries WHERE on_board = 0 AND checkpoint IS NOT NULL"
                " AND id NOT IN (SELECT id FROM entries ORDER BY id DESC LIMIT ?)",
                (self.keep_recent,),
            ).fetchall()
            for entry_id, _ in dropped:
                self.db.execute("UPDATE entries SET checkpoint = NULL WHERE id = ?", (entry_id,))
            best = max(entry.score, previous_best.score if previous_best else float("-inf"))
            if total_steps is not None:
                self.db.execute(
                    "INSERT INTO best_history VALUES (?, ?, ?, ?)",
                    (wall_time if wall_time is not None else time.time(), total_steps, best, int(eval_steps)),
                )
            for key, value in (state or {}).items():
                self.set_state(key, value)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        for _, ckpt in dropped:
            if ckpt and os.path.exists(ckpt):
                os.remove(ckpt)
        ids = [row[0] for row in board[: self.capacity]]
        return ids.index(entry.id) + 1 if entry.id in ids else None

    def set_state(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO state VALUES (?, ?)", (key, json.dumps(value)))

    def get_state(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    # -- reads ------------------------------------------------------------------------
    def entries(self, on_board_only: bool = True, where: str | None = None) -> list[Entry]:
        """Entries best first (``where``: an SQL condition on the entries table instead)."""
        where = f"WHERE {where}" if where else "WHERE on_board = 1" if on_board_only else ""
        rows = self.db.execute(
            "SELECT id, pod, parent, generation, score, score_std, episodes, steps, hyperparams, checkpoint,"
            f" on_board, created FROM entries {where} ORDER BY score DESC, id ASC"
        ).fetchall()
        return [
            Entry(
                id=r[0],
                pod=r[1],
                parent=r[2],
                generation=r[3],
                score=r[4],
                score_std=r[5],
                episodes=r[6],
                steps=r[7],
                hyperparams=json.loads(r[8]),
                checkpoint=r[9],
                on_board=bool(r[10]),
                created=r[11],
            )
            for r in rows
        ]

    def candidates(self) -> list[Entry]:
        """Entries whose checkpoint still exists (the board, and the ``keep_recent`` newest), best first."""
        return self.entries(where="on_board = 1 OR checkpoint IS NOT NULL")

    def children_counts(self) -> dict[int, int]:
        """Entry id -> how many entries name it as their parent."""
        return dict(self.db.execute("SELECT parent, COUNT(*) FROM entries WHERE parent IS NOT NULL GROUP BY parent"))

    def best(self) -> Entry | None:
        top = self.entries()
        return top[0] if top else None

    def history(self) -> list[tuple[float, int, float]]:
        """``(wall_time, total_steps, best_score)`` after each insertion, oldest first."""
        return [
            tuple(r) for r in self.db.execute("SELECT wall_time, total_steps, best_score FROM best_history ORDER BY rowid")
        ]

    def history_rows(self) -> list[dict]:
        """The best-score history as dicts: ``wall_time``, ``total_steps``, ``best_score``, ``eval_steps``."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(best_history)")}
        eval_steps = "eval_steps" if "eval_steps" in columns else "0 AS eval_steps"  # boards from before it
        cur = self.db.execute(f"SELECT wall_time, total_steps, best_score, {eval_steps} FROM best_history ORDER BY rowid")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur]

    def as_dicts(self) -> list[dict]:
        out = []
        for rank, entry in enumerate(self.entries(), start=1):
            row = asdict(entry)
            row["rank"] = rank
            out.append(row)
        return out
