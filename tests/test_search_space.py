"""One search space for sweeps and tournaments (pufferbox/train/search_space.py): the sweep's built-in
space and the tournament's perturbations read the same knobs and bounds, and the bounds hold every
first-party plugin's defaults (so neither clamps a default on its first move)."""

from __future__ import annotations

import random

import pytest

from pufferbox.registry import FIRST_PARTY, get_registry
from pufferbox.sweep.space import builtin_space
from pufferbox.tournament import generator
from pufferbox.train.config import RunConfig, resolve_run_config
from pufferbox.train.search_space import KNOBS, Knob


def first_party_configs() -> list[tuple[str, RunConfig]]:
    specs = [s for s in get_registry().all_envs() if s.meta.distribution in FIRST_PARTY]
    assert len(specs) > 20, "the first-party plugins are installed (make setup)"
    return [(s.name, resolve_run_config(s.training.config)) for s in specs]


def value(config: RunConfig, name: str):
    return config.setting(name)


def test_sweeps_and_tournaments_read_the_same_knobs():
    assert set(builtin_space(resolve_run_config())) == set(KNOBS)
    assert all(generator.TUNABLE[name] is KNOBS[name] for name in generator.TUNABLE)
    assert set(generator.TUNABLE) == {name for name, knob in KNOBS.items() if knob.tournament}
    assert not {"train.gamma", "train.vf_coef", "train.max_grad_norm"} & set(generator.TUNABLE)  # sweep-only


def test_every_first_party_default_is_inside_the_bounds_and_its_sweep_window():
    outside = []
    for env, config in first_party_configs():
        space = builtin_space(config)
        for name, knob in KNOBS.items():
            default = value(config, name)
            if not (knob.low <= default <= knob.high and space[name].contains(default)):
                outside.append((env, name, default))
    assert not outside, f"widen these knobs' bounds (pufferbox/train/search_space.py): {outside}"


def test_the_sweep_window_and_every_perturbation_stay_inside_one_set_of_bounds():
    rng = random.Random(0)
    for env, config in first_party_configs()[::7]:
        for name, param in builtin_space(config).items():
            knob = KNOBS[name]
            values = param.choices if param.choices is not None else (param.low, param.high)
            assert all(knob.low <= v <= knob.high for v in values), (env, name, values)
        hyper = {name: value(config, name) for name in generator.TUNABLE}
        for _ in range(50):
            hyper = generator.perturb(hyper, rng)
            assert all(KNOBS[k].low <= v <= KNOBS[k].high for k, v in hyper.items()), (env, hyper)


def test_the_sweep_keeps_its_windows_centred_on_the_defaults():
    space = builtin_space(resolve_run_config({"train": {"learning_rate": 1e-3, "clip_coef": 0.2, "max_grad_norm": 5.0}}))
    assert (space["train.learning_rate"].low, space["train.learning_rate"].high) == pytest.approx((2.5e-4, 4e-3))
    assert (space["train.clip_coef"].low, space["train.clip_coef"].high) == pytest.approx((0.2 / 1.5, 0.3))
    assert (space["train.max_grad_norm"].low, space["train.max_grad_norm"].high) == pytest.approx((1.25, 20.0))
    clamped = builtin_space(resolve_run_config({"train": {"learning_rate": 0.04}}))["train.learning_rate"]
    assert clamped.high == KNOBS["train.learning_rate"].high, "a window never leaves the bounds"


@pytest.mark.parametrize(
    "knob, default, window",
    [
        (Knob(1, 32, kind="step"), 10, {"low": 5, "high": 20, "log": False}),
        (Knob(4, 4096, kind="pow2", choices=True), 4, {"choices": [4, 8]}),
        (Knob(0.5, 0.999, kind="horizon", spread=2), 0.5, {"low": 0.5, "high": 0.75, "log": False}),
        (Knob(0.0, 0.2, spread=10, log=True, low_nonzero=1e-3), 0.0, {"low": 0.0, "high": 0.01, "log": False}),
        (Knob(1e-5, 5e-2, spread=4, log=True), 1.0, {"low": 0.0125, "high": 0.05, "log": True}),  # clamped first
    ],
)
def test_a_knobs_window(knob, default, window):
    got = knob.window(default)
    assert got == (window if "choices" in window else pytest.approx(window))
