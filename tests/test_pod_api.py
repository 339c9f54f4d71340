"""Tournament pods drive a Trainer through its public methods and :mod:`pufferbox.train.retune` only: no
poking its internals (what a slice changes in a reused trainer is retune's, in one place)."""

from __future__ import annotations

import ast
from pathlib import Path

import pufferbox.tournament.pod as pod
from pufferbox.train.trainer import Trainer

INTERNALS = {"tc", "rollout", "collector", "learner", "first", "state", "pending_actions", "optimizer", "agent"}


def trainer_attributes(source: str) -> set[str]:
    """Attributes read or written on a name called ``trainer`` in ``source``."""
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "trainer"
    }


def test_pod_uses_only_public_trainer_methods():
    used = trainer_attributes(Path(pod.__file__).read_text())
    assert used and not used & INTERNALS, used & INTERNALS
    assert all(hasattr(Trainer, name) or name in ("device", "venv", "global_step", "num_steps") for name in used), used


def test_the_check_sees_a_poked_internal():
    assert trainer_attributes("trainer.rollout.clear()\ntrainer.tc['seed'] = 1\n") == {"rollout", "tc"}


def test_the_pod_changes_its_trainers_only_through_retune():
    source = Path(pod.__file__).read_text()
    calls = {
        node.func.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "retune"
    }
    assert calls == {"set_hyperparameters", "load_weights", "use_opponent_pool", "restart_rollout"}, calls
