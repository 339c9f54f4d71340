"""Emulation: Gymnasium and PettingZoo envs behind one flat, fixed-slot interface.

Each emulator wraps one raw env and offers two faces:

* the ordinary API of its kind, with flat spaces (``GymnasiumEmulator`` is a
  ``gymnasium.Env``; ``PettingZooEmulator`` a PettingZoo ``ParallelEnv``), for notebooks
  and conformance tests; observations returned there are copies;
* the backend API, :meth:`vec_reset` / :meth:`vec_step`, which writes observations,
  rewards, terminals, truncations and masks straight into :class:`~pufferbox.buffers.Buffers`
  rows that a vector backend owns, and auto-resets finished episodes in the same step
  (Gymnasium's ``SAME_STEP`` autoreset: the row holds the next episode's first
  observation while ``terminals``/``truncations`` describe the step that ended).

Multi-agent envs get one row per agent of ``possible_agents``, in that order. An agent
absent from an observation has a zero row, reward 0, terminal ``True`` and mask ``False``.

Spaces are checked on the first reset and the first step only; an error names the field.
``vec_step`` returns the episode that ended as an :class:`~pufferbox.episodes.Episodes`
(return, length, and the values of the final ``info`` named by ``episode_metrics``); other
infos are dropped, since per-step infos would cost an IPC message per step.

Rows: a backend hands the emulator its rows with ``set_buffers`` before the first reset; an
emulator used on its own (notebooks, the Gymnasium/PettingZoo API) allocates its own on reset.

Zero-copy observations (single-agent): a raw env whose outermost object has a method
``pufferbox_bind_observation_buffers(views)`` (:data:`BIND_OBSERVATION_BUFFERS`) is handed,
on every :meth:`GymnasiumEmulator.set_buffers`, ``views``: ``{leaf path: array}``, one
writable C-contiguous array per observation leaf (shape and dtype of the leaf) into the
emulator's row. An env that writes a leaf in place there and returns that very array
(``obs[key] is views[(key,)]``) skips the copy; any other value is copied as usual, so
binding some leaves, none, or stopping later is always correct. The views change when the
backend re-points the emulator, hence one call per ``set_buffers``. Example: the NetHack
plugin re-points nle's observation buffers (``pufferbox_nethack.env``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import gymnasium
import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.episodes import NO_EPISODES, Episodes
from pufferbox.errors import PufferboxError
from pufferbox.spaces import (
    ACTION_MASK_KEY,
    ActionSpec,
    InRow,
    ObservationSpec,
    SpaceError,
    format_path,
    get_path,
    row_action_spec,
    row_observation_spec,
)

__all__ = [
    "AECEmulator",
    "APIUsageError",
    "BIND_OBSERVATION_BUFFERS",
    "GymnasiumEmulator",
    "PettingZooEmulator",
    "InfoActionMask",
    "emulate",
    "is_aec",
]

BIND_OBSERVATION_BUFFERS = "pufferbox_bind_observation_buffers"


class APIUsageError(PufferboxError, RuntimeError):
    """The caller used an emulator out of order (step before reset, ...)."""


def seeded_reset(env: Any, seed: int | None) -> tuple[Any, Any]:
    return env.reset(seed=seed) if seed is not None else env.reset()


class GymnasiumEmulator(gymnasium.Env):
    """A single-agent Gymnasium env with a flat observation row and a flat action.

    Example:
        >>> import gymnasium
        >>> env = GymnasiumEmulator(gymnasium.make("CartPole-v1"))
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, env.single_action_space
        ((4,), Discrete(2))
    """

    num_envs = 1
    num_agents = 1
    is_multiagent = False
    writes_final_observations = True  # a truncated episode's last obs goes to Buffers.final_observations
    buffers: Buffers  # the backend's row (set_buffers); standalone use owns one (own_rows)

    def __init__(
        self,
        env: gymnasium.Env,
        obs_spec: ObservationSpec | None = None,
        act_spec: ActionSpec | None = None,
        name: str = "env",
        episode_metrics: tuple[str, ...] = (),
        check_obs: bool = False,
        action_mask: str = ACTION_MASK_KEY,
    ):
        self.env = env
        self.name = name
        self.episode_metrics = tuple(episode_metrics)
        self.check_obs = check_obs  # every observation against its space's bounds, and finite (slow)
        self.obs_spec = obs_spec or ObservationSpec(env.observation_space, action_mask=action_mask)
        self.act_spec = act_spec or ActionSpec(env.action_space)
        fit_mask(self.obs_spec, self.act_spec)
        self.single_observation_space = self.observation_space = self.obs_spec.flat_space
        self.single_action_space = self.action_space = self.act_spec.flat_space
        self.metadata = dict(getattr(env, "metadata", {}) or {})
        self.render_mode = getattr(env, "render_mode", None)
        self.obs_checked = self.act_checked = False
        self.needs_reset = True
        self.episode_return = 0.0
        self.episode_length = 0

    # -- backend API ------------------------------------------------------------------
    def set_buffers(self, buffers: Buffers) -> None:
        """Write into ``buffers`` (one row) from now on; called by backends before reset."""
        if len(buffers) != 1:
            raise ValueError(f"{self.name}: a single-agent env needs 1 buffer row, got {len(buffers)}")
        self.buffers = buffers
        self.obs_views = self.obs_spec.leaf_views(buffers.observations)
        # Per-step writes are the emulator's whole overhead on fast envs: precompute one plain
        # ndarray view per leaf of row 0 (``target[...] = value`` beats structured-field
        # indexing and np.copyto by ~2x) and, for Dict/Tuple of leaves, index with one key.
        self.obs_targets = [
            (leaf.path, view[0:1].reshape(leaf.shape)) for leaf, view in zip(self.obs_spec.leaves, self.obs_views)
        ]
        self.obs_depth = max(len(path) for path, _ in self.obs_targets)
        self.obs_keyed = [
            (path[0] if path else None, target, target.shape, target.dtype) for path, target in self.obs_targets
        ]
        # Looked up on the outermost env only: the layer that offers it vouches that what it
        # returns is what it bound (an inner env's arrays may be transformed on the way out).
        bind = getattr(self.env, BIND_OBSERVATION_BUFFERS, None)
        if bind is not None:
            bind(dict(self.obs_targets))
        space = self.act_spec.space
        self.action_offset = int(space.start) if isinstance(space, gymnasium.spaces.Discrete) else None

    def write_observation(self, obs: Any) -> None:
        if not self.obs_checked or self.check_obs:
            check_observation(self.obs_spec, obs, self.name, self.episode_length, self.check_obs)
            self.obs_checked = True
        # ``value is target``: a bound env (BIND_OBSERVATION_BUFFERS) already wrote it in place.
        # Every other leaf must be an ndarray of the leaf's shape and dtype (three cheap compares);
        # anything else (a scalar, a castable dtype, a wrong shape, None) takes check_leaf's slow path,
        # so a (1,) value is never broadcast into a (4,) leaf nor None written as NaN.
        if self.obs_depth == 1:
            for key, target, shape, dtype in self.obs_keyed:
                value = obs[key]
                if value is not target:
                    if type(value) is not np.ndarray or value.shape != shape or value.dtype is not dtype:
                        self.check_leaf(value, target, (key,))
                    target[...] = value
        elif self.obs_depth == 0:
            _, target, shape, dtype = self.obs_keyed[0]
            if obs is not target:
                if type(obs) is not np.ndarray or obs.shape != shape or obs.dtype is not dtype:
                    self.check_leaf(obs, target, ())
                target[...] = obs
        else:
            for path, target in self.obs_targets:
                value = obs
                for key in path:
                    value = value[key]
                if value is not target:
                    self.check_leaf(value, target, path)
                    target[...] = value

    def check_leaf(self, value: Any, target: np.ndarray, path: tuple) -> None:
        check_leaf(value, target, self.obs_spec, path, self.name, self.episode_length)

    def own_rows(self) -> None:
        own_rows(self)

    def vec_reset(self, seed: int | None = None) -> Episodes:
        self.own_rows()
        obs, _info = seeded_reset(self.env, seed)
        self.write_observation(obs)
        b = self.buffers
        b.rewards[0] = 0.0
        b.terminals[0] = b.truncations[0] = False
        b.masks[0] = True
        self.needs_reset = False
        self.episode_return, self.episode_length = 0.0, 0
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        """Step with ``actions[0]`` (the backend's action row); auto-reset when done."""
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        if not self.act_checked:
            check_action(self.act_spec, actions[0], self.name)
            self.act_checked = True
        if self.action_offset is not None:  # Discrete: skip unflatten's generic path
            action = actions.item(0) + self.action_offset
        else:
            action = self.act_spec.unflatten(actions[0])
        obs, reward, terminated, truncated, info = self.env.step(action)
        b = self.buffers
        b.rewards[0] = reward
        b.terminals[0] = terminated
        b.truncations[0] = truncated
        self.episode_return += float(reward)
        self.episode_length += 1
        if terminated or truncated:
            episode = Episodes.one(
                0, self.episode_return, self.episode_length, {name: metric(info, name) for name in self.episode_metrics}
            )
            self.episode_return, self.episode_length = 0.0, 0
            if truncated and not terminated:  # the learner bootstraps from it: keep it past the reset
                self.write_observation(obs)
                b.final_observations[0] = b.observations[0]
            obs, _ = self.env.reset()
            self.write_observation(obs)
            return episode
        self.write_observation(obs)
        return NO_EPISODES

    # -- Gymnasium API ----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)  # seeds self.np_random, as Gymnasium's checker expects of any Env
        self.own_rows()
        obs, info = self.env.reset(seed=seed, options=options)
        self.write_observation(obs)
        self.needs_reset = False
        return self.buffers.observations[0].copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        action = np.asarray(action, dtype=self.act_spec.dtype).reshape(self.act_spec.shape)
        if not self.act_checked:
            check_action(self.act_spec, action, self.name)
            self.act_checked = True
        obs, reward, terminated, truncated, info = self.env.step(self.act_spec.unflatten(action))
        self.write_observation(obs)
        if terminated or truncated:
            self.needs_reset = True
        return self.buffers.observations[0].copy(), float(reward), bool(terminated), bool(truncated), info

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class PettingZooEmulator:
    """A PettingZoo ``ParallelEnv`` with fixed agent slots and flat per-agent rows.

    Rows follow ``possible_agents`` and have one width. Agents with their own spaces (roles such as
    MPE's speaker and listener) each write their own record at the start of their row
    (:class:`~pufferbox.spaces.InRow`, zero padded) and read their action with their own spec;
    ``agent_specs[slot]`` holds each slot's ``(ObservationSpec, ActionSpec)``, and agent groups give
    each role its own policy on them (:mod:`pufferbox.group_layout`).
    """

    num_envs = 1
    is_multiagent = True
    writes_final_observations = True
    buffers: Buffers  # the backend's rows (set_buffers); standalone use owns some (own_rows)

    def __init__(
        self,
        env: Any,
        obs_spec: ObservationSpec | None = None,
        act_spec: ActionSpec | None = None,
        name: str = "env",
        episode_metrics: tuple[str, ...] = (),
        check_obs: bool = False,
        action_mask: str = ACTION_MASK_KEY,
    ):
        self.env = env
        self.name = name
        self.episode_metrics = tuple(episode_metrics)
        self.check_obs = check_obs
        self.possible_agents = list(env.possible_agents)
        self.num_agents = len(self.possible_agents)
        own = agent_specs(env, self.possible_agents, name, obs_spec, act_spec, action_mask)
        self.obs_spec = row_observation_spec([o for o, _ in own], f"{name} observation")
        self.act_spec = row_action_spec([a for _, a in own], f"{name} action")
        self.agent_specs = [
            (o if o.space == self.obs_spec.space else fit_mask(InRow(o.space, self.obs_spec, o.name, action_mask), a), a)
            for o, a in own
        ]
        self.single_observation_space = self.obs_spec.flat_space
        self.single_action_space = self.act_spec.flat_space
        self.metadata = dict(getattr(env, "metadata", {}) or {})
        self.render_mode = getattr(env, "render_mode", None)
        self.slot = {agent: i for i, agent in enumerate(self.possible_agents)}
        self.obs_checked = self.act_checked = False
        self.needs_reset = True
        self.agents: list = []
        self.episode_returns = np.zeros(self.num_agents, dtype=np.float64)
        self.episode_length = 0

    def observation_space(self, agent: Any) -> gymnasium.Space:
        return self.single_observation_space

    def action_space(self, agent: Any) -> gymnasium.Space:
        """The agent's own flat action space (its range where roles act differently)."""
        return self.agent_specs[self.slot[agent]][1].flat_space if agent in self.slot else self.single_action_space

    # -- backend API ------------------------------------------------------------------
    def set_buffers(self, buffers: Buffers) -> None:
        if len(buffers) != self.num_agents:
            raise ValueError(f"{self.name}: needs {self.num_agents} buffer rows (one per agent), got {len(buffers)}")
        self.buffers = buffers
        shared = self.obs_spec.leaf_views(buffers.observations)
        self.obs_views = [shared if o is self.obs_spec else o.leaf_views(buffers.observations) for o, _ in self.agent_specs]

    def write_observations(self, observations: dict) -> None:
        b = self.buffers
        b.observations[:] = 0
        b.masks[:] = False
        for agent, obs in observations.items():
            if agent not in self.slot:
                raise SpaceError(f"{self.name}: agent {agent!r} is not in possible_agents {self.possible_agents}")
            who = f"{self.name} agent {agent!r}"
            row = self.slot[agent]
            spec = self.agent_specs[row][0]
            if not self.obs_checked or self.check_obs:
                check_observation(spec, obs, who, self.episode_length, self.check_obs)
            for leaf, view in zip(spec.leaves, self.obs_views[row]):
                value = obs
                for key in leaf.path:
                    value = value[key]
                check_leaf(value, view[row], spec, leaf.path, who, self.episode_length)
                view[row] = value
            b.masks[row] = True
        self.obs_checked = True

    def own_rows(self) -> None:
        own_rows(self)

    def vec_reset(self, seed: int | None = None) -> Episodes:
        self.own_rows()
        observations, _ = seeded_reset(self.env, seed)
        self.write_observations(observations)
        b = self.buffers
        b.rewards[:] = 0.0
        b.terminals[:] = b.truncations[:] = False
        self.agents = list(observations)
        self.needs_reset = False
        self.episode_returns[:] = 0.0
        self.episode_length = 0
        return NO_EPISODES

    def vec_step(self, actions: np.ndarray) -> Episodes:
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        specs = self.agent_specs
        if not self.act_checked:
            for agent in self.agents:
                row = self.slot[agent]
                check_action(specs[row][1], actions[row], f"{self.name} agent {agent!r}")
            self.act_checked = True
        act = {agent: specs[self.slot[agent]][1].unflatten(actions[self.slot[agent]]) for agent in self.env.agents}
        observations, rewards, terminations, truncations, infos = self.env.step(act)
        b = self.buffers
        b.rewards[:] = 0.0
        b.terminals[:] = True
        b.truncations[:] = False
        for agent, reward in rewards.items():
            row = self.slot[agent]
            b.rewards[row] = reward
            b.terminals[row] = terminations.get(agent, False)
            b.truncations[row] = truncations.get(agent, False)
        self.episode_returns += b.rewards
        self.episode_length += 1
        live = [a for a in observations if not (terminations.get(a, False) or truncations.get(a, False))]
        cut = b.truncations & ~b.terminals
        if cut.any():  # the truncated agents' last observations, kept past the reset for the learner
            self.write_observations(observations)
            b.final_observations[cut] = b.observations[cut]
        if not self.env.agents or not live:
            final = {
                name: float(np.mean([metric(info, name) for info in infos.values()])) if infos else np.nan
                for name in self.episode_metrics
            }  # per-agent values, averaged like the return
            episode = Episodes.one(0, float(self.episode_returns.mean()), self.episode_length, final)
            terminals, truncs, rews = b.terminals.copy(), b.truncations.copy(), b.rewards.copy()
            self.vec_reset()
            b.terminals[:], b.truncations[:], b.rewards[:] = terminals, truncs, rews
            return episode
        self.write_observations(observations)
        self.agents = list(observations)
        return NO_EPISODES

    # -- ParallelEnv API --------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.own_rows()
        observations, infos = self.env.reset(seed=seed, options=options)
        self.write_observations(observations)
        self.agents = list(self.env.agents)
        self.needs_reset = False
        return self.observation_dict(observations), infos

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        act = {}
        for agent, action in actions.items():
            spec = self.agent_specs[self.slot[agent]][1] if agent in self.slot else self.act_spec
            flat = np.asarray(action, dtype=spec.dtype).reshape(spec.shape)
            if not self.act_checked:
                check_action(spec, flat, f"{self.name} agent {agent!r}")
            act[agent] = spec.unflatten(flat)
        self.act_checked = True
        observations, rewards, terminations, truncations, infos = self.env.step(act)
        self.write_observations(observations)
        self.agents = list(self.env.agents)
        if not self.agents:
            self.needs_reset = True
        return self.observation_dict(observations), rewards, terminations, truncations, infos

    def observation_dict(self, observations: dict) -> dict:
        return {agent: self.buffers.observations[self.slot[agent]].copy() for agent in observations}

    def state(self) -> np.ndarray:
        return self.env.state()

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> PettingZooEmulator:
        return self


class AECEmulator(PettingZooEmulator):
    """A PettingZoo ``AECEnv`` (turn-based: one agent moves at a time) stepped turn by turn.

    Rows follow ``possible_agents`` as for parallel envs, and every live agent's row holds its current
    observation. Each :meth:`vec_step` the agent to move (``agent_selection``) acts: its row is the only
    one with ``masks`` True (the *acting* flag), the other rows' actions are ignored and the learner does
    not train on them. Rewards are PettingZoo's ``env.rewards`` after every step, summed per agent (as
    PettingZoo's own AEC-to-parallel conversion counts them), so a reward that arrives while an agent
    waits (the loser's -1) lands in that agent's own row. An agent that terminates or is truncated has
    ``terminals``/``truncations`` set on that step and is then absent (terminal, masked) until the
    episode ends, when every agent is done; its dead steps (``step(None)``) are taken here.

    The ParallelEnv face (:meth:`reset`/:meth:`step` with dicts) applies only the mover's action too.
    """

    def __init__(self, env: Any, *args: Any, **kwargs: Any):
        super().__init__(env, *args, **kwargs)
        self.reported: set = set()  # agents whose end was written to their row this episode
        # The turn state (agents, agent_selection, rewards, ...) is read where it lives: PettingZoo's
        # wrappers forward each read through every layer (most of a classic game's step time).
        self.game = turn_state_holder(env)

    def observe(self) -> dict:
        """Every live agent's observation (written to the rows); only the mover's row is acting."""
        env, game = self.env, self.game
        observations = {a: env.observe(a) for a in game.agents if a not in self.reported}
        self.write_observations(observations)
        self.buffers.masks[:] = False
        if game.agents:
            self.buffers.masks[self.slot[game.agent_selection]] = True
        return observations

    def start(self, seed: int | None) -> dict:
        self.own_rows()
        self.env.reset(seed=seed) if seed is not None else self.env.reset()
        self.reported = set()
        self.needs_reset = False
        self.episode_returns[:] = 0.0
        self.episode_length = 0
        return self.observe()

    def vec_reset(self, seed: int | None = None) -> Episodes:
        self.start(seed)
        b = self.buffers
        b.rewards[:] = 0.0
        b.terminals[:] = b.truncations[:] = False
        self.agents = list(self.env.agents)
        return NO_EPISODES

    def advance(self, action: Any) -> tuple[dict, dict, dict, dict]:
        """The mover plays ``action`` (a structured action), then the dead steps due: ``(rewards,
        terminations, truncations, infos)`` of the agents whose episode ended or went on."""
        env, game = self.env, self.game
        rewards: dict = {}
        env.step(action)
        for agent, reward in game.rewards.items():
            rewards[agent] = rewards.get(agent, 0.0) + float(reward)
        terminations, truncations, infos = dict(game.terminations), dict(game.truncations), dict(game.infos)
        for agent in game.agents:  # a truncated agent's last observation, for the learner's bootstrap
            if truncations.get(agent) and not terminations.get(agent) and agent not in self.reported:
                row = self.slot[agent]
                self.agent_specs[row][0].write(self.buffers.final_observations, row, env.observe(agent))
        while game.agents and (game.terminations[game.agent_selection] or game.truncations[game.agent_selection]):
            env.step(None)
            for agent, reward in game.rewards.items():
                rewards[agent] = rewards.get(agent, 0.0) + float(reward)
        self.agents = list(game.agents)
        return rewards, terminations, truncations, infos

    def vec_step(self, actions: np.ndarray) -> Episodes:
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        mover = self.game.agent_selection
        row = self.slot[mover]
        spec = self.agent_specs[row][1]
        if not self.act_checked:
            check_action(spec, actions[row], f"{self.name} agent {mover!r}")
            self.act_checked = True
        rewards, terminations, truncations, infos = self.advance(spec.unflatten(actions[row]))
        b = self.buffers
        b.rewards[:] = 0.0
        b.truncations[:] = False
        for agent, reward in rewards.items():
            b.rewards[self.slot[agent]] = reward
        for agent in self.possible_agents:  # absent (ended before) rows stay terminal, as for parallel envs
            r = self.slot[agent]
            ended = terminations.get(agent, False) or truncations.get(agent, False)
            b.terminals[r] = agent in self.reported or bool(terminations.get(agent, False))
            b.truncations[r] = agent not in self.reported and bool(truncations.get(agent, False)) and not b.terminals[r]
            if ended:
                self.reported.add(agent)
        self.episode_returns += b.rewards
        self.episode_length += 1
        if not self.game.agents:
            return self.end_episode(infos)
        self.observe()
        return NO_EPISODES

    def end_episode(self, infos: dict) -> Episodes:
        """Every agent is done: report the episode and start the next one in the same step (rows keep this
        step's rewards and ends)."""
        b = self.buffers
        final = {
            name: float(np.mean([metric(info, name) for info in infos.values()])) if infos else np.nan
            for name in self.episode_metrics
        }
        episode = Episodes.one(0, float(self.episode_returns.mean()), self.episode_length, final)
        terminals, truncs, rews = b.terminals.copy(), b.truncations.copy(), b.rewards.copy()
        self.vec_reset()
        b.terminals[:], b.truncations[:], b.rewards[:] = terminals, truncs, rews
        return episode

    # -- ParallelEnv face: the mover's action counts ---------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        observations = self.start(seed)
        self.agents = list(self.env.agents)
        return self.observation_dict(observations), {a: dict(self.env.infos.get(a, {})) for a in observations}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.needs_reset:
            raise APIUsageError(f"{self.name}: step() before reset()")
        mover = self.env.agent_selection
        spec = self.agent_specs[self.slot[mover]][1]
        flat = np.asarray(actions[mover], dtype=spec.dtype).reshape(spec.shape)
        if not self.act_checked:
            check_action(spec, flat, f"{self.name} agent {mover!r}")
            self.act_checked = True
        rewards, terminations, truncations, infos = self.advance(spec.unflatten(flat))
        for agent, term in terminations.items():
            if term or truncations.get(agent, False):
                self.reported.add(agent)
        observations = self.observe() if self.env.agents else {}
        if not self.env.agents:
            self.needs_reset = True
        return self.observation_dict(observations), rewards, terminations, truncations, infos


TURN_STATE = ("agents", "agent_selection", "rewards", "terminations", "truncations", "infos")


def turn_state_holder(env: Any) -> Any:
    """The object whose attributes hold ``env``'s turn state: the unwrapped env when every wrapper only
    forwards those reads (PettingZoo's own wrappers write them on the unwrapped env), else ``env``.

    A wrapper that defines one of them itself (a property reshaping rewards, say) keeps every read on ``env``."""
    layer = env
    while (inner := getattr(layer, "env", None)) is not None and layer is not getattr(layer, "unwrapped", layer):
        own = {name for cls in type(layer).__mro__ if cls.__name__ != "AECEnv" for name in vars(cls)}
        if any(name in own or name in vars(layer) for name in TURN_STATE):
            return env
        layer = inner
    return layer


def is_aec(env: Any) -> bool:
    """A PettingZoo ``AECEnv`` (or a wrapper of one): turn-based, stepped with one agent's action."""
    return hasattr(env, "agent_iter") and hasattr(env, "observe") and hasattr(env, "possible_agents")


def agent_specs(
    env: Any,
    agents: list,
    name: str,
    obs_spec: ObservationSpec | None,
    act_spec: ActionSpec | None,
    action_mask: str = ACTION_MASK_KEY,
) -> list[tuple[ObservationSpec, ActionSpec]]:
    """Each agent's own ``(ObservationSpec, ActionSpec)``, one object per distinct space; a plugin's
    declared specs when every agent shares one space. ``action_mask``: the observation key of the legal actions."""
    spaces_of = [(env.observation_space(a), env.action_space(a)) for a in agents]
    if all(s == spaces_of[0] for s in spaces_of):
        shared_act = act_spec or ActionSpec(spaces_of[0][1])
        shared = (fit_mask(obs_spec or ObservationSpec(spaces_of[0][0], action_mask=action_mask), shared_act), shared_act)
        return [shared] * len(agents)
    made: dict[str, Any] = {}
    for o, a in spaces_of:
        made.setdefault(f"a{a!r}", ActionSpec(a, f"{name} action"))
        made.setdefault(f"o{o!r}", fit_mask(ObservationSpec(o, f"{name} observation", action_mask), made[f"a{a!r}"]))
    return [(made[f"o{o!r}"], made[f"a{a!r}"]) for o, a in spaces_of]


def fit_mask(obs_spec: ObservationSpec, act_spec: ActionSpec) -> ObservationSpec:
    """``obs_spec`` after checking its action mask (if any) has one entry per choice of ``act_spec``."""
    if obs_spec.mask is not None:
        obs_spec.mask.fit(act_spec)
    return obs_spec


def own_rows(emulator: GymnasiumEmulator | PettingZooEmulator) -> None:
    """Rows of its own, for use without a backend (notebooks, tests); a backend's come by set_buffers."""
    if "buffers" not in emulator.__dict__:
        emulator.set_buffers(Buffers.allocate(emulator.obs_spec, emulator.act_spec, emulator.num_agents))


def check_action(spec: ActionSpec, action: np.ndarray, who: str) -> None:
    space = spec.flat_space
    if not space.contains(np.asarray(action, dtype=space.dtype).reshape(space.shape or ())):
        raise SpaceError(
            f"{who}: action {np.asarray(action).tolist()} is outside the flat action space "
            f"{spec.flat_space} (the env's own space is {spec.space})"
        )


def check_leaf(value: Any, target: np.ndarray, spec: ObservationSpec, path: tuple, who: str, step: int) -> None:
    """Refuse a leaf value that assignment would broadcast or coerce: wrong shape, None, a dtype the
    leaf cannot hold safely. Cheap for ndarrays; called per leaf per step."""
    if type(value) is np.ndarray and value.shape == target.shape and value.dtype is target.dtype:
        return
    problem = None
    if value is None:
        problem = "is None"
    else:
        shape = np.shape(value)
        arr = value if type(value) is np.ndarray else np.asarray(value)
        if shape != target.shape:
            problem = f"has shape {shape}"
        elif arr.dtype != target.dtype and not np.can_cast(arr.dtype, target.dtype, "same_kind"):
            problem = f"has dtype {arr.dtype}"
    if problem is not None:
        raise SpaceError(
            f"{who}: observation at episode step {step}: {format_path(spec.name, path)} {problem}, "
            f"the space says shape {target.shape}, dtype {target.dtype}; the env must return "
            f"observations of its declared space every step"
        )


def check_observation(spec: ObservationSpec, obs: Any, who: str, step: int, full: bool) -> None:
    """The space check (first observation, or every one with ``check_obs``): bounds, and with
    ``full`` also finiteness of float leaves; the error names the env, the step and the field."""
    try:
        spec.check(obs)
    except SpaceError as exc:
        raise SpaceError(f"{who}: observation at episode step {step}: {exc}") from None
    if full:
        for leaf in spec.leaves:
            arr = np.asarray(get_path(obs, leaf.path))
            if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
                raise SpaceError(
                    f"{who}: observation at episode step {step}: {format_path(spec.name, leaf.path)} "
                    f"is not finite ({arr.tolist() if arr.size <= 8 else 'NaN/inf among values'})"
                )


def metric(info: Any, name: str) -> float:
    """``info[name]`` as a float, NaN when the env did not report it (or it is not a number)."""
    try:
        return float(info[name])
    except (KeyError, TypeError, ValueError):
        return float("nan")


def emulate(
    env: Any,
    name: str = "env",
    obs_spec: ObservationSpec | None = None,
    act_spec: ActionSpec | None = None,
    episode_metrics: tuple[str, ...] = (),
    check_obs: bool = False,
    action_mask: str | None = None,
) -> GymnasiumEmulator | PettingZooEmulator:
    """Wrap a raw Gymnasium ``Env``, PettingZoo ``ParallelEnv`` or PettingZoo ``AECEnv`` in its emulator.

    ``episode_metrics``: names in an episode's final ``info`` reported with it (``Episodes.metrics``).
    ``check_obs``: check every observation against its space's bounds and for NaN/inf (slow;
    shapes and dtypes are checked every step regardless).
    ``action_mask``: the Dict observation key that holds the legal actions, which must then be there
    (``EnvBuild.action_mask``); None: the ``action_mask`` key where an observation has one.
    """
    env, key = with_info_mask(env, action_mask, name)
    args = (env, obs_spec, act_spec, name, episode_metrics, check_obs, key)
    if isinstance(env, gymnasium.Env):
        emulator: GymnasiumEmulator | PettingZooEmulator = GymnasiumEmulator(*args)
    elif is_aec(env):
        emulator = AECEmulator(*args)
    elif hasattr(env, "possible_agents") and hasattr(env, "observation_space"):
        emulator = PettingZooEmulator(*args)
    else:
        raise TypeError(
            f"{name}: the binding returned {type(env).__name__}, expected a gymnasium.Env or a PettingZoo ParallelEnv/AECEnv"
        )
    if action_mask is not None and obs_spec is None:
        require_mask(emulator, key)
    return emulator


INFO_MASK = "info:"  # EnvBuild(action_mask="info:NAME"): the legal actions come in info[NAME] (Taxi: "action_mask")


def with_info_mask(env: Any, action_mask: str | None, name: str) -> tuple[Any, str]:
    """``(env, observation key of its mask)``: a Gymnasium env whose mask comes in an info entry
    (``info:NAME``) behind :class:`InfoActionMask`, any other env as it is."""
    if action_mask is None or not action_mask.startswith(INFO_MASK):
        return env, action_mask or ACTION_MASK_KEY
    if not isinstance(env, gymnasium.Env):
        raise SpaceError(
            f"{name}: action_mask={action_mask!r}: info masks are for Gymnasium envs; a PettingZoo env puts its mask "
            "in the observation (name its key)"
        )
    return InfoActionMask(env, action_mask[len(INFO_MASK) :], name), ACTION_MASK_KEY


class InfoActionMask(gymnasium.Wrapper):
    """A Gymnasium env that reports its legal actions in ``info[entry]`` (as Taxi does), seen with them under
    the ``action_mask`` key of a Dict observation (the env's own observation under ``observation``, or its
    Dict's keys beside it), where the flattening spec finds masks. A step without the entry is refused."""

    def __init__(self, env: gymnasium.Env, entry: str, name: str = "env"):
        super().__init__(env)
        self.entry, self.name = entry, name
        flat = ActionSpec(env.action_space).flat_space
        choices = getattr(flat, "discrete", flat)  # a hybrid action's discrete row
        nvec = [flat.n] if isinstance(flat, gymnasium.spaces.Discrete) else getattr(choices, "nvec", None)
        if nvec is None:
            raise SpaceError(f"{name}: action_mask='info:{entry}': masks apply to discrete actions, not {flat}")
        self.size = int(np.sum(nvec))
        inner = env.observation_space
        self.inner_dict = isinstance(inner, gymnasium.spaces.Dict)
        fields = dict(cast(gymnasium.spaces.Dict, inner).spaces) if self.inner_dict else {"observation": inner}
        if ACTION_MASK_KEY in fields:
            raise SpaceError(
                f"{name}: the observation has its own {ACTION_MASK_KEY!r} key: leave EnvBuild.action_mask unset"
            )
        mask = gymnasium.spaces.Box(0, 1, (self.size,), np.int8)
        self.observation_space = gymnasium.spaces.Dict({**fields, ACTION_MASK_KEY: mask})

    def with_mask(self, obs: Any, info: dict) -> dict:
        if self.entry not in info:
            raise SpaceError(f"{self.name}: info has no {self.entry!r} entry (EnvBuild(action_mask='info:{self.entry}'))")
        legal = np.asarray(info[self.entry], dtype=np.int8).reshape(-1)
        if legal.size != self.size:
            raise SpaceError(
                f"{self.name}: info[{self.entry!r}] has {legal.size} entries, the action has {self.size} choices"
            )
        return {**(dict(obs) if self.inner_dict else {"observation": obs}), ACTION_MASK_KEY: legal}

    def reset(self, **kwargs: Any) -> tuple[dict, dict]:
        obs, info = self.env.reset(**kwargs)
        return self.with_mask(obs, info), info

    def step(self, action: Any) -> tuple[dict, Any, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self.with_mask(obs, info), reward, terminated, truncated, info


def require_mask(emulator: GymnasiumEmulator | PettingZooEmulator, key: str) -> None:
    """Refuse an env whose declared action mask key no agent's observation has."""
    specs = [o for o, _ in getattr(emulator, "agent_specs", None) or [(emulator.obs_spec, None)]]
    if all(o.mask is None for o in specs):
        space = specs[0].space
        keys = list(space.spaces) if isinstance(space, gymnasium.spaces.Dict) else None
        has = f"its keys are {', '.join(map(repr, keys))}" if keys else f"it is a {type(space).__name__}, not a Dict"
        raise SpaceError(
            f"{emulator.name}: EnvBuild(action_mask={key!r}) names no key of the observation ({has}): "
            "name the Dict key that holds the legal actions"
        )


EnvCreator = Callable[..., Any]
