"""The chaos suite: rounds of random faults against trainers, workers and envs (see ``schedule.py``).

``PUFFERBOX_CHAOS_SEED=N`` replays a run (the seed is in every failure); ``PUFFERBOX_CHAOS_ROUNDS=N``
sets the number of rounds (CI default: a few, well under a minute each on 2 cores).
"""

from __future__ import annotations

import pytest

from .schedule import Schedule, chaos_rounds, chaos_seed, trainer_round


def run_rounds(rounds: int, tmp_path) -> None:
    schedule = Schedule(chaos_seed())
    print(f"chaos seed {schedule.seed}")
    for index in range(rounds):
        trainer_round(schedule, tmp_path, index)


def test_random_faults_against_trainers_and_workers(tmp_path):
    run_rounds(chaos_rounds(6), tmp_path)


@pytest.mark.slow
def test_many_rounds_of_random_faults(tmp_path):
    run_rounds(chaos_rounds(40), tmp_path)
