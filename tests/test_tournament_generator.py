"""The tournament's generator and updater rules without Ray: perturbation bounds, lineage
records, the slice schedule, parent choice and the truncation rule."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pufferbox.tournament.generator import TUNABLE, perturb, pick_parent, propose, slice_length
from pufferbox.tournament.leaderboard import Entry, Leaderboard
from pufferbox.tournament.orchestrator import lagging

BASE = {
    "train.learning_rate": 0.003,
    "train.ent_coef": 0.0,
    "train.clip_coef": 0.2,
    "train.gae_lambda": 0.8,
    "train.num_steps": 32,
    "train.num_minibatches": 2,
    "train.update_epochs": 6,
}


def test_perturbations_stay_in_bounds_and_keep_integer_knobs_integer():
    rng = random.Random(7)
    hyper, seen = dict(BASE), {key: set() for key in BASE}
    for _ in range(400):  # a long random walk: it must hit the bounds and stay inside them
        hyper = perturb(hyper, rng)
        for key, value in hyper.items():
            knob = TUNABLE[key]
            assert knob.low <= value <= knob.high, (key, value)
            seen[key].add(value)
            if knob.kind in ("pow2", "step"):
                assert isinstance(value, int), (key, value)
    steps = TUNABLE["train.num_steps"]  # the walk over octaves reaches both bounds, never beyond
    assert (min(seen["train.num_steps"]), max(seen["train.num_steps"])) == (steps.low, steps.high)
    epochs = TUNABLE["train.update_epochs"]
    at_bounds = [{"train.update_epochs": bound} for bound in (epochs.low, epochs.high) for _ in range(20)]
    assert {perturb(h, rng)["train.update_epochs"] for h in at_bounds} == {1, 2, 31, 32}  # held at the bounds
    assert any(v > 0 for v in seen["train.ent_coef"]), "a zero entropy bonus can be switched on"


def test_perturb_records_changes_and_leaves_other_keys_alone():
    record: dict = {}
    out = perturb({**BASE, "train.gamma": 0.98}, random.Random(3), record, keys=["train.num_steps"])
    assert out["train.gamma"] == 0.98
    assert all(out[k] == BASE[k] for k in BASE if k != "train.num_steps")
    assert out["train.num_steps"] in (16, 32, 64)
    assert record == ({} if out["train.num_steps"] == 32 else {"train.num_steps": [32, out["train.num_steps"]]})


def test_slice_schedule_starts_short_grows_and_caps():
    assert [slice_length(g, first=4096, longest=50_000) for g in range(6)] == [4096, 8192, 16384, 32768, 50_000, 50_000]
    assert [slice_length(g, first=4096, longest=50_000, growth=1.0) for g in range(3)] == [4096] * 3
    assert slice_length(3, first=1000, longest=10**6, growth=1.5) == 3375


def entry(score: float, std: float, steps: int, pod: int = 0, generation: int | None = None) -> Entry:
    generation = steps // 10_000 if generation is None else generation
    return Entry(pod=pod, score=score, score_std=std, episodes=10, steps=steps, generation=generation)


def test_parent_is_the_most_trained_agent_not_clearly_behind_the_best():
    lucky = entry(420.0, 90.0, 80_000, pod=1)
    deeper = entry(380.0, 60.0, 110_000, pod=2)  # within two standard errors of the best
    collapsed = entry(100.0, 30.0, 140_000, pod=3)  # deeper still, but clearly worse
    assert pick_parent([lucky, deeper, collapsed]) is deeper
    sure = entry(500.0, 0.0, 60_000, pod=4)  # no spread: only a swing short of a collapse ties with it
    assert pick_parent([sure, deeper, collapsed]) is deeper, "a lineage is continued through swings"
    assert pick_parent([sure, entry(120.0, 0.0, 110_000, pod=5)]) is sure, "below a quarter of the best: collapsed"
    small = entry(40.0, 30.0, 20_000, pod=6)  # early on, returns are small and noisy: the noise band decides
    assert pick_parent([small, entry(5.0, 2.0, 30_000, pod=7)]) is small
    assert pick_parent([small, entry(12.0, 20.0, 30_000, pod=8)]).pod == 8, "within two standard errors"
    for i, e in enumerate([lucky, deeper, collapsed, sure]):
        e.id = i + 1
    # Three children each and none of them near the top: the best agent with fewer children is next.
    assert pick_parent([lucky, deeper, collapsed], children={1: 3, 2: 3}) is collapsed
    assert pick_parent([lucky, deeper, collapsed], children={2: 3}) is lucky, "the deepest near-best is spent"
    assert pick_parent([lucky, deeper], children={1: 3, 2: 3}) is deeper, "all spent: the rule without the cap"


def test_founders_tie_on_maturity_and_the_better_score_wins():
    # One founder's long rollouts overshot the slice by a few steps: that must not beat a better score.
    base = entry(29.5, 12.0, 8_192, pod=0, generation=0)
    overshot = entry(17.8, 6.0, 8_256, pod=2, generation=0)
    assert pick_parent([base, overshot]) is base
    assert pick_parent([base, entry(20.0, 8.0, 16_384, pod=3, generation=1)]).pod == 3, "a deeper agent within noise"


def test_a_lineage_tip_that_missed_the_board_stays_a_candidate(tmp_path):
    """The board holds the best K scores; a continued agent whose evaluation was unlucky misses it,
    but is kept (checkpoint and all) among the newest entries and, being the most trained agent
    within noise of the best, is the one the next slice continues: its steps are not thrown away."""
    board = Leaderboard(tmp_path, capacity=2, keep_recent=1)
    for i, score in enumerate([300.0, 280.0]):
        ckpt = tmp_path / f"w{i}.pt"
        ckpt.write_bytes(b"old")
        board.insert(
            Entry(pod=i, score=score, score_std=60.0, episodes=10, steps=8192, hyperparams=BASE, checkpoint=str(ckpt))
        )
    tip_file = tmp_path / "tip.pt"
    tip_file.write_bytes(b"tip")
    assert (
        board.insert(
            Entry(
                pod=2,
                score=250.0,
                score_std=60.0,
                episodes=10,
                steps=16384,
                hyperparams=BASE,
                parent=1,
                generation=1,
                checkpoint=str(tip_file),
            )
        )
        is None
    ), "missed the board"
    tip = next(e for e in board.candidates() if e.pod == 2)
    assert not tip.on_board and Path(tip.checkpoint).read_bytes() == b"tip"
    child = propose(board, BASE, pod=3, rng=random.Random(0))
    assert child.parent == tip.id and child.parent_checkpoint == b"tip" and child.generation == 2
    # A newer entry takes the one retained slot: the old tip's checkpoint goes, and it is no candidate.
    other = tmp_path / "other.pt"
    other.write_bytes(b"other")
    board.insert(
        Entry(
            pod=3,
            score=10.0,
            score_std=1.0,
            episodes=10,
            steps=24576,
            hyperparams=BASE,
            parent=tip.id,
            generation=2,
            checkpoint=str(other),
        )
    )
    gone = next(e for e in board.entries(on_board_only=False) if e.pod == 2)
    assert gone.checkpoint is None and not any(e.pod == 2 for e in board.candidates())
    assert len(list((tmp_path / "leaderboard").glob("*.pt"))) == 3, "two on the board, one retained"
    board.close()


def test_propose_founds_fresh_lineages_then_copies_and_records_lineage(tmp_path):
    board = Leaderboard(tmp_path, capacity=4)
    rng = random.Random(0)
    first = propose(board, BASE, pod=0, rng=rng)
    assert first.parent is None and first.hyperparams == BASE and first.generation == 0
    spread = [propose(board, BASE, pod=i, rng=rng) for i in range(1, 6)]
    assert all(t.parent is None for t in spread)
    assert any(t.hyperparams != BASE for t in spread), "fresh agents after the first are perturbed"
    for task in spread:
        assert task.meta["perturbed"] == {k: [BASE[k], v] for k, v in task.hyperparams.items() if v != BASE[k]}

    ckpt = tmp_path / "w.pt"
    ckpt.write_bytes(b"weights")
    board.insert(
        Entry(
            pod=0, score=300.0, score_std=10.0, episodes=10, steps=9000, hyperparams=BASE, generation=2, checkpoint=str(ckpt)
        )
    )
    assert propose(board, BASE, pod=9, rng=rng, fresh=True).parent is None, "fresh is honoured on a full board"
    children = [propose(board, BASE, pod=10 + i, rng=rng) for i in range(40)]
    for child in children:
        assert child.parent == 1 and child.generation == 3 and child.parent_steps == 9000
        assert child.parent_checkpoint == b"weights"
        changed = {k for k in BASE if child.hyperparams[k] != BASE[k]}
        assert len(changed) <= 1, "a child explores one knob at a time"
        assert set(child.meta["perturbed"]) == changed
    kept = sum(child.hyperparams == BASE for child in children)
    assert 0 < kept < len(children), "some children keep the parent's settings, others explore"
    board.close()


@pytest.mark.parametrize(
    "live, best, expected",
    [
        ({"episodes": 80, "mean_return": 30.0}, 200.0, True),  # clearly behind, on enough episodes
        ({"episodes": 80, "mean_return": 120.0}, 200.0, False),  # behind, but within the margin
        ({"episodes": 10, "mean_return": 5.0}, 200.0, False),  # too few finished episodes to judge
        ({"episodes": 0, "mean_return": None}, 200.0, False),  # long episodes still running: never judged
        ({"episodes": 80, "mean_return": -310.0}, -200.0, True),  # negative returns: the margin is on |best|
        ({"episodes": 80, "mean_return": 30.0}, None, False),  # an empty board: nothing to be behind
    ],
)
def test_lagging_rule(live, best, expected):
    assert lagging(live, best, below=0.5, min_episodes=64) is expected
    assert lagging(live, best, below=0.0, min_episodes=64) is False, "0 disables truncation"


def test_lagging_compares_agents_that_trained_as_long():
    behind = {"episodes": 80, "mean_return": 30.0}
    assert lagging(behind, 200.0, 0.5, 64, trained=8_000, best_trained=8_000)
    assert not lagging(behind, 200.0, 0.5, 64, trained=7_999, best_trained=8_000), "a younger agent is not judged"
