"""The tournament's generator: seeds a new pod from the leaderboard, and sizes its slice.

Exploit, then explore (population-based training): copy a strong agent from the board
(:func:`pick_parent`: the most trained of the agents not clearly behind the best, on the
board or among the newest agents that missed it): weights,
optimizer moments and hyperparameters; then half of the children change one knob within
the bounds sweeps search too (:data:`TUNABLE`, from :mod:`pufferbox.train.search_space`)
while the other half keep them. A fresh agent (the first
``pods`` tasks, or an empty board) gets the base hyperparameters for pod 0 and, for the
others, the base perturbed :data:`FRESH_SPREAD` times, so that the first population spans
a few octaves of the knobs (rollout length, minibatches, learning rate, ...) that decide
how much a PPO agent learns per env step. What was perturbed is recorded in the task's ``meta``
(``{"perturbed": {key: [old, new]}}``), next to the lineage (parent entry, generation).

Slices follow a successive-halving style schedule (:func:`slice_length`): the first
generation trains a short slice so that exploit/explore starts early, and each later
generation trains ``growth`` times longer, up to the tournament's slice length.

Example:
    >>> import random
    >>> rng = random.Random(0)
    >>> out = perturb({"train.learning_rate": 0.003, "train.num_steps": 32}, rng)
    >>> sorted(out), 1e-5 <= out["train.learning_rate"] <= 0.05, out["train.num_steps"] in (16, 32, 64)
    (['train.learning_rate', 'train.num_steps'], True, True)
    >>> [slice_length(g, first=4096, longest=32768) for g in range(5)]
    [4096, 8192, 16384, 32768, 32768]
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pufferbox.tournament.leaderboard import Entry, Leaderboard
from pufferbox.train import ratings as scores
from pufferbox.train.ratings import clearly_behind
from pufferbox.train.search_space import Knob, tournament_knobs

# The config keys ("section.key") pods perturb, each within the bounds sweeps search too
# (pufferbox/train/search_space.py); the rollout length and minibatch count are re-read by the pod each slice.
TUNABLE: dict[str, Knob] = tournament_knobs()
FRESH_SPREAD = 2  # perturbations compounded for a fresh agent (a child gets one)
MAX_CHILDREN = 3  # children an agent may have before a less-tried agent is preferred
KEEP_PROB = 0.5  # chance that a child keeps its parent's hyperparameters unchanged


@dataclass
class PodTask:
    """What a pod trains next: start weights (a checkpoint, or None), hyperparameters, slice length."""

    pod: int
    hyperparams: dict
    parent: int | None = None
    parent_checkpoint: bytes | None = None  # the file's bytes: pods may run on nodes without the run dir
    parent_steps: int = 0
    generation: int = 0
    seed: int = 0
    steps: int = 0  # the slice length (0: the tournament's default)
    opponents: dict = field(default_factory=dict)  # board entry id -> checkpoint bytes: the frozen groups' pool
    meta: dict = field(default_factory=dict)


def perturb(hyperparams: dict, rng: random.Random, record: dict | None = None, keys: list[str] | None = None) -> dict:
    """A copy of ``hyperparams`` with every tunable numeric key (or only those in ``keys``)
    perturbed (see :data:`TUNABLE`).

    ``record``, if given, receives ``{key: [old, new]}`` for the keys whose value changed."""
    out = dict(hyperparams)
    for key, knob in TUNABLE.items():
        if keys is not None and key not in keys:
            continue
        value = out.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = knob.perturb(value, rng)
            if record is not None and out[key] != value:
                record[key] = [value, out[key]]
    return out


def slice_length(generation: int, first: int, longest: int, growth: float = 2.0) -> int:
    """Steps a slice of a ``generation``-deep agent trains: ``first * growth**generation``, capped."""
    return int(min(longest, max(1, round(first * growth ** max(0, generation)))))


def standard_error(entry: Entry) -> float:
    return scores.standard_error(entry.score_std, entry.episodes)


def pick_parent(entries: list[Entry], children: dict[int, int] | None = None) -> Entry:
    """The agent to copy: the most trained of the entries that have not fallen clearly behind
    the best: the deepest generation, then the best score. Clearly behind
    (:func:`~pufferbox.train.ratings.clearly_behind`) is the larger of ``NOISE_Z`` standard errors of
    the two scores and ``COLLAPSED`` times the best's magnitude.

    A best score is partly luck (the maximum of noisy evaluations), and a PPO agent's quality
    swings between slices by more than its evaluation's spread says (CartPole: 415, then 184,
    then 264 within 16k steps of one lineage): a child scoring below its parent predicts
    little, and going back to a better-scoring older agent throws the lineage's steps away
    (the measurement: benchmarks/RESULTS.md, "Tournament against a single run"). Maturity is counted in
    generations, not steps: agents of one generation trained the same slice, give or take a
    rollout's overshoot, which must not outweigh their scores; so founders and sibling
    branches are chosen by score.
    An agent that already has ``MAX_CHILDREN`` children (``children``: entry id -> count) is
    passed over for the best-scoring agent that has fewer, if any.

    >>> a = Entry(pod=0, score=420.0, score_std=90.0, episodes=10, steps=80_000, generation=8)
    >>> b = Entry(pod=1, score=380.0, score_std=60.0, episodes=10, steps=110_000, generation=11)
    >>> c = Entry(pod=2, score=100.0, score_std=30.0, episodes=10, steps=140_000, generation=14)
    >>> pick_parent([a, b, c]).pod
    1
    >>> a.id, b.id, c.id = 1, 2, 3
    >>> pick_parent([a, b, c], children={1: 3, 2: 3}).pod
    2
    """
    best = entries[0]
    near = [e for e in entries if not clearly_behind(e.score, standard_error(e), best.score, standard_error(best))]
    counts = children or {}
    fertile = [e for e in entries if e.id is None or counts.get(e.id, 0) < MAX_CHILDREN]
    if fertile and not any(e in fertile for e in near):  # the near-best agents' children all fell short
        return fertile[0]
    return max([e for e in near if e in fertile] or near, key=lambda e: (e.generation, e.score))


def propose(board: Leaderboard, base_hyperparams: dict, pod: int, rng: random.Random, fresh: bool = False) -> PodTask:
    """The next pod's task: a (perturbed) copy of a strong agent or, with ``fresh`` or an empty
    board, a new agent (the base hyperparameters for pod 0, widely perturbed ones otherwise)."""
    top = board.candidates()  # the board, and the newest agents that missed it (lineage tips)
    seed = rng.randrange(2**31)
    perturbed: dict = {}
    if fresh or not top:
        hyper = dict(base_hyperparams)
        if pod:  # a fresh agent is perturbed several times: the first population spans a wider range
            for _ in range(FRESH_SPREAD):
                hyper = perturb(hyper, rng)
            perturbed.update({k: [base_hyperparams[k], v] for k, v in hyper.items() if v != base_hyperparams[k]})
        return PodTask(pod=pod, hyperparams=hyper, seed=seed, meta={"perturbed": perturbed})
    parent = pick_parent(top, board.children_counts())
    if not isinstance(parent.checkpoint, str):  # candidates() are entries with a stored checkpoint file
        raise ValueError(f"leaderboard entry {parent.id} has no checkpoint file")
    with open(parent.checkpoint, "rb") as f:
        weights = f.read()
    # As in PBT, where agents on top keep training with their own hyperparameters and only the
    # copies made by the others explore: a good setting found early is not perturbed away while
    # evaluated scores are too close to tell settings apart.
    # A child that explores moves one knob: a lineage's good settings survive its children's
    # exploration, and the lineage records which change each generation tried.
    tunable = sorted(key for key in parent.hyperparams if key in TUNABLE)
    keep = rng.random() < KEEP_PROB or not tunable
    hyper = dict(parent.hyperparams) if keep else perturb(parent.hyperparams, rng, perturbed, [rng.choice(tunable)])
    return PodTask(
        pod=pod,
        hyperparams=hyper,
        parent=parent.id,
        parent_checkpoint=weights,
        parent_steps=parent.steps,
        generation=parent.generation + 1,
        seed=seed,
        meta={"perturbed": perturbed},
    )
