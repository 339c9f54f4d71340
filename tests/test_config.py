"""Config layering and bad values: one-line errors naming the key, exit status 2 from the CLI."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.train.config import DEFAULTS, ConfigError, parse_override, resolve_config


def test_layers_apply_in_order(tmp_path):
    config_file = tmp_path / "c.toml"
    config_file.write_text("[train]\nlearning_rate = 0.1\ngamma = 0.5\nnum_steps = 7\n[vec]\nnum_envs = 3\n")
    plugin = {"train": {"learning_rate": 0.2, "gamma": 0.6, "num_steps": 9, "ent_coef": 0.3}}
    cfg = resolve_config(
        plugin,
        config_file,
        overrides=["train.gamma=0.25", "train.num_steps=5"],
        flags={"train.num_steps": 11, "vec.backend": None},
    )
    assert cfg["train"]["ent_coef"] == 0.3  # plugin beats built-in
    assert cfg["train"]["learning_rate"] == 0.1  # file beats plugin
    assert cfg["train"]["gamma"] == 0.25  # --set beats file
    assert cfg["train"]["num_steps"] == 11  # flags beat --set
    assert cfg["vec"]["num_envs"] == 3 and cfg["vec"]["backend"] == DEFAULTS["vec"]["backend"]
    assert cfg["train"]["clip_coef"] == DEFAULTS["train"]["clip_coef"]


def test_override_values_parse_as_toml():
    assert parse_override("train.learning_rate=3e-4") == {"train": {"learning_rate": 3e-4}}
    assert parse_override("train.anneal_lr=false") == {"train": {"anneal_lr": False}}
    assert parse_override("vec.backend=multiprocessing") == {"vec": {"backend": "multiprocessing"}}
    assert parse_override("env.size=[3, 4]") == {"env": {"size": [3, 4]}}
    cfg = resolve_config(overrides=["train.learning_rate=1"])  # int accepted where a float is expected
    assert cfg["train"]["learning_rate"] == 1.0 and isinstance(cfg["train"]["learning_rate"], float)


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.learning_rte=1e-3", "train.learning_rte: unknown key; did you mean learning_rate?"),
        ("train.num_steps=1.5", "train.num_steps: expected int, got float 1.5"),
        ("train.anneal_lr=1", "train.anneal_lr: expected bool, got int 1"),
        ("vec.num_envs=fast", "vec.num_envs: expected int, got str 'fast'"),
        ("trian.gamma=0.9", "trian: unknown section"),
        ("train.gamma=-1.0", "train.gamma: must be >= 0"),
        ("train.num_minibatches=0", "train.num_minibatches: must be >= 1"),
        ("gamma=0.9", "expected SECTION.KEY=VALUE"),
        ("train.gamma=2", "train.gamma: must be between 0 and 1 (a discount), got 2.0"),  # issue 38, defect 9
        ("train.gae_lambda=1.5", "train.gae_lambda: must be between 0 and 1"),
        ("train.max_grad_norm=0", "train.max_grad_norm: must be > 0, got 0.0"),
    ],
)
def test_bad_values_name_the_key(override, message):
    with pytest.raises(ConfigError) as err:
        resolve_config(overrides=[override])
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_file_value_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[policy]\nhidden_size = '64'\n")
    with pytest.raises(ConfigError, match=r"policy.hidden_size: expected int, got str '64' \(.*bad.toml\)"):
        resolve_config(config_file=path)
    with pytest.raises(ConfigError, match="config file not found"):
        resolve_config(config_file=tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "train.learning_rte=1e-3"], "Error: train.learning_rte: unknown key; did you mean learning_rate?"),
        (["--set", "train.num_steps=abc"], "Error: train.num_steps: expected int, got str 'abc'"),
        (["--set", "train.gamma=2"], "Error: train.gamma: must be between 0 and 1 (a discount), got 2.0"),
        (["--set", "train.max_grad_norm=0"], "Error: train.max_grad_norm: must be > 0, got 0.0"),
        (["--num-workers", "0"], "Error: --num-workers 0: must be >= 1; fix: leave --num-workers out"),
    ],
)
def test_cli_bad_config_is_one_line_exit_2(tmp_path, args, message):
    load_commands()
    result = CliRunner().invoke(cli, ["train", "cartpole", "--run-dir", str(tmp_path / "r"), *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message)
    assert not (tmp_path / "r").exists()


def test_typed_sections_are_the_dataclasses_with_every_default_and_the_same_checks():
    from dataclasses import asdict

    from pufferbox.train.config import PolicyConfig, TrainConfig, VecConfig, typed, updated

    cfg = resolve_config(overrides=["train.gamma=0.9", "vec.num_envs=3", "policy.lstm=true"])
    train, vec, policy = typed(TrainConfig, cfg["train"]), typed(VecConfig, cfg["vec"]), typed(PolicyConfig, cfg["policy"])
    assert (train.gamma, vec.num_envs, policy.lstm) == (0.9, 3, True)
    assert asdict(train) == cfg["train"] and asdict(TrainConfig()) == DEFAULTS["train"]
    with pytest.raises(ConfigError, match=r"^train\.gama: unknown key; did you mean gamma\?$"):
        typed(TrainConfig, {"gama": 0.9})
    with pytest.raises(ConfigError, match=r"^train\.learning_rate: must be a finite number"):
        updated(train, {"learning_rate": float("nan")})
    # frozen: updated() returns a copy
    assert updated(train, {"ent_coef": 0.5}).ent_coef == 0.5 and train.ent_coef == DEFAULTS["train"]["ent_coef"]


def test_trainer_set_hyperparameters_checks_values(tmp_path):
    from pufferbox.train.retune import set_hyperparameters
    from pufferbox.train.trainer import Trainer

    trainer = Trainer("cartpole", resolve_config(overrides=["vec.num_envs=2", "train.num_steps=8"]))
    try:
        set_hyperparameters(trainer, {"learning_rate": 0.01, "gamma": 0.5})
        assert trainer.learner.hp is trainer.config.train and trainer.tc.gamma == 0.5  # one copy, no dict beside it
        assert trainer.train_update()["learning_rate"] == pytest.approx(0.01 * (1 - 0 / trainer.total_updates))
        with pytest.raises(ConfigError, match=r"^train\.gamma: expected float"):
            set_hyperparameters(trainer, {"gamma": "high"})
        with pytest.raises(ConfigError, match="train.num_steps"):
            set_hyperparameters(trainer, {"num_steps": 16})
    finally:
        trainer.close()
