"""The tournament leaderboard: ordering, capacity, persistence, checkpoint files."""

from __future__ import annotations

import os
from pathlib import Path

from pufferbox.tournament.leaderboard import Entry, Leaderboard


def make_checkpoint(tmp_path, name: str, payload: bytes = b"weights") -> str:
    path = tmp_path / name
    path.write_bytes(payload)
    return str(path)


def test_orders_by_score_and_keeps_capacity(tmp_path):
    board = Leaderboard(tmp_path / "run", capacity=3)
    scores = [10.0, 50.0, 30.0, 40.0, 5.0]
    ranks = []
    for pod, score in enumerate(scores):
        ckpt = make_checkpoint(tmp_path, f"p{pod}.pt", payload=str(score).encode())
        ranks.append(
            board.insert(
                Entry(pod=pod, score=score, score_std=1.0, episodes=10, steps=100 * pod, checkpoint=ckpt),
                total_steps=100 * (pod + 1),
            )
        )
    assert ranks == [1, 1, 2, 2, None]
    top = board.entries()
    assert [e.score for e in top] == [50.0, 40.0, 30.0]
    # Checkpoints of entries pushed off the board are deleted; those on the board exist and hold their bytes.
    assert all(os.path.exists(e.checkpoint) for e in top)
    assert Path(top[0].checkpoint).read_bytes() == b"50.0"
    off = [e for e in board.entries(on_board_only=False) if not e.on_board]
    assert {e.score for e in off} == {10.0, 5.0}
    assert all(e.checkpoint is None or not os.path.exists(e.checkpoint) for e in off)


def test_best_history_never_decreases(tmp_path):
    board = Leaderboard(tmp_path, capacity=2)
    for i, score in enumerate([3.0, 9.0, 1.0, 7.0, 12.0]):
        board.insert(Entry(pod=i, score=score, score_std=0.0, episodes=1, steps=i), total_steps=i, wall_time=float(i))
    best = [h[2] for h in board.history()]
    assert best == [3.0, 9.0, 9.0, 9.0, 12.0]


def test_persists_across_reopen(tmp_path):
    board = Leaderboard(tmp_path, capacity=4)
    board.insert(
        Entry(pod=1, score=2.5, score_std=0.5, episodes=4, steps=1000, hyperparams={"lr": 0.01}, parent=None, generation=0)
    )
    board.set_state("total_steps", 1000)
    board.close()
    again = Leaderboard(tmp_path, capacity=4)
    entry = again.best()
    assert (entry.pod, entry.score, entry.hyperparams, entry.generation) == (1, 2.5, {"lr": 0.01}, 0)
    assert again.get_state("total_steps") == 1000
    assert again.as_dicts()[0]["rank"] == 1


def test_history_records_eval_steps_and_old_boards_gain_the_column(tmp_path):
    import sqlite3

    old = tmp_path / "old"
    old.mkdir()
    with sqlite3.connect(old / "leaderboard.sqlite") as conn:  # a board written before eval_steps existed
        conn.execute(
            "CREATE TABLE best_history (wall_time REAL NOT NULL, total_steps INTEGER NOT NULL, best_score REAL NOT NULL)"
        )
        conn.execute("INSERT INTO best_history VALUES (1.0, 100, 5.0)")
    board = Leaderboard(old)
    board.insert(Entry(pod=0, score=9.0, score_std=0.0, episodes=1, steps=10), total_steps=200, wall_time=2.0, eval_steps=30)
    assert board.history_rows() == [
        {"wall_time": 1.0, "total_steps": 100, "best_score": 5.0, "eval_steps": 0},
        {"wall_time": 2.0, "total_steps": 200, "best_score": 9.0, "eval_steps": 30},
    ]
    assert board.history() == [(1.0, 100, 5.0), (2.0, 200, 9.0)]
    board.close()
