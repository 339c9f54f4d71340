"""Agent group maps: which agent slots of a multi-agent env form which named group.

The layout part of :mod:`pufferbox.train.groups`, below the trainer so that the conformance suite
can check a plugin's declared groups (``EnvSpec.groups``) too.

Example:
    >>> layout = GroupLayout.build({"tagger": [0], "runner": [1, 2]}, ["a0", "a1", "a2"])
    >>> layout.names, layout.slot_group.tolist()
    (['tagger', 'runner'], [0, 1, 1])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pufferbox.errors import PufferboxError

__all__ = [
    "GroupError",
    "GroupLayout",
    "agent_spaces",
    "checkpoint_layout",
    "resolve_layout",
    "winner",
]


class GroupError(PufferboxError, ValueError):
    """A group map that does not cover the agents exactly once, or mixes agent spaces (one line, exit 2)."""


@dataclass
class GroupLayout:
    """Which group each agent slot belongs to. ``names[slot_group[s]]`` is slot ``s``'s group."""

    names: list[str]
    slot_group: np.ndarray  # (agents_per_env,) int
    agents: list[str]  # agent id per slot
    # {group: (observation space, action space)}: the group's own spaces (before any padding to a shared row)
    spaces: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def single(self) -> bool:
        return len(self.names) == 1

    def slots(self, name: str) -> list[int]:
        return np.nonzero(self.slot_group == self.names.index(name))[0].tolist()

    @classmethod
    def build(cls, mapping: Mapping[str, Any], agents: list[str], source: str = "[groups]") -> GroupLayout:
        """Check ``mapping`` (``{group: [slot index or agent id]}``) covers every slot exactly once."""
        owner = np.full(len(agents), -1, dtype=np.int64)
        names = list(mapping)
        for g, (name, members) in enumerate(mapping.items()):
            if not isinstance(members, (list, tuple, range)) or not members:
                raise GroupError(
                    f"{source}: group {name!r} must list agent slots or ids, got {members!r}; e.g. {name} = [0, 1]"
                )
            for member in members:
                slot = slot_of(member, agents, name, source)
                if owner[slot] >= 0:
                    raise GroupError(
                        f"{source}: agent {agents[slot]!r} (slot {slot}) is in groups "
                        f"{names[owner[slot]]!r} and {name!r}; put every agent in exactly one group"
                    )
                owner[slot] = g
        missing = [agents[s] for s in np.nonzero(owner < 0)[0]]
        if missing:
            raise GroupError(
                f"{source}: agent {missing[0]!r} is in no group; add its slot "
                f"({agents.index(missing[0])}) or id to one of {names}"
            )
        return cls(names, owner, list(agents))


def slot_of(member: Any, agents: list[str], group: str, source: str) -> int:
    if isinstance(member, bool) or not isinstance(member, (int, np.integer, str)):
        raise GroupError(f"{source}: group {group!r} lists {member!r}; use slot indices or agent ids")
    if isinstance(member, str):
        if member not in agents:
            raise GroupError(f"{source}: group {group!r} names unknown agent {member!r}; agents are {agents}")
        return agents.index(member)
    if not 0 <= int(member) < len(agents):
        raise GroupError(
            f"{source}: group {group!r} names slot {member}, but there are {len(agents)} agent "
            f"slots (0..{len(agents) - 1}: {agents})"
        )
    return int(member)


def agent_spaces(raw: Any, agent: str) -> tuple[Any, Any]:
    """The agent's own spaces; a padding wrapper tells its originals (``original_observation_space``)."""
    obs = getattr(raw, "original_observation_space", raw.observation_space)
    act = getattr(raw, "original_action_space", raw.action_space)
    return obs(agent), act(agent)


def resolve_layout(spec: Any, env_kwargs: Mapping[str, Any], user_groups: Mapping[str, Any] | None) -> GroupLayout | None:
    """The group layout of ``spec`` built with ``env_kwargs``: the user's ``[groups]``, else the plugin's
    ``EnvSpec.groups``, else one group per distinct pair of agent spaces when the agents' spaces differ
    (:func:`spaces_layout`); None (one shared policy) otherwise. Raises :class:`GroupError` for a bad map."""
    declared = spec.training.groups
    if not user_groups and declared is None:
        return spaces_layout(spec, env_kwargs)
    raw = spec.make_raw(**env_kwargs)
    try:
        if not hasattr(raw, "possible_agents"):
            raise GroupError(
                f"[groups]: {spec.name} is a single-agent env; agent groups need a multi-agent "
                "(PettingZoo) env: drop the [groups] table"
            )
        agents = [str(a) for a in raw.possible_agents]
        if user_groups:
            layout = GroupLayout.build(user_groups, agents, "[groups]")
        else:
            assert declared is not None  # returned above when neither the user nor the plugin groups
            mapping: Mapping[str, Any] = declared(raw) if callable(declared) else declared
            layout = GroupLayout.build(mapping, agents, f"{spec.name} (plugin groups)")
        fill_spaces(raw, layout)
    finally:
        raw.close()
    return layout


def fill_spaces(raw: Any, layout: GroupLayout) -> None:
    """Record each group's own spaces; refuse a group whose agents' spaces differ."""
    for name in layout.names:
        slots = layout.slots(name)
        first = agent_spaces(raw, raw.possible_agents[slots[0]])
        for s in slots[1:]:
            if agent_spaces(raw, raw.possible_agents[s]) != first:
                raise GroupError(
                    f"[groups]: agent {layout.agents[s]!r} has other spaces than {layout.agents[slots[0]]!r} "
                    f"in group {name!r}; put agents with different spaces in separate groups"
                )
        layout.spaces[name] = first


def spaces_layout(spec: Any, env_kwargs: Mapping[str, Any]) -> GroupLayout | None:
    """One group per distinct pair of agent spaces (named by the first such agent's id prefix:
    ``speaker_0`` -> ``speaker``) for an env whose agents' spaces differ, else None. Envs with a native
    block (one row layout by construction) or without a Python binding are never split."""
    if spec.build.native is not None or spec.build.binding is None:
        return None
    specs = spec.agent_specs(**env_kwargs)
    if specs is None or len({(repr(o.space), repr(a.space)) for o, a in specs}) < 2:
        return None
    raw = spec.make_raw(**env_kwargs)
    try:
        agents = [str(a) for a in raw.possible_agents]
        by_spaces: dict[str, list[str]] = {}
        for agent in agents:
            by_spaces.setdefault(repr(agent_spaces(raw, agent)), []).append(agent)
        mapping: dict[str, list[str]] = {}
        for members in by_spaces.values():
            name = members[0].rsplit("_", 1)[0]
            mapping[name if name not in mapping else f"{name}{len(mapping)}"] = members
        layout = GroupLayout.build(mapping, agents, f"{spec.name} (one group per agent spaces)")
        fill_spaces(raw, layout)
    finally:
        raw.close()
    return layout


def checkpoint_layout(
    spec: Any, env_kwargs: Mapping[str, Any], state: Mapping[str, Any], source: str = "checkpoint"
) -> GroupLayout:
    """The group layout a grouped checkpoint was trained with (its ``groups[name]["slots"]``)."""
    raw = spec.make_raw(**env_kwargs)
    try:
        agents = [str(a) for a in raw.possible_agents]
        layout = GroupLayout.build({n: g["slots"].tolist() for n, g in state["groups"].items()}, agents, source)
        fill_spaces(raw, layout)
    finally:
        raw.close()
    return layout


def winner(returns: Mapping[str, float], rule: Any = None, env_kwargs: Mapping[str, Any] | None = None) -> str | None:
    """The group that won an episode, None for a draw: the env's ``rule(returns, env_kwargs)``
    (``EnvSpec.outcome``) when it declares one, else the one group with the highest mean return.

    Example:
        >>> winner({"tagger": 1.0, "runner": -0.25})
        'tagger'
        >>> winner({"a": 0.0, "b": 0.0}) is None
        True
    """
    if rule is not None:
        won = rule(dict(returns), dict(env_kwargs or {}))
        if won is not None and won not in returns:
            raise GroupError(f"outcome rule named {won!r}, not a group ({', '.join(returns)})")
        return won
    best = max(returns.values())
    top = [g for g, v in returns.items() if v == best]
    return top[0] if len(top) == 1 else None
