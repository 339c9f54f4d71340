"""A run's acting policies as plain modules: observation row in, action logits (or mean/std) and value out.

:func:`load_run` rebuilds what ``pufferbox eval`` would play (one policy, or one per agent group, with
the frozen observation normalizer). :class:`ActingPolicy` wraps one of them for graph export: it takes
the raw flat row a backend produces, normalizes it as training did, reads its leaves without bitcasts
(:mod:`pufferbox.export.rowcodec`) and returns masked logits (or mean and std) and the value, plus the
LSTM state for recurrent policies. :func:`reference_outputs` is the same computation by the
unmodified PyTorch policy, which every exported graph is checked against.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from pufferbox.export.rowcodec import decode_leaf
from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.train.config import ConfigError, RunConfig

__all__ = [
    "ExportError",
    "RunPolicy",
    "LoadedRun",
    "ActingPolicy",
    "acting_policy",
    "load_run",
    "reference_outputs",
    "reading_rows",
]


class ExportError(ConfigError):
    """An export that cannot be done as asked (a user error: one line, exit 2)."""


@dataclass
class RunPolicy:
    """One policy of a run: its name (``policy``, or the group), the agent, its own spaces, its rows' slots."""

    name: str
    agent: Any
    obs_spec: ObservationSpec
    act_spec: ActionSpec
    slots: list[int] | None  # agent slots of an env this policy plays (None: every slot)


@dataclass
class LoadedRun:
    spec: Any
    config: RunConfig
    state: dict[str, Any]
    source: str
    row_spec: ObservationSpec  # the rows the backend writes (wider than a group's own record)
    row_action: ActionSpec
    policies: list[RunPolicy]
    normalizer: Any  # frozen Normalizer or None
    agents_per_env: int
    encoder: str | None = None  # the user's --encoder MODULE:ATTR, trusted though no plugin registers it


def load_run(checkpoint: str | Path, encoder: str | None = None) -> LoadedRun:
    """The policies of ``checkpoint`` (a run dir, a ``ckpt-*.pt`` or a hub folder), ready to act; ``encoder``
    as ``eval --encoder``."""
    import pufferbox.vector
    from pufferbox.registry import get_registry
    from pufferbox.train.checkpoint import check_encoder_is_trusted, load_checkpoint
    from pufferbox.train.evaluate import checkpoint_agent, frozen_normalizer

    state = load_checkpoint(checkpoint)
    if not state.get("env"):
        raise ExportError(f"{checkpoint}: the checkpoint names no env; export needs a checkpoint pufferbox wrote")
    spec = get_registry().get_trained(str(state["env"]), state.get("distribution"))
    config = RunConfig.from_toml(state["config"])
    check_encoder_is_trusted(config.policy.encoder, str(checkpoint), explicit=encoder)
    venv = pufferbox.vector.make(spec, backend="serial", num_envs=1, env_kwargs=dict(config.env), native=config.vec.native)
    try:
        agent = checkpoint_agent(spec, venv, config, state, str(checkpoint))
        norm = frozen_normalizer(venv, config.train, state)
        policies = policies_of(agent, venv)
        row_spec, row_action, per_env = venv.obs_spec, venv.act_spec, venv.num_agents
    finally:
        venv.close()
    return LoadedRun(spec, config, state, str(checkpoint), row_spec, row_action, policies, norm, per_env, encoder)


def policies_of(agent: Any, venv: Any) -> list[RunPolicy]:
    """One :class:`RunPolicy` per group of a grouped agent (on its own spaces), else the one policy."""
    from pufferbox.train.groups import group_specs

    if not hasattr(agent, "groups"):
        return [RunPolicy("policy", agent, venv.obs_spec, venv.act_spec, None)]
    layout = agent.layout
    return [
        RunPolicy(name, sub, *group_specs(layout, name, venv), [int(s) for s in layout.slots(name)])
        for name, sub in agent.agents.items()
    ]


def held_specs(module: nn.Module) -> Iterator[ObservationSpec]:
    """Every :class:`ObservationSpec` the module's submodules keep (the encoder's, the action mask's)."""
    seen: set[int] = set()
    owners: list[Any] = [*module.modules(), getattr(module, "mask", None)]
    for owner in owners:
        for value in vars(owner).values() if owner is not None else ():
            if isinstance(value, ObservationSpec) and id(value) not in seen:
                seen.add(id(value))
                yield value


def reader(spec: ObservationSpec, byte_norm: dict[int, tuple[torch.Tensor, torch.Tensor, float]]) -> Any:
    """``unflatten_torch`` for ``spec`` without bitcasts: byte rows decoded leaf by leaf (normalizing the
    float leaves listed in ``byte_norm`` by their byte offset), other rows cut by element offsets."""

    def unflatten(flat: torch.Tensor) -> Any:
        lead, values = flat.shape[:-1], []
        decode = flat.dtype == torch.uint8 and any(leaf.dtype != np.uint8 for leaf in spec.leaves)
        for leaf in spec.leaves:
            if decode:
                value = decode_leaf(flat, leaf.offset, leaf.dtype, leaf.shape)
                if leaf.offset in byte_norm:
                    mean, std, clip = byte_norm[leaf.offset]
                    value = ((value.double() - mean) / std).clamp(-clip, clip).to(value.dtype)
            else:
                start, count = leaf.offset // flat.element_size(), int(np.prod(leaf.shape, dtype=np.int64))
                value = flat.narrow(-1, start, count).reshape(*lead, *leaf.shape)
            values.append(value)
        return spec.assemble(values)

    return unflatten


@contextlib.contextmanager
def reading_rows(agent: nn.Module, byte_norm: dict | None = None) -> Iterator[None]:
    """While inside: the agent's specs read rows with :func:`reader` (what the exporters trace)."""
    specs = list(held_specs(agent))
    for spec in specs:
        spec.unflatten_torch = reader(spec, byte_norm or {})  # type: ignore[method-assign]
    try:
        yield
    finally:
        for spec in specs:
            vars(spec).pop("unflatten_torch", None)


def head_sizes(actor: Any) -> tuple[int, int]:
    """``(discrete logits, continuous values)`` of an action head."""
    if hasattr(actor, "values"):  # heads with a discrete and a continuous part (hybrid actions)
        return sum(actor.sizes), int(actor.values)
    return (0, int(actor.sizes[0])) if actor.kind == "box" else (sum(actor.sizes), 0)


def policy_outputs(agent: Any, obs: torch.Tensor, state: Any) -> tuple[torch.Tensor, ...]:
    """``(logits, value[, h, c])`` for discrete actions, ``(mean, std, value[, h, c])`` for Box actions
    (a head with both parts: ``(logits, mean, std, value[, h, c])``)."""
    hidden, new_state = agent.hidden(obs, state, None)
    choices, values = head_sizes(agent.actor)
    out = agent.actor.logits(hidden, agent.legal(obs) if choices else None)
    heads: tuple[torch.Tensor, ...] = (out[..., :choices],) if choices else ()
    if values:
        mean = out[..., choices:]
        heads += (mean, agent.actor.logstd.exp().expand_as(mean))
    heads += (agent.critic(hidden).squeeze(-1),)
    return heads if new_state is None else (*heads, *new_state)


class ActingPolicy(nn.Module):
    """The graph a user runs: raw flat rows (and the LSTM state) in, :func:`policy_outputs` out."""

    def __init__(self, run: LoadedRun, policy: RunPolicy):
        super().__init__()
        self.agent = policy.agent
        row_norm, self.byte_norm = normalization(run)
        self.normalize_rows, self.clip = row_norm is not None, 0.0
        if row_norm is not None:
            self.register_buffer("row_mean", row_norm[0])
            self.register_buffer("row_std", row_norm[1])
            self.clip = row_norm[2]

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.outputs(obs, None)

    def outputs(self, obs: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None) -> tuple[torch.Tensor, ...]:
        if self.normalize_rows:  # as the collector's frozen normalizer: float64 statistics, clipped
            mean, std = cast(torch.Tensor, self.row_mean), cast(torch.Tensor, self.row_std)
            obs = ((obs.double() - mean) / std).clamp(-self.clip, self.clip).to(obs.dtype)
        with reading_rows(self.agent, self.byte_norm):
            return policy_outputs(self.agent, obs, state)


class RecurrentActingPolicy(ActingPolicy):
    """:class:`ActingPolicy` of an LSTM policy: the state is an explicit input and output."""

    def forward(self, obs: torch.Tensor, lstm_h: torch.Tensor, lstm_c: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[override]
        return self.outputs(obs, (lstm_h, lstm_c))


def acting_policy(run: LoadedRun, policy: RunPolicy) -> ActingPolicy:
    """The module to export for ``policy``, in eval mode."""
    cls = RecurrentActingPolicy if getattr(policy.agent, "lstm_size", 0) else ActingPolicy
    return cls(run, policy).eval()


def normalization(run: LoadedRun) -> tuple[Any, dict]:
    """The frozen observation statistics as graph constants: per element of a float row, or per float leaf
    (by byte offset) of a byte row."""
    obs_norm = None if run.normalizer is None else run.normalizer.obs
    if obs_norm is None or not obs_norm.floats:
        return None, {}
    leaves = run.row_spec.leaves
    stats = {i: (obs_norm.stats[i].mean, np.sqrt(obs_norm.stats[i].var + obs_norm.epsilon)) for i in obs_norm.floats}
    if run.row_spec.flat_dtype != np.uint8:  # one float dtype: every element belongs to a float leaf
        mean, std = np.zeros(run.row_spec.flat_size), np.ones(run.row_spec.flat_size)
        for i, (m, s) in stats.items():
            start, count = leaves[i].offset // run.row_spec.flat_dtype.itemsize, int(np.prod(leaves[i].shape))
            mean[start : start + count], std[start : start + count] = m.ravel(), s.ravel()
        return (torch.from_numpy(mean), torch.from_numpy(std), float(obs_norm.clip)), {}
    byte_norm = {
        leaves[i].offset: (torch.from_numpy(np.asarray(m)), torch.from_numpy(np.asarray(s)), float(obs_norm.clip))
        for i, (m, s) in stats.items()
    }
    return None, byte_norm


def reference_outputs(run: LoadedRun, policy: RunPolicy, rows: np.ndarray, state: Any) -> list[np.ndarray]:
    """What the unmodified PyTorch policy computes on raw ``rows`` (normalized by the run's own normalizer)."""
    obs = rows if run.normalizer is None else run.normalizer.observe(rows, update=False)
    with torch.no_grad():
        outs = policy_outputs(policy.agent, torch.from_numpy(np.ascontiguousarray(obs)), state)
    return [o.numpy() for o in outs]
