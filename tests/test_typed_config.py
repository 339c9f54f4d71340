"""The run's settings travel as one typed RunConfig (issue 40 item 1): dict lookups of a config section
(``config["train"]``, ``cfg.get("vec")``) stay in train/config.py, where TOML is read and written, and
``"section.key"`` literals stay where flags, search spaces and the checks name settings. Old run dirs and
checkpoints keep their on-disk format: a config dict in today's format still loads."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import tomli_w

from pufferbox.train.config import ConfigError, RunConfig, resolve_config, resolve_run_config

PACKAGE = Path(__file__).resolve().parents[1] / "pufferbox"
SECTIONS = {"train", "vec", "policy", "league"}
DOTTED = re.compile(r"^(train|vec|policy|league)\.[a-z_]+$")
# Where a setting's "section.key" name belongs: the config's checks, the CLI flags, the plan's sizes, the
# search space (sweeps and tournaments) and the sweep's fixed settings.
NAMES_SETTINGS = {
    "train/config.py",
    "cli/train.py",
    "train/plan.py",
    "train/search_space.py",
    "sweep/study.py",
}


def section_lookups(tree: ast.AST) -> list[tuple[int, str]]:
    """``x["train"]``, ``x.get("vec")``, ``x.setdefault("policy", ...)`` and ``x.pop("league")`` in ``tree``."""
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif is_dict_method_call(node):
            key = node.args[0].value
        if key in SECTIONS:
            found.append((node.lineno, ast.unparse(node)))
    return found


def is_dict_method_call(node: ast.AST) -> bool:
    """``x.get("...")``, ``x.setdefault("...", ...)`` or ``x.pop("...")``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
        return False
    return node.func.attr in ("get", "setdefault", "pop") and isinstance(node.args[0], ast.Constant)


def sources() -> list[tuple[str, ast.AST]]:
    return [(path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())) for path in PACKAGE.rglob("*.py")]


def test_no_config_section_is_read_as_a_dict_outside_config_loading():
    offenders = [
        f"pufferbox/{name}:{line}: {text}"
        for name, tree in sources()
        if name != "train/config.py"
        for line, text in section_lookups(tree)
    ]
    assert not offenders, "read the RunConfig's typed sections (config.train.gamma) instead:\n" + "\n".join(offenders)


def test_the_guard_sees_each_form_of_dict_lookup():
    code = 'a = config["train"]["gamma"]\nb = cfg.get("vec", {})\nc = d.setdefault("policy", {})\ne = run.train.gamma'
    assert sorted(text for _, text in section_lookups(ast.parse(code))) == [
        "cfg.get('vec', {})",
        "config['train']",
        "d.setdefault('policy', {})",
    ]


def test_setting_names_stay_where_flags_and_search_spaces_name_them():
    offenders = []
    for name, tree in sources():
        if name in NAMES_SETTINGS:
            continue
        docstrings = {id(node.body[0].value) for node in ast.walk(tree) if has_docstring(node)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docstrings:
                continue
            if DOTTED.match(node.value) and node.value != "league.sqlite":  # a file name, not a setting
                offenders.append(f"pufferbox/{name}:{node.lineno}: {node.value!r}")
    assert not offenders, "use the RunConfig's fields, not 'section.key' strings:\n" + "\n".join(offenders)


def has_docstring(node: ast.AST) -> bool:
    if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) or not node.body:
        return False
    return isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)


def todays_run_dir_config() -> dict:
    """A config.toml as runs write it today (and as checkpoints hold it): ``[run]`` and every section."""
    config = resolve_config(overrides=["vec.num_envs=4", "train.gamma=0.9", "league.random_opponent=0.25"])
    config["env"] = {"size": 5}
    return {"run": {"env": "cartpole", "distribution": "pufferbox-classic"}, **config}


def test_todays_config_dict_round_trips_through_the_run_config():
    on_disk = todays_run_dir_config()
    sections = {name: table for name, table in on_disk.items() if name != "run"}
    run = RunConfig.from_dict(sections)
    assert (run.vec.num_envs, run.train.gamma, run.league.random_opponent, run.env) == (4, 0.9, 0.25, {"size": 5})
    assert run.to_dict() == sections  # config.toml and checkpoints are written in the same format
    assert RunConfig.from_toml(tomli_w.dumps(sections)) == run  # a checkpoint's config text


def test_a_checkpoint_of_todays_format_resumes_and_evaluates(tmp_path):
    """A run dir whose config.toml and checkpoint hold today's dict format: eval and --resume read them."""
    from pufferbox.train.evaluate import evaluate
    from pufferbox.train.runner import run
    from pufferbox.train.trainer import Trainer

    quick = ["vec.num_envs=2", "train.num_steps=16", "train.total_steps=64", "policy.hidden_size=8"]
    sections = resolve_config(overrides=quick)
    trainer = Trainer("cartpole", sections, run_dir=tmp_path)  # the dict form plugins and scripts pass
    try:
        trainer.train()
    finally:
        trainer.close()
    (tmp_path / "config.toml").write_text(tomli_w.dumps({"run": {"env": "cartpole"}, **sections}))
    assert evaluate(None, tmp_path, episodes=2, num_envs=2)["episodes"] == 2
    result = run(resume=tmp_path, overrides=["train.total_steps=128"], dashboard=False, tensorboard=False)
    assert result.global_step == 128


def test_flags_are_checked_updates_with_todays_one_line_errors():
    run = resolve_run_config(flags={"vec.num_envs": 6, "train.seed": None})
    assert run.vec.num_envs == 6 and run.train.seed == 1  # None: the flag was not given
    with pytest.raises(ConfigError, match=r"^vec\.num_envs: must be >= 1, got 0 \(--num-envs\)$"):
        resolve_run_config(flags={"vec.num_envs": 0})
    with pytest.raises(ConfigError, match=r"^--num-workers 0: must be >= 1; fix: leave --num-workers out"):
        resolve_run_config(flags={"vec.num_workers": 0})


def test_updates_make_copies_and_check_every_value():
    base = RunConfig()
    changed = base.updated({"train": {"gamma": 0.5}, "env": {"size": 3}})
    assert (base.train.gamma, changed.train.gamma, dict(changed.env)) == (0.99, 0.5, {"size": 3})
    assert changed.setting("train.gamma") == 0.5 and changed.with_setting("vec.num_envs", 2).vec.num_envs == 2
    with pytest.raises(ConfigError, match=r"^train\.gamma: must be between 0 and 1 \(a discount\), got 2\.0 \(x\)$"):
        base.updated({"train": {"gamma": 2.0}}, "x")
    with pytest.raises(ConfigError, match=r"^trian: unknown section in x; did you mean train\?$"):
        base.updated({"trian": {"gamma": 0.5}}, "x")
