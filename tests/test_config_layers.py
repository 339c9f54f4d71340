"""The run config as one stack of layers (pufferbox/train/config.py ``Layers``): the config file read once,
the plan one layer beneath the user's, and each value's provenance (``RunConfig.sources``)."""

from __future__ import annotations

import pytest

import pufferbox.train.config as config_module
from pufferbox.registry import get_registry
from pufferbox.train.config import ConfigError, Layer, Layers, RunConfig, resolve_run_config
from pufferbox.train.plan import Machine, planned_config

GiB = 2**30
WORKSTATION = Machine(cores=16, memory=120 * GiB, shm=64 * GiB, gpus=1, gpu_memory=80 * GiB)
CPU_BOX = Machine(cores=16, memory=60 * GiB, shm=30 * GiB)


@pytest.fixture
def cartpole():
    return get_registry().get("cartpole")


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text("[train]\nseed = 7\n")
    return path


def test_each_layer_names_the_values_it_set(cartpole, config_file):
    flags = {"train.total_steps": 4096, "vec.num_envs": None}
    run, plan = planned_config(cartpole, config_file, ["train.ent_coef=0.01"], flags, machine=WORKSTATION, profile="gpu")
    assert plan.profile == "gpu"
    sources = run.sources
    assert sources["train.gamma"] == "plugin defaults"  # cartpole's 0.98
    assert sources["train.update_epochs"] == "GPU profile"
    assert sources["vec.num_envs"] == "GPU profile" and run.vec.num_envs == 2048  # the plan keeps a native env's
    assert sources["train.seed"] == str(config_file) and run.train.seed == 7
    assert sources["train.ent_coef"] == "--set train.ent_coef=0.01"
    assert sources["train.total_steps"] == "--total-steps" and run.train.total_steps == 4096
    assert "train.clip_coef" not in sources  # a built-in
    assert run == resolve_run_config(run.to_dict())  # provenance is no setting: equality and to_dict ignore it
    assert "sources" not in run.to_dict()


def test_the_plan_is_one_layer_naming_what_it_changed(cartpole):
    run, plan = planned_config(cartpole, machine=WORKSTATION, profile="cpu")  # a GPU: 4x a native env's envs
    assert plan.scaled and run.vec.num_envs == 4 * 64
    planned = {key for key, source in run.sources.items() if source == "plan"}
    assert planned == {"vec.num_envs", "train.num_steps", "train.num_minibatches"}  # serial as before: not the plan's
    assert run.sources["train.learning_rate"] == "plugin defaults" and "vec.backend" not in run.sources
    same, _ = planned_config(cartpole, machine=CPU_BOX, profile="cpu")  # no GPU: a native env's plan is its defaults
    assert "plan" not in same.sources.values() and same.sources["vec.num_envs"] == "plugin defaults"


def test_a_planned_key_the_user_sets_leaves_no_plan_layer(cartpole):
    run, plan = planned_config(cartpole, overrides=["vec.num_envs=16"], machine=WORKSTATION, profile="gpu")
    assert "plan" not in run.sources.values()
    assert run.sources["vec.num_envs"] == "--set vec.num_envs=16" and run.vec.num_envs == 16
    assert run.sources["train.num_steps"] == "GPU profile" and run.train.num_steps == 64
    assert plan.notes == ("not planned: you set vec.num_envs",)


def test_the_config_file_is_read_once(cartpole, config_file, monkeypatch):
    reads = []
    load = config_module.load_toml
    monkeypatch.setattr(config_module, "load_toml", lambda path: reads.append(path) or load(path))
    run, _ = planned_config(cartpole, config_file, ["train.gamma=0.9"], machine=WORKSTATION, profile="gpu")
    assert reads == [config_file] and run.train.seed == 7


def test_errors_still_name_the_layer(cartpole, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[train]\ngamma = 2.0\n")
    with pytest.raises(ConfigError, match=rf"^train.gamma: must be between 0 and 1 .*\({bad}\)$"):
        planned_config(cartpole, bad, machine=WORKSTATION)
    with pytest.raises(ConfigError, match=r"^train.gamma: expected float, got str 'x' \(--set train.gamma=x\)$"):
        planned_config(cartpole, overrides=["train.gamma=x"], machine=WORKSTATION)
    with pytest.raises(ConfigError, match=r"^--num-workers 0: must be >= 1"):
        planned_config(cartpole, flags={"vec.num_workers": 0}, machine=WORKSTATION)


def test_a_layer_stack_by_hand():
    layers = Layers.build({"train": {"gamma": 0.9}}, overrides=["train.gamma=0.8"])
    profile = Layer.checked("GPU profile", {"train": {"gamma": 0.95, "seed": 3}})
    run = layers.below_user(profile).resolve()
    assert run.train.gamma == 0.8 and run.sources["train.gamma"] == "--set train.gamma=0.8"
    assert run.train.seed == 3 and run.sources["train.seed"] == "GPU profile"
    assert layers.user_keys() == {"train.gamma"}
    kept = RunConfig().with_setting("vec.num_envs", 4, "sweep").with_flags({"train.seed": 2})
    assert kept.sources == {"vec.num_envs": "sweep", "train.seed": "--seed"}
    assert kept.provenance("by hand") == kept.sources
    assert RunConfig.from_dict({"train": {"seed": 5}}).provenance("by hand") == {"train.seed": "by hand"}


def test_config_toml_records_the_sources_and_a_resume_reads_them(tmp_path, config_file):
    from pufferbox.train.config import load_toml
    from pufferbox.train.runner import run

    run_dir = tmp_path / "run"
    steps = ["train.num_steps=16", "train.checkpoint_interval=1"]
    flags = {"vec.num_envs": 4, "train.total_steps": 128}
    run(
        "cartpole",
        config_file=config_file,
        overrides=steps,
        flags=flags,
        run_dir=run_dir,
        dashboard=False,
        tensorboard=False,
    )
    recorded = load_toml(run_dir / "config.toml")
    sources = recorded["run"]["sources"]
    assert sources["train.gamma"] == "plugin defaults" and sources["train.seed"] == str(config_file)
    assert sources["train.num_steps"] == "--set train.num_steps=16" and sources["vec.num_envs"] == "--num-envs"
    assert "train.clip_coef" not in sources  # at its built-in

    more = {"train.total_steps": 256}
    result = run(resume=run_dir, overrides=["train.ent_coef=0.01"], flags=more, dashboard=False, tensorboard=False)
    assert result.global_step >= 256
    resumed = load_toml(run_dir / "config.toml")["run"]["sources"]
    assert resumed["train.gamma"] == "config.toml of the resumed run (plugin defaults)"
    assert resumed["train.seed"] == f"config.toml of the resumed run ({config_file})"
    assert resumed["train.ent_coef"] == "--set train.ent_coef=0.01" and resumed["train.total_steps"] == "--total-steps"
    assert "train.clip_coef" not in resumed
    run(resume=run_dir, flags={"train.total_steps": 384}, dashboard=False, tensorboard=False)  # not nested twice
    again = load_toml(run_dir / "config.toml")["run"]["sources"]
    assert again["train.gamma"] == "config.toml of the resumed run (plugin defaults)"
    assert again["train.ent_coef"] == "config.toml of the resumed run (--set train.ent_coef=0.01)"


def test_an_older_config_toml_without_sources_names_its_changed_keys():
    from pufferbox.train.runner import resumed_origins

    recorded = {"train": {"gamma": 0.9, "seed": 1}, "vec": {"num_envs": 8}}
    assert resumed_origins(recorded, None) == {"train.gamma": "config.toml of the resumed run"}
    assert resumed_origins(recorded, {"vec.num_envs": "plan"}) == {"vec.num_envs": "config.toml of the resumed run (plan)"}
