"""ONNX and TorchScript graphs of a run's policies, each checked against the PyTorch policy.

:func:`record` plays the run's env with its own policies for a few steps and keeps, per policy, the raw
observation rows, the LSTM state going in and what the unmodified PyTorch policy computed. After a
graph is written it is run on those rows (ONNX with onnxruntime, TorchScript with ``torch.jit.load``)
and every output must match (``numpy.allclose``), or the export fails naming the output.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from gymnasium import spaces

from pufferbox.export.policy import ActingPolicy, ExportError, LoadedRun, RunPolicy, head_sizes, reference_outputs

__all__ = ["Recording", "record", "input_names", "output_names", "write_onnx", "write_torchscript", "check_graph"]

RTOL, ATOL = 1e-4, 1e-5


@dataclass
class Recording:
    """One policy's recorded steps: raw rows, the LSTM state before each step, the PyTorch outputs."""

    rows: list[np.ndarray] = field(default_factory=list)
    states: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    outputs: list[list[np.ndarray]] = field(default_factory=list)

    def inputs(self) -> list[np.ndarray]:
        rows = np.concatenate(self.rows)
        return [rows, *(np.concatenate(part) for part in zip(*self.states))] if self.states[0] else [rows]

    def expected(self) -> list[np.ndarray]:
        return [np.concatenate(part) for part in zip(*self.outputs)]


def input_names(policy: RunPolicy) -> list[str]:
    return ["observation", "lstm_h", "lstm_c"] if policy.agent.lstm_size else ["observation"]


def output_names(policy: RunPolicy) -> list[str]:
    choices, values = head_sizes(policy.agent.actor)
    heads = (["logits"] if choices else []) + (["mean", "std"] if values else []) + ["value"]
    return [*heads, "lstm_h_out", "lstm_c_out"] if policy.agent.lstm_size else heads


def policy_rows(run: LoadedRun, policy: RunPolicy, num_rows: int) -> np.ndarray:
    """Positions of ``policy``'s rows among a vector env's ``num_rows`` rows (whole envs, slot-major)."""
    rows = np.arange(num_rows)
    return rows if policy.slots is None else rows[np.isin(rows % run.agents_per_env, policy.slots)]


def choose(policy: RunPolicy, outputs: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Actions sampled from the policy's outputs: Gumbel-max over each slot's masked logits, then (Box and
    hybrid actions) a Normal around the means clipped to the bounds."""
    choices, values = head_sizes(policy.agent.actor)
    flat = policy.act_spec.flat_space
    picks: list[np.ndarray] = []
    if choices:
        noisy = outputs[0] + rng.gumbel(size=outputs[0].shape)
        picks = [block.argmax(-1) for block in np.split(noisy, np.cumsum(policy.agent.actor.sizes)[:-1], axis=-1)]
        if isinstance(flat, spaces.Discrete):
            return picks[0]
        if not values:
            return np.stack(picks, axis=-1)
    mean, std = outputs[1 if choices else 0], outputs[2 if choices else 1]
    box = cast(spaces.Box, getattr(flat, "continuous", flat))
    amounts = np.clip(mean + std * rng.standard_normal(mean.shape), box.low, box.high)
    return np.concatenate([np.stack(picks, axis=-1).astype(np.float32), amounts], axis=-1) if picks else amounts


def record(run: LoadedRun, steps: int = 24, num_envs: int = 2, seed: int = 0) -> dict[str, Recording]:
    """Play ``steps`` steps of ``num_envs`` envs with the run's policies; per policy what it saw and computed."""
    import pufferbox.vector

    env_kwargs = dict(run.config.env)
    venv = pufferbox.vector.make(
        run.spec, backend="serial", num_envs=num_envs, env_kwargs=env_kwargs, native=run.config.vec.native
    )
    rng = np.random.default_rng(seed)
    out = {p.name: Recording() for p in run.policies}
    try:
        obs, _ = venv.reset(seed=seed)
        rows = {p.name: policy_rows(run, p, venv.num_agents) for p in run.policies}
        states = {p.name: initial_state(p, len(rows[p.name])) for p in run.policies}
        for _ in range(steps):
            actions = venv.act_spec.zeros(venv.num_agents)
            for p in run.policies:
                raw, state = np.array(obs[rows[p.name]]), states[p.name]
                outputs = reference_outputs(run, p, raw, None if state is None else tuple(map(torch.from_numpy, state)))
                out[p.name].rows.append(raw)
                out[p.name].states.append(() if state is None else state)
                out[p.name].outputs.append(outputs)
                actions[rows[p.name]] = choose(p, outputs, rng)
                states[p.name] = None if state is None else (outputs[-2], outputs[-1])
            obs, _, terminals, truncations, _ = venv.step(actions)
            restart_states(states, rows, np.logical_or(terminals, truncations))
    finally:
        venv.close()
    return out


def initial_state(policy: RunPolicy, rows: int) -> tuple[np.ndarray, np.ndarray] | None:
    size = int(policy.agent.lstm_size)
    return None if not size else (np.zeros((rows, size), np.float32), np.zeros((rows, size), np.float32))


def restart_states(states: dict[str, Any], rows: dict[str, np.ndarray], done: np.ndarray) -> None:
    """Zero the LSTM state of rows whose episode ended (what a user does at each episode start)."""
    for name, state in states.items():
        if state is not None:
            ended = done[rows[name]]
            states[name] = tuple(np.where(ended[:, None], 0.0, s).astype(np.float32) for s in state)


def example_inputs(recording: Recording) -> tuple[torch.Tensor, ...]:
    """Two recorded rows (and states) to trace with: a batch of one would fix the batch size."""
    return tuple(torch.from_numpy(np.ascontiguousarray(x[:2])) for x in recording.inputs())


@contextlib.contextmanager
def quiet_exporter() -> Any:
    """The exporters print progress and deprecation notes; an export prints its own summary instead."""
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")  # "torchvision is not installed"
    level = registration.level
    registration.setLevel(logging.ERROR)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            yield
        except Exception as exc:
            cause = exc.__cause__ or exc  # torch.onnx wraps the failure in a page of advice
            raise ExportError(f"the graph exporter failed: {first_line(cause)}") from exc
        finally:
            registration.setLevel(level)


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def write_onnx(module: ActingPolicy, policy: RunPolicy, recording: Recording, path: Path) -> None:
    """``module`` as an ONNX graph with a dynamic batch dimension (torch.export based exporter)."""
    example = example_inputs(recording)
    batch = torch.export.Dim("batch", min=1)
    with quiet_exporter(), torch.no_grad():
        torch.onnx.export(
            module,
            example,
            str(path),
            dynamo=True,
            input_names=input_names(policy),
            output_names=output_names(policy),
            dynamic_shapes=tuple({0: batch} for _ in example),
            external_data=False,  # one self-contained file
            verbose=False,
        )


def write_torchscript(module: ActingPolicy, policy: RunPolicy, recording: Recording, path: Path) -> None:
    """``module`` traced to TorchScript (``torch.jit.load`` runs it without pufferbox)."""
    module.requires_grad_(False)  # outputs a user can .numpy() without torch.no_grad()
    with quiet_exporter(), torch.no_grad():
        traced = torch.jit.trace(module, example_inputs(recording), check_trace=False)
        traced.save(str(path))


def run_graph(path: Path, policy: RunPolicy, inputs: list[np.ndarray]) -> list[np.ndarray]:
    if path.suffix == ".onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return list(session.run(output_names(policy), dict(zip(input_names(policy), inputs))))
    module = torch.jit.load(str(path))
    with torch.no_grad():
        return [o.numpy() for o in module(*(torch.from_numpy(x) for x in inputs))]


def check_graph(path: Path, policy: RunPolicy, recording: Recording) -> float:
    """Run the written graph on the recorded rows; the largest difference from PyTorch (ExportError if too large)."""
    got, want = run_graph(path, policy, recording.inputs()), recording.expected()
    worst = 0.0
    for name, g, w in zip(output_names(policy), got, want):
        if g.shape != w.shape or not np.allclose(g, w, rtol=RTOL, atol=ATOL):
            diff = (
                np.abs(np.nan_to_num(g.astype(np.float64)) - np.nan_to_num(w.astype(np.float64))).max()
                if g.shape == w.shape
                else "shape"
            )
            raise ExportError(
                f"{path}: output {name!r} differs from the PyTorch policy on {len(w)} recorded rows ({diff}); "
                "the graph was written but does not reproduce the policy"
            )
        finite = np.isfinite(w)
        worst = max(worst, float(np.abs(g[finite].astype(np.float64) - w[finite]).max(initial=0.0)))
    return worst
