"""Give every agent of a PettingZoo ``ParallelEnv`` one observation space, for fixed agent slots.

pufferbox lays out one flat row per agent, so all agents must share a layout. MPE's
adversarial scenarios give each role its own observation length (e.g. simple_tag: 16 for
adversaries, 14 for the good agents). :class:`PadObservations` zero-pads every 1-D Box
observation to the longest one and appends a one-hot of the agent's role (agents with the
same original space share a role), so a shared policy still knows whose row it reads.
Discrete action spaces that differ (``simple_speaker_listener``: 3 vs 5, ``simple_world_comm``:
20 vs 5) are padded to the largest ``Discrete(n)``; an agent's actions past its own ``n`` are
illegal: pufferbox's agent groups mask them out of the policy's logits (one group per role), and
the wrapper turns any that still arrive into action 0 (no-op). ``original_observation_space`` and
``original_action_space`` tell the agent's own spaces.

Example:
    >>> from mpe2 import simple_tag_v3                            # doctest: +SKIP
    >>> env = PadObservations(simple_tag_v3.parallel_env())     # doctest: +SKIP
    >>> env.observation_space("agent_0").shape                  # doctest: +SKIP
    (18,)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces


class PadObservations:
    """A ``ParallelEnv`` wrapper: 1-D Box observations padded to one length, plus a role one-hot."""

    def __init__(self, env: Any):
        self.env = env
        self.possible_agents = list(env.possible_agents)
        originals = {agent: env.observation_space(agent) for agent in self.possible_agents}
        for agent, space in originals.items():
            if not (isinstance(space, spaces.Box) and len(space.shape) == 1):
                raise ValueError(f"PadObservations pads 1-D Box observations; agent {agent!r} has {space}")
        actions = {agent: env.action_space(agent) for agent in self.possible_agents}
        self.action_n: dict = {}
        if len({str(a) for a in actions.values()}) > 1:
            if not all(isinstance(a, spaces.Discrete) and a.start == 0 for a in actions.values()):
                raise ValueError(
                    f"agents have different action spaces ({', '.join(sorted(map(str, actions.values())))})"
                    "; only Discrete ones can be padded to share fixed agent slots"
                )
            self.action_n = {agent: int(a.n) for agent, a in actions.items()}
        self.action = spaces.Discrete(max(self.action_n.values())) if self.action_n else None
        roles = []
        for space in originals.values():
            if space not in roles:
                roles.append(space)
        self.width = max(space.shape[0] for space in roles)
        self.num_roles = len(roles) if len(roles) > 1 else 0
        self.offsets = {agent: space.shape[0] for agent, space in originals.items()}
        self.role = {agent: roles.index(space) for agent, space in originals.items()}
        low = np.zeros(self.width + self.num_roles, np.float32)
        high = np.ones(self.width + self.num_roles, np.float32)
        for space in roles:
            n = space.shape[0]
            low[:n] = np.minimum(low[:n], space.low)
            high[:n] = np.maximum(high[:n], space.high)
        self.space = spaces.Box(low, high, dtype=np.float32)
        self.metadata = getattr(env, "metadata", {})
        self.render_mode = getattr(env, "render_mode", None)

    @property
    def agents(self) -> list:
        return self.env.agents

    def observation_space(self, agent: Any) -> spaces.Box:
        return self.space

    def action_space(self, agent: Any) -> spaces.Space:
        return self.action if self.action is not None else self.env.action_space(agent)

    def original_action_space(self, agent: Any) -> spaces.Space:
        """The agent's own action space before padding."""
        return self.env.action_space(agent)

    def original_observation_space(self, agent: Any) -> spaces.Space:
        """The agent's own space before padding (agent groups must not mix them)."""
        return self.env.observation_space(agent)

    def pad(self, observations: dict) -> dict:
        out = {}
        for agent, obs in observations.items():
            row = np.zeros(self.width + self.num_roles, np.float32)
            row[: self.offsets[agent]] = obs
            if self.num_roles:
                row[self.width + self.role[agent]] = 1.0
            out[agent] = row
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return self.pad(observations), infos

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.action_n:  # padded actions past an agent's own range: no-op
            actions = {a: act if int(act) < self.action_n[a] else 0 for a, act in actions.items()}
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return self.pad(observations), rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        return self.env.state()

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped
