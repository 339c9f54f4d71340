"""``pufferbox export``: ONNX / TorchScript graphs and Hub folders of real (tiny) runs, checked outside pufferbox.

Each run is a few updates of the real env; each graph is run again here with onnxruntime or
``torch.jit.load`` on the rows the export recorded and compared with pufferbox's own acting code
(``Agent.greedy`` and ``Agent.act``'s value), and the NetHack / Dict rows are rebuilt from the sidecar
JSON alone and compared with what the flattening spec writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.registry import get_registry

onnxruntime = pytest.importorskip("onnxruntime", reason="pip install -e '.[export]' (make setup installs it)")
TINY = ["--num-envs", "2", "--backend", "serial", "--no-tensorboard"]
TINY_SETS = ["train.num_steps=32", "train.num_minibatches=1", "train.update_epochs=1"]


def invoke(*args: str):
    load_commands()
    return CliRunner().invoke(cli, [str(a) for a in args])


def tiny_run(root: Path, env: str, *sets: str, steps: int = 128) -> Path:
    spec = get_registry().get(env)
    if spec.unavailable_reason:
        pytest.skip(f"{env} is not installed here: {spec.unavailable_reason}")
    run_dir = root / env.replace("/", "-")
    settings = [x for s in (*TINY_SETS, *sets) for x in ("--set", s)]
    result = invoke("train", env, "--run-dir", run_dir, "--total-steps", steps, *TINY, *settings)
    assert result.exit_code == 0, result.output
    return run_dir


def export(run_dir: Path, to: str, out: Path, *extra: str) -> dict:
    result = invoke("export", run_dir, "--to", to, out, *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def run_onnx(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def samples(folder: Path, policy: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    data = np.load(folder / f"{policy}-samples.npz")
    inputs = {k: data[k] for k in data.files if not k.startswith("expected_")}
    return inputs, {k[len("expected_") :]: data[k] for k in data.files if k.startswith("expected_")}


def pufferbox_policy(run_dir: Path):
    """The policy as ``pufferbox eval`` builds it (agent, frozen normalizer), independent of the export code."""
    from pufferbox.export.policy import load_run

    return load_run(run_dir)


def check_against_agent(run_dir: Path, folder: Path, name: str = "policy") -> None:
    """The graph's greedy actions and values on the recorded rows are the pufferbox agent's."""
    run = pufferbox_policy(run_dir)
    policy = next(p for p in run.policies if p.name == name)
    inputs, expected = samples(folder, name)
    got = run_onnx(folder / f"{name}.onnx", inputs)
    for key, want in expected.items():
        np.testing.assert_allclose(got[key], want, rtol=1e-4, atol=1e-5)
    rows = inputs["observation"]
    obs = torch.from_numpy(rows if run.normalizer is None else run.normalizer.observe(rows, update=False))
    state = (torch.from_numpy(inputs["lstm_h"]), torch.from_numpy(inputs["lstm_c"])) if "lstm_h" in inputs else None
    with torch.no_grad():
        greedy, _ = policy.agent.greedy(obs, state)
        value = policy.agent.act(obs, state)[3]
    np.testing.assert_allclose(got["value"], value.numpy(), rtol=1e-4, atol=1e-5)
    parts = []
    if "logits" in got:
        blocks = np.split(got["logits"], np.cumsum(policy.agent.actor.sizes)[:-1], axis=-1)
        parts.append(np.stack([b.argmax(-1) for b in blocks], -1).astype(np.float32))
    if "mean" in got:  # Box values (a hybrid row: after the choices): the Gaussians' means
        parts.append(got["mean"])
        np.testing.assert_allclose(got["std"][0], policy.agent.actor.logstd.exp().detach().numpy(), rtol=1e-5)
    greedy_graph = np.concatenate(parts, -1).reshape(greedy.shape)
    np.testing.assert_allclose(greedy_graph, greedy.numpy().astype(np.float32), rtol=1e-4, atol=1e-5)


def build_row(sidecar: dict, sample: dict) -> np.ndarray:
    """One observation row from a dict of field values, using nothing but the sidecar JSON."""
    layout = sidecar["observation"]
    row = np.zeros(layout["row_bytes"], np.uint8)
    for field in layout["fields"]:
        value = sample
        for key in field["name"].split("/"):
            value = value[int(key) if isinstance(value, tuple) else key]
        raw = np.ascontiguousarray(np.asarray(value, dtype=field["dtype"]).reshape(field["shape"])).view(np.uint8).ravel()
        row[field["byte_offset"] : field["byte_offset"] + raw.size] = raw
    return row.view(layout["row_dtype"])


# -- the byte-row reader ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dtype", ["uint8", "int8", "bool", "int16", "uint16", "int32", "uint32", "int64", "float32", "float64"]
)
def test_byte_rows_decode_exactly_like_numpy_views(dtype):
    from pufferbox.export.rowcodec import decode_leaf

    dt, rng = np.dtype(dtype), np.random.default_rng(3)
    if dt.kind == "f":
        tiny = np.finfo(dt).smallest_subnormal  # subnormals decode through their own branch
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -3 * tiny, np.finfo(dt).max, 1.0, -2.5], dt)
        values = np.concatenate([(rng.standard_normal(64) * 10.0 ** rng.integers(-20, 20, 64)).astype(dt), specials])
    elif dt == np.bool_:
        values = rng.integers(0, 2, 64).astype(dt)
    else:
        info = np.iinfo(dt)
        values = np.concatenate([rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True), [info.min, info.max, 0]])
        values = values.astype(dt)
    row = np.concatenate([np.full(3, 7, np.uint8), values.view(np.uint8)])[None]  # at an odd offset
    got = decode_leaf(torch.from_numpy(row), 3, dt, values.shape).numpy()[0]
    assert got.dtype == dt
    assert np.array_equal(got.view(np.uint8), values.view(np.uint8))  # bit for bit, NaN and -0.0 included


# -- MLP: CartPole ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cartpole(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("runs"), "cartpole")


def test_cartpole_onnx_graph_acts_like_the_agent_and_its_sidecar_describes_the_row(cartpole, tmp_path):
    summary = export(cartpole, "onnx", tmp_path / "onnx")
    assert summary["graphs"][0]["rows_checked"] >= 32
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert sidecar["inputs"] == [{"name": "observation", "dtype": "float32", "shape": ["batch", 4]}]
    assert sidecar["outputs"] == ["logits", "value"] and sidecar["action"]["blocks"][0]["size"] == 2
    check_against_agent(cartpole, tmp_path / "onnx")


def test_cartpole_torchscript_runs_without_pufferbox_code(cartpole, tmp_path):
    export(cartpole, "torchscript", tmp_path / "ts")
    inputs, expected = samples(tmp_path / "ts", "policy")
    module = torch.jit.load(str(tmp_path / "ts" / "policy.pt"))
    logits, value = module(torch.from_numpy(inputs["observation"]))  # no torch.no_grad(): weights are frozen
    np.testing.assert_allclose(logits.numpy(), expected["logits"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(value.numpy(), expected["value"], rtol=1e-4, atol=1e-5)


def test_cartpole_hub_folder_is_a_model_repo_that_eval_plays_like_the_checkpoint(cartpole, tmp_path):
    yaml = pytest.importorskip("yaml")
    from safetensors import safe_open
    from safetensors.torch import load_file

    hub = tmp_path / "hub"
    export(cartpole, "hub", hub, "--episodes", "2")
    card = (hub / "README.md").read_text()
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["library_name"] == "pufferbox" and "reinforcement-learning" in meta["tags"]
    assert meta["model-index"][0]["results"][0]["dataset"]["name"] == "cartpole"
    assert "pufferbox train cartpole --config config.toml" in card and "huggingface-cli upload" in card
    assert "| torch | " in card and "| pufferbox-classic | " in card
    assert {"model.safetensors", "config.toml", "returns.png", "replay.gif"} <= {p.name for p in hub.iterdir()}
    assert (hub / "replay.gif").read_bytes()[:4] == b"GIF8" and (hub / "returns.png").read_bytes()[:4] == b"\x89PNG"
    with safe_open(str(hub / "model.safetensors"), framework="pt") as fh:
        assert fh.metadata()["env"] == "cartpole"
    assert any(k.startswith("model.actor") for k in load_file(str(hub / "model.safetensors")))
    runs = [invoke("eval", "--checkpoint", c, "--episodes", 3, "--seed", 11) for c in (cartpole, hub)]
    assert all(r.exit_code == 0 for r in runs), runs[1].output
    original, loaded = (json.loads(r.output.strip().splitlines()[-1]) for r in runs)
    assert loaded["returns"] == original["returns"] and loaded["env"] == "cartpole"


def test_an_lstm_policy_with_normalized_observations_exports_its_state_and_statistics(tmp_path_factory, tmp_path):
    run_dir = tiny_run(tmp_path_factory.mktemp("runs"), "cartpole", "policy.lstm=true", "train.norm_obs=true")
    export(run_dir, "onnx", tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert [i["name"] for i in sidecar["inputs"]] == ["observation", "lstm_h", "lstm_c"]
    assert sidecar["outputs"][-2:] == ["lstm_h_out", "lstm_c_out"] and sidecar["normalization"]
    inputs, _ = samples(tmp_path / "onnx", "policy")
    assert np.abs(inputs["lstm_h"]).max() > 0  # the recorded steps carried a state through the graph
    check_against_agent(run_dir, tmp_path / "onnx")


# -- bad input ----------------------------------------------------------------------------------
def test_bad_exports_are_one_line_errors_and_touch_nothing(cartpole, tmp_path):
    empty_run = tmp_path / "not-a-run"
    empty_run.mkdir()
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    cases = {
        "no checkpoint": (empty_run, "onnx", tmp_path / "a"),
        "unknown --to": (cartpole, "tflite", tmp_path / "b"),
        "non-empty DIR": (cartpole, "onnx", taken),
    }
    for why, (run_dir, to, out) in cases.items():
        result = invoke("export", run_dir, "--to", to, out)
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: "), (why, result.output)
        assert "Traceback" not in result.output
    assert "ckpt" in invoke("export", empty_run, "--to", "onnx", tmp_path / "a").output
    assert "tflite" in invoke("export", cartpole, "--to", "tflite", tmp_path / "b").output
    assert [p.name for p in taken.iterdir()] == ["keep.txt"] and (taken / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-run", "taken"]  # no partial folders


def test_an_encoder_named_only_by_the_checkpoint_is_never_imported_unless_passed(cartpole, tmp_path, monkeypatch):
    import tomllib

    import tomli_w

    from pufferbox.train.checkpoint import latest_checkpoint

    marker = tmp_path / "imported"
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "export_trust_encoder.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
        "from pufferbox.train.policies import MLPEncoder as Encoder\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    state = torch.load(latest_checkpoint(cartpole / "checkpoints"), weights_only=True)
    config = tomllib.loads(state["config"])
    config["policy"]["encoder"] = "export_trust_encoder:Encoder"
    crafted = tmp_path / "ckpt-00000099.pt"
    torch.save({**state, "config": tomli_w.dumps(config)}, crafted)
    refused = invoke("export", crafted, "--to", "onnx", tmp_path / "out")
    assert refused.exit_code == 2 and refused.output.startswith("Error: ") and len(refused.output.splitlines()) == 1
    assert "--encoder export_trust_encoder:Encoder" in refused.output and not marker.exists()
    export(crafted, "onnx", tmp_path / "out", "--encoder", "export_trust_encoder:Encoder")  # the user's own choice
    assert marker.exists()


def test_a_graph_that_does_not_reproduce_the_policy_fails_and_leaves_no_folder(cartpole, tmp_path, monkeypatch):
    import pufferbox.export.graphs as graphs

    real = graphs.run_graph
    monkeypatch.setattr(graphs, "run_graph", lambda *a: [o + 0.01 for o in real(*a)])  # a graph off by 0.01
    result = invoke("export", cartpole, "--to", "onnx", tmp_path / "out")
    assert result.exit_code == 2 and result.output.startswith("Error: ") and "'logits' differs" in result.output
    assert list(tmp_path.iterdir()) == []


# -- structured rows: NetHack's encoder, a Dict of float/int/binary leaves -----------------------------
def test_nethack_graph_reads_its_byte_row_and_the_sidecar_builds_that_row(tmp_path_factory, tmp_path):
    run_dir = tiny_run(tmp_path_factory.mktemp("runs"), "nethack")
    export(run_dir, "onnx", tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert {f["name"]: f["dtype"] for f in sidecar["observation"]["fields"]} == {
        "glyphs": "int16",
        "blstats": "int64",
        "message": "uint8",
    }
    check_against_agent(run_dir, tmp_path / "onnx")
    spec = get_registry().get("nethack")
    env = spec.make_raw()
    try:
        obs, _ = env.reset(seed=5)
    finally:
        env.close()
    row = build_row(sidecar, obs)
    from pufferbox.spaces import ObservationSpec

    assert np.array_equal(row, ObservationSpec(env.observation_space).flatten(obs))
    expected = run_onnx(tmp_path / "onnx" / "policy.onnx", {"observation": row[None]})
    run = pufferbox_policy(run_dir)
    with torch.no_grad():
        value = run.policies[0].agent.act(torch.from_numpy(row[None]))[3]
    np.testing.assert_allclose(expected["value"], value.numpy(), rtol=1e-4, atol=1e-5)
    export(run_dir, "torchscript", tmp_path / "ts")  # the same byte decoding, traced
    logits, ts_value = torch.jit.load(str(tmp_path / "ts" / "policy.pt"))(torch.from_numpy(row[None]))
    np.testing.assert_allclose(ts_value.numpy(), value.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(logits.numpy(), expected["logits"], rtol=1e-4, atol=1e-5)


def test_a_dict_of_float_int_and_binary_leaves_with_normalization_and_multidiscrete_actions(tmp_path_factory, tmp_path):
    run_dir = tiny_run(tmp_path_factory.mktemp("runs"), "spaces", "train.norm_obs=true")
    export(run_dir, "onnx", tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert sidecar["observation"]["row_dtype"] == "uint8" and sidecar["normalization"]
    blocks = [(b["leaf"], b["size"]) for b in sidecar["action"]["blocks"]]
    assert blocks == [("bits", 2), ("bits", 2), ("bits", 2), ("choice", 4)]  # gymnasium sorts Dict keys
    check_against_agent(run_dir, tmp_path / "onnx")
    env = get_registry().get("spaces").make_raw()
    obs, _ = env.reset(seed=1)
    from pufferbox.spaces import ObservationSpec

    assert np.array_equal(build_row(sidecar, obs), ObservationSpec(env.observation_space).flatten(obs))


def test_a_masked_env_s_graph_puts_illegal_moves_at_minus_infinity(tmp_path_factory, tmp_path):
    run_dir = tiny_run(tmp_path_factory.mktemp("runs"), "pzclassic/tictactoe-vs-random")
    export(run_dir, "onnx", tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert sidecar["observation"]["action_mask"] == "action_mask"
    mask_field = next(f for f in sidecar["observation"]["fields"] if f["name"] == "action_mask")
    inputs, _ = samples(tmp_path / "onnx", "policy")
    rows = inputs["observation"]
    legal = rows[:, mask_field["offset"] : mask_field["offset"] + 9] != 0
    logits = run_onnx(tmp_path / "onnx" / "policy.onnx", inputs)["logits"]
    assert (~legal).any() and np.isneginf(logits[~legal]).all() and np.isfinite(logits[legal]).all()
    check_against_agent(run_dir, tmp_path / "onnx")


def test_a_box_action_exports_mean_and_std(tmp_path_factory, tmp_path):
    run_dir = tiny_run(tmp_path_factory.mktemp("runs"), "pendulum", "train.norm_obs=true")
    export(run_dir, "onnx", tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert sidecar["outputs"] == ["mean", "std", "value"] and sidecar["action"]["kind"] == "box"
    assert sidecar["action"]["low"] == [-2.0] and sidecar["action"]["high"] == [2.0]
    check_against_agent(run_dir, tmp_path / "onnx")


def test_a_hybrid_action_exports_logits_for_its_choices_and_mean_std_for_its_values(monkeypatch, tmp_path):
    from pufferbox.vector.testenvs import env_spec_for

    registry = get_registry()
    real_get = registry.get  # the hybrid test env is not registered: lend it the name, as tests/test_hybrid_actions.py does
    monkeypatch.setattr(
        registry, "get", lambda name, **kw: env_spec_for("hybrid") if name == "hybrid" else real_get(name, **kw)
    )
    run_dir = tiny_run(tmp_path, "hybrid")
    export(run_dir, "onnx", tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert sidecar["outputs"] == ["logits", "mean", "std", "value"] and sidecar["action"]["kind"] == "hybrid"
    assert sidecar["action"]["blocks"][0]["slot"] == 0 and sidecar["action"]["values"][0]["start"] == 1
    check_against_agent(run_dir, tmp_path / "onnx")


# -- CNN: Breakout ------------------------------------------------------------------------------
@pytest.mark.slow
def test_breakout_cnn_exports_to_onnx_and_hub(tmp_path_factory, tmp_path):
    run_dir = tiny_run(tmp_path_factory.mktemp("runs"), "breakout", steps=64)
    export(run_dir, "onnx", tmp_path / "onnx")
    sidecar = json.loads((tmp_path / "onnx" / "policy.json").read_text())
    assert sidecar["observation"]["fields"][0]["shape"] == [4, 84, 84]
    check_against_agent(run_dir, tmp_path / "onnx")
    hub = tmp_path / "hub"
    export(run_dir, "hub", hub, "--episodes", "1")
    assert (hub / "replay.gif").is_file()
    runs = [invoke("eval", "--checkpoint", c, "--episodes", 1, "--seed", 2) for c in (run_dir, hub)]
    original, loaded = (json.loads(r.output.strip().splitlines()[-1]) for r in runs)
    assert loaded["returns"] == original["returns"]


# -- agent groups: one graph per group ----------------------------------------------------------
def test_a_grouped_run_exports_one_graph_per_group_and_its_hub_folder_plays_the_same(tmp_path_factory, tmp_path):
    run_dir = tiny_run(tmp_path_factory.mktemp("runs"), "mpe/simple_speaker_listener", steps=64)
    summary = export(run_dir, "onnx", tmp_path / "onnx")
    assert [g["policy"] for g in summary["graphs"]] == ["speaker", "listener"]
    for name, actions, width in (("speaker", 3, 3), ("listener", 5, 11)):
        sidecar = json.loads((tmp_path / "onnx" / f"{name}.json").read_text())
        assert sidecar["action"]["logits"] == actions and sidecar["observation"]["fields"][0]["shape"] == [width]
        assert sidecar["inputs"][0]["shape"] == ["batch", 11]  # the shared row; its own record starts it
        check_against_agent(run_dir, tmp_path / "onnx", name)
    assert json.loads((tmp_path / "onnx" / "speaker.json").read_text())["slots"] == [0]
    hub = tmp_path / "hub"
    export(run_dir, "hub", hub, "--episodes", "1")
    runs = [invoke("eval", "--checkpoint", c, "--episodes", 2, "--seed", 4) for c in (run_dir, hub)]
    assert all(r.exit_code == 0 for r in runs), runs[1].output
    returns = [json.loads(r.output.strip().splitlines()[-1])["returns"] for r in runs]
    assert returns[0] == returns[1]
