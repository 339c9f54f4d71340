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
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "GroupError",
    "GroupLayout",
    "action_limits",
    "agent_spaces",
    "checkpoint_layout",
    "resolve_layout",
    "winner",
]


class GroupError(ValueError):
    """A group map that does not cover the agents exactly once, or mixes agent spaces (one line, exit 2)."""


@dataclass
class GroupLayout:
    """Which group each agent slot belongs to. ``names[slot_group[s]]`` is slot ``s``'s group."""

    names: list[str]
    slot_group: np.ndarray  # (agents_per_env,) int
    agents: list[str]  # agent id per slot
    action_limits: dict | None = None  # {group: n}: its Discrete actions past n are illegal (padded layout)

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
    ``EnvSpec.groups``; None (one shared policy) without either. Raises :class:`GroupError` for a bad map."""
    declared = spec.training.groups
    if not user_groups and declared is None:
        return None
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
        layout.action_limits = action_limits(raw, layout)
        for name in layout.names:
            slots = layout.slots(name)
            first = agent_spaces(raw, raw.possible_agents[slots[0]])
            for s in slots[1:]:
                if agent_spaces(raw, raw.possible_agents[s]) != first:
                    raise GroupError(
                        f"[groups]: agent {agents[s]!r} has other spaces than {agents[slots[0]]!r} "
                        f"in group {name!r}; put agents with different spaces in separate groups"
                    )
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
        layout.action_limits = action_limits(raw, layout)
    finally:
        raw.close()
    return layout


def action_limits(raw: Any, layout: GroupLayout) -> dict[str, int]:
    """Groups whose own ``Discrete(n)`` was padded to a larger shared one (e.g. MPE speaker 3 of 5)."""
    from gymnasium import spaces

    out = {}
    for name in layout.names:
        agent = raw.possible_agents[layout.slots(name)[0]]
        own, shared = agent_spaces(raw, agent)[1], raw.action_space(agent)
        if isinstance(own, spaces.Discrete) and isinstance(shared, spaces.Discrete) and own.n < shared.n:
            out[name] = int(own.n)
    return out


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
