"""The scaling plan (pufferbox/train/plan.py) against described machines, and in a real run.

Each test describes a machine (no test reads this one's cores, memory or GPUs) and asserts the
numbers the plan gives a cheap native env (CartPole, Ocean's Pong) and a heavy one (NetHack).
"""

from __future__ import annotations

import json

import pytest

from pufferbox.registry import get_registry
from pufferbox.train.config import ConfigError, load_toml, resolve_run_config
from pufferbox.train.hardware import usable_cores
from pufferbox.train.plan import MAX_BATCH_GROWTH, Machine, make_plan, planned_config
from pufferbox.train.runner import run

GiB = 2**30
BASE = Machine(cores=2, memory=23 * GiB, shm=24 * GiB)  # the machine the defaults were tuned on
WORKSTATION = Machine(cores=16, memory=120 * GiB, shm=64 * GiB, gpus=1, gpu_memory=80 * GiB)
SERVER = Machine(cores=64, memory=500 * GiB, shm=200 * GiB, gpus=8, gpu_memory=80 * GiB)
CPU_BOX = Machine(cores=16, memory=60 * GiB, shm=30 * GiB)
LITTLE_SHM = Machine(cores=16, memory=120 * GiB, shm=2**20, gpus=1, gpu_memory=80 * GiB)  # 1 MiB of /dev/shm


def spec(name):
    return get_registry().get(name)


def sizes(plan):
    return plan.num_envs, plan.num_steps, plan.num_minibatches, plan.backend, plan.num_workers, plan.batch_size


def samples(plan):
    return plan.num_envs * plan.num_steps


def first_party_with_defaults():
    return [s for s in get_registry().all_envs() if s.meta.distribution.startswith("pufferbox-") and s.training.config]


@pytest.mark.parametrize("machine", [BASE, Machine(cores=1, memory=4 * GiB, shm=64 * 2**20), Machine(cores=3)])
def test_on_the_base_machine_or_a_smaller_one_every_first_party_default_is_unchanged(machine):
    envs = first_party_with_defaults()
    assert {"cartpole", "nethack", "ocean/pong", "atari/breakout"} <= {s.name for s in envs}
    for env in envs:
        config, plan = planned_config(env, machine=machine)
        assert config == resolve_run_config(env.training.config), env.name
        assert not plan.scaled and plan.learners == 1


def test_this_machine_is_read_through_hardware():
    here = Machine.here()
    assert here.cores == usable_cores() and here.gpus >= 0
    assert "core" in here.describe()


def test_a_16_core_gpu_workstation_feeds_the_gpu():
    # NetHack: 15 workers (one core left to the learner) x 34 envs, a horizon of 16, the batch 8x the
    # defaults' (capped), the defaults' minibatch size (256) nearly kept: 32 minibatches of 255
    nethack = make_plan(WORKSTATION, spec("nethack"))
    assert sizes(nethack) == (510, 16, 32, "multiprocessing", 15, 0)
    assert nethack.family == "heavy" and nethack.scaled
    assert samples(nethack) <= MAX_BATCH_GROWTH * 16 * 64
    # cheap native envs stay in the trainer's process, 4x the envs for the GPU's forward, same batch or 2x
    assert sizes(make_plan(WORKSTATION, spec("ocean/pong"))) == (1024, 32, 4, "serial", 0, 0)
    assert sizes(make_plan(WORKSTATION, spec("cartpole"))) == (256, 16, 4, "serial", 0, 0)
    breakout = make_plan(WORKSTATION, spec("breakout"))
    assert sizes(breakout) == (255, 32, 64, "multiprocessing", 15, 0) and breakout.family == "image"


def test_an_8_gpu_server_splits_over_learners_per_gpu():
    nethack = make_plan(SERVER, spec("nethack"))
    assert sizes(nethack) == (504, 16, 32, "multiprocessing", 56, 0)  # 64 cores less one per GPU learner
    assert nethack.learners == 8 and "--learners 8" in nethack.describe()
    assert nethack.num_envs % 8 == 0 and nethack.num_workers % 8 == 0  # --learners 8 splits them evenly
    assert sizes(make_plan(SERVER, spec("cartpole"))) == (256, 16, 4, "serial", 0, 0)
    breakout = make_plan(SERVER, spec("breakout"))  # a native block (ale-py's C++ envs) in each worker: no pool
    assert sizes(breakout) == (224, 32, 56, "multiprocessing", 56, 0) and breakout.num_envs % 8 == 0


def test_a_cpu_only_box_shares_its_cores_between_envs_and_the_update():
    assert sizes(make_plan(CPU_BOX, spec("nethack"))) == (128, 16, 8, "multiprocessing", 8, 0)
    assert sizes(make_plan(CPU_BOX, spec("breakout"))) == (64, 32, 16, "multiprocessing", 8, 0)
    acrobot = make_plan(CPU_BOX, spec("acrobot"))  # a Python env: a pool of two halves, minibatches of 64 kept
    assert sizes(acrobot) == (128, 64, 128, "multiprocessing", 8, 64) and acrobot.family == "heavy"
    cartpole = make_plan(CPU_BOX, spec("cartpole"))  # its block outpaces the policy: more cores do not help
    assert sizes(cartpole) == (64, 32, 2, "serial", 0, 0) and not cartpole.scaled


def test_little_shared_memory_caps_the_envs_or_keeps_them_serial():
    nethack = make_plan(LITTLE_SHM, spec("nethack"))
    assert sizes(nethack) == (60, 18, 4, "multiprocessing", 15, 0)
    assert any("/dev/shm" in note for note in nethack.notes)
    breakout = make_plan(LITTLE_SHM, spec("breakout"))  # not even 8 frames per worker fit: serial
    assert sizes(breakout) == (32, 32, 8, "serial", 0, 0) and "serial" in breakout.notes[-1]
    assert sizes(make_plan(LITTLE_SHM, spec("cartpole"))) == (256, 16, 4, "serial", 0, 0)  # no shm needed


def test_little_memory_caps_the_envs():
    small = Machine(cores=16, memory=GiB // 2, shm=64 * GiB, gpus=1, gpu_memory=80 * GiB)
    breakout = make_plan(small, spec("breakout"))
    assert 8 < breakout.num_envs < 255 and any("memory" in note for note in breakout.notes)


@pytest.mark.parametrize(
    "user",
    [
        {"flags": {"vec.num_envs": 16}},  # the plugin's own value, given explicitly: still the user's
        {"overrides": ["train.num_steps=64"]},
        {"flags": {"vec.backend": "serial"}},
    ],
)
def test_explicit_settings_are_never_planned_over(user):
    config, plan = planned_config(spec("nethack"), machine=WORKSTATION, profile="cpu", **user)
    assert (config.vec.num_envs, config.train.num_steps, config.vec.backend) == (16, 64, "serial")
    assert config.train.num_minibatches == 4 and config.vec.num_workers == 0
    assert not plan.scaled and "not planned: you set" in plan.describe()


def test_a_run_told_to_train_on_the_cpu_is_planned_without_its_gpus():
    config, plan = planned_config(spec("nethack"), flags={"train.device": "cpu"}, machine=WORKSTATION)
    assert (config.vec.num_envs, config.vec.num_workers) == (128, 8)  # as on CPU_BOX
    assert plan.machine.gpus == 0 and "no GPU" in plan.describe()


def test_a_config_file_counts_as_explicit(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("[vec]\nnum_envs = 32\n")
    config, plan = planned_config(spec("nethack"), config_file=path, machine=WORKSTATION, profile="cpu")
    assert config.vec.num_envs == 32 and config.train.num_steps == 64 and not plan.scaled


def test_learners_get_equal_shares_of_the_planned_envs_and_workers():
    config, plan = planned_config(spec("nethack"), flags={"train.learners": 2}, machine=WORKSTATION, profile="cpu")
    vec = config.vec
    assert (vec.num_envs, vec.num_workers) == (504, 14)  # 15 spare cores rounded to 2 learners' shares
    assert vec.num_envs % 2 == 0 and vec.num_workers % 2 == 0 and plan.scaled


def test_bad_user_input_is_still_one_config_error():
    with pytest.raises(ConfigError, match="vec.num_envs: must be >= 1"):
        planned_config(spec("nethack"), overrides=["vec.num_envs=0"], machine=WORKSTATION)


def test_a_run_records_its_plan_and_a_resume_keeps_the_recorded_settings(tmp_path, monkeypatch, capsys):
    # the first run plans for a GPU workstation (CartPole: 256 envs x 16 steps), the resume runs "here"
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls, shm_dir="/dev/shm": WORKSTATION))
    run_dir = tmp_path / "run"
    run("cartpole", overrides=["train.total_steps=4096"], run_dir=run_dir, tensorboard=False, profile="cpu")
    line = "plan for 16 cores, 120 GiB, 1 GPU (80 GiB): 256 envs x 16 steps, serial, 1 torch thread"
    assert line in capsys.readouterr().out
    recorded = load_toml(run_dir / "config.toml")
    train = recorded["train"]
    assert (recorded["vec"]["num_envs"], train["num_steps"], train["num_minibatches"]) == (256, 16, 4)
    assert recorded["run"]["plan"]["machine"]["gpus"] == 1 and recorded["run"]["plan"]["scaled"] is True
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls, shm_dir="/dev/shm": BASE))
    run(resume=run_dir, flags={"train.total_steps": 8192}, dashboard=False, tensorboard=False)
    resumed = load_toml(run_dir / "config.toml")
    assert (resumed["vec"]["num_envs"], resumed["train"]["num_steps"]) == (256, 16)
    assert resumed["run"]["plan"] == recorded["run"]["plan"]


def test_info_and_doctor_show_the_plan_for_this_machine(monkeypatch):
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands

    load_commands()
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls, shm_dir="/dev/shm": WORKSTATION))
    info = CliRunner().invoke(cli, ["info", "nethack"])
    assert info.exit_code == 0, info.output
    # on a GPU machine, envs with a GPU profile show it (NetHack's spread over the 15 workers)
    line = "plan for 16 cores, 120 GiB, 1 GPU (80 GiB): 525 envs x 64 steps, multiprocessing 15 workers, 1 torch thread"
    assert line + " (heavy env, the GPU profile)" in info.output
    data = json.loads(CliRunner().invoke(cli, ["info", "acrobot", "--json"]).output)
    assert data["plan"].startswith("plan for 16 cores, 120 GiB, 1 GPU (80 GiB): 510 envs x 64 steps, multiprocessing")
    pong = json.loads(CliRunner().invoke(cli, ["info", "ocean/pong", "--json"]).output)
    assert pong["gpu_profile"]["vec"]["num_envs"] == 2048 and "(native env, the GPU profile)" in pong["plan"]
    assert "GPU profile (--profile gpu; on a CUDA device)" in CliRunner().invoke(cli, ["info", "ocean/pong"]).output
    doctor = json.loads(CliRunner().invoke(cli, ["doctor", "--json"]).output)
    plan = next(c for c in doctor if c["name"] == "scaling plan")
    assert plan["ok"] and "heavy and image envs over 15 env workers, 4x the defaults' envs per core" in plan["detail"]
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls, shm_dir="/dev/shm": BASE))
    doctor = json.loads(CliRunner().invoke(cli, ["doctor", "--json"]).output)
    assert "the plugin defaults" in next(c for c in doctor if c["name"] == "scaling plan")["detail"]


def test_a_planned_worker_pool_trains(tmp_path, monkeypatch):
    # a 4-core box plans Acrobot (a Python env) onto 2 worker processes stepping in a pool of two halves:
    # the backend and the trainer accept what the plan wrote, and it trains
    four_cores = Machine(cores=4, memory=8 * GiB, shm=1 * GiB)
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls, shm_dir="/dev/shm": four_cores))
    result = run("acrobot", run_dir=tmp_path / "run", stop_after=8192, dashboard=False, tensorboard=False)
    vec = load_toml(tmp_path / "run" / "config.toml")["vec"]
    assert (vec["backend"], vec["num_workers"], vec["num_envs"], vec["batch_size"]) == ("multiprocessing", 2, 32, 16)
    assert result.global_step >= 8192


# --- the GPU profiles (TrainDefaults.gpu_config), picked on a CUDA device or by --profile ---

GPU_PROFILED = ["ocean/pong", "ocean/breakout", "ocean/snake", "cartpole", "tag"]


@pytest.mark.parametrize("name", GPU_PROFILED)
def test_the_gpu_profiles_update_on_gpu_sized_batches(name):
    config, plan = planned_config(spec(name), machine=WORKSTATION)
    assert plan.profile == "gpu" and "GPU profile" in plan.describe()
    agents = spec(name).flattening(**config.env)[2]
    assert config.vec.num_envs * agents >= 2048  # Snake: 256 envs of 8 snakes
    assert config.vec.num_envs * agents * config.train.num_steps >= 131_072  # agent rows per update


def test_a_gpu_machine_trains_at_the_profile_and_a_cpu_run_keeps_the_defaults():
    pong = spec("ocean/pong")
    config, plan = planned_config(pong, machine=WORKSTATION)  # train.device auto: the GPU
    profile = resolve_run_config(pong.training.config).updated(pong.training.gpu_config)
    assert config == profile and not plan.scaled  # the profile replaces the GPU_ENV_FACTOR scaling
    assert sizes(plan) == (2048, 64, 8, "serial", 0, 0)
    # on the 2-core machine, and on the GPU machine told to train on its CPU: today's plan, no profile
    assert planned_config(pong, machine=BASE)[0] == resolve_run_config(pong.training.config)
    config, plan = planned_config(pong, machine=WORKSTATION, flags={"train.device": "cpu"})
    assert plan.profile == "cpu" and config.vec.num_envs == 256
    # --profile cpu on the GPU machine: the defaults as the plan scales them (4x the envs for a GPU)
    config, plan = planned_config(pong, machine=WORKSTATION, profile="cpu")
    assert plan.profile == "cpu" and sizes(plan) == (1024, 32, 4, "serial", 0, 0) and plan.scaled


def test_profile_gpu_selects_the_profile_on_a_cpu():
    config, plan = planned_config(spec("ocean/pong"), machine=BASE, profile="gpu")
    assert plan.profile == "gpu" and (config.vec.num_envs, config.train.num_steps) == (2048, 64)
    assert plan.describe().startswith("plan for 2 cores, 23 GiB, no GPU: 2,048 envs x 64 steps, serial")
    assert "(native env, the GPU profile)" in plan.describe()
    config, plan = planned_config(spec("ocean/pong"), machine=BASE, flags={"train.device": "cpu"}, profile="gpu")
    assert plan.profile == "gpu" and config.vec.num_envs == 2048  # asked for: on any device


def test_the_users_settings_win_over_the_profile():
    overrides = ["train.update_epochs=3", "vec.num_envs=1024"]
    config, plan = planned_config(spec("ocean/pong"), overrides=overrides, machine=WORKSTATION)
    assert (config.train.update_epochs, config.vec.num_envs) == (3, 1024)
    assert (config.train.num_steps, config.train.num_minibatches) == (64, 8)  # the rest of the profile
    assert plan.profile == "gpu" and "not planned: you set vec.num_envs" in plan.describe()
    config, _ = planned_config(spec("ocean/pong"), flags={"train.total_steps": 4096}, machine=WORKSTATION)
    assert config.train.total_steps == 4096 and config.vec.num_envs == 2048


def test_an_env_without_a_profile_is_planned_as_before():
    acrobot = spec("acrobot")
    assert not acrobot.training.gpu_config
    config, plan = planned_config(acrobot, machine=WORKSTATION)
    assert sizes(plan) == sizes(make_plan(WORKSTATION, acrobot)) and plan.scaled and plan.profile == "cpu"
    config, plan = planned_config(acrobot, machine=BASE, profile="gpu")
    assert config == resolve_run_config(acrobot.training.config)
    assert plan.profile == "cpu" and "acrobot has no GPU profile" in plan.describe()


def test_a_heavy_envs_profile_spreads_over_the_workers():
    nethack = spec("nethack")
    config, plan = planned_config(nethack, machine=WORKSTATION)
    assert sizes(plan) == (525, 64, 4, "multiprocessing", 15, 0) and plan.profile == "gpu"  # 512 rounded up
    assert config.train.update_epochs == nethack.training.gpu_config["train"]["update_epochs"]
    config, plan = planned_config(nethack, machine=BASE, profile="gpu")  # one spare core: in this process
    assert sizes(plan) == (512, 64, 4, "serial", 0, 0)


def test_a_bad_profile_is_one_config_error():
    with pytest.raises(ConfigError, match="--profile: expected one of auto, gpu, cpu, got 'fast'"):
        planned_config(spec("ocean/pong"), machine=BASE, profile="fast")


def test_the_cli_records_the_profile_and_refuses_a_bad_one(tmp_path):
    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands

    load_commands()
    run_dir = tmp_path / "run"
    args = ["train", "cartpole", "--profile", "gpu", "--total-steps", "131072", "--run-dir", str(run_dir)]
    result = CliRunner().invoke(cli, [*args, "--no-tensorboard", "--seed", "2"])
    assert result.exit_code == 0, result.output
    assert "2,048 envs x 64 steps, serial" in result.output and "the GPU profile" in result.output
    recorded = load_toml(run_dir / "config.toml")
    assert recorded["run"]["plan"]["profile"] == "gpu" and recorded["vec"]["num_envs"] == 2048
    bad = CliRunner().invoke(cli, ["train", "cartpole", "--profile", "fast", "--run-dir", str(tmp_path / "bad")])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == ["Error: --profile: expected one of auto, gpu, cpu, got 'fast'"]
    resumed = CliRunner().invoke(cli, ["train", "--resume", str(run_dir), "--profile", "cpu"])  # keeps its record
    assert resumed.exit_code == 2
    assert resumed.output.strip().splitlines() == [
        "Error: --profile: a resumed run keeps the settings it recorded; drop --profile"
    ]
