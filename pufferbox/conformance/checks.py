"""The conformance checks a pufferbox env must pass, each a function ``check(spec, cfg)``.

Each check raises :class:`ConformanceError` with a precise message (step, env, field)
on the first violation; :func:`check_env_spec` runs them all and collects the results.

* ``api``: Gymnasium ``check_env`` or PettingZoo ``parallel_api_test`` on the raw and the flattened env.
* ``spaces``: every observation of a seeded random rollout lies in the declared space.
* ``determinism``: two raw envs reset with one seed and fed one action sequence agree.
* ``flattening``: the raw env and the flattened env in lock step agree once the flat
  observation is unflattened (numpy and torch) and the flat action unflattened.
* ``serial``: the serial vector backend equals manual stepping of raw envs (seeded
  ``seed + i``), autoresets and episode infos included.
* ``native``: a plugin's native batched block equals the emulated envs bit for bit (under the env kwargs
  its ``native`` creator names in ``conformance_kwargs``, where the block draws some random choice from
  another RNG than the env's, e.g. Atari's no-op starts).
* ``masks``: an env that declares an action mask never receives an illegal action from pufferbox's
  random sampler nor from its policies' sampling (masked logits: sampled and greedy), every step.
* ``groups``: a plugin's declared agent groups (``EnvSpec.groups``) put every agent in exactly one
  group, and the agents of a group share their own observation and action spaces.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import gymnasium
import numpy as np

from pufferbox.emulation import INFO_MASK, is_aec, metric, with_info_mask
from pufferbox.episodes import Episodes
from pufferbox.errors import PufferboxError
from pufferbox.registry import EnvSpec
from pufferbox.spaces import ACTION_MASK_KEY, ActionSpec, ObservationSpec, SpaceError, get_path, mask_logits, sample_legal

__all__ = ["CheckConfig", "CheckResult", "ConformanceError", "CHECKS", "check_env_spec", "assert_conforms"]


class ConformanceError(PufferboxError, AssertionError):
    """An env broke the contract; the message says which check, where and how."""


@dataclass(frozen=True)
class CheckConfig:
    steps: int = 200
    seed: int = 0
    num_envs: int = 3
    env_kwargs: tuple = ()  # sorted (key, value) pairs, so the config stays hashable

    @property
    def kwargs(self) -> dict:
        return dict(self.env_kwargs)


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str = ""

    def __str__(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.name}" + (f": {self.detail}" if self.detail else "")


def is_multiagent(env: Any) -> bool:
    return not isinstance(env, gymnasium.Env) and hasattr(env, "possible_agents")


class TurnByTurn:
    """A raw PettingZoo AEC env behind a ParallelEnv face, with pufferbox's turn rules spelled out for the
    checks to compare against: ``step`` plays only the mover's action, then the dead steps due; rewards are
    ``env.rewards`` after each of those steps, summed per agent; observations are every live agent's."""

    def __init__(self, env: Any):
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self.metadata = getattr(env, "metadata", {})
        self.observation_space, self.action_space = env.observation_space, env.action_space

    @property
    def agents(self) -> list:
        return list(self.env.agents)

    @property
    def mover(self) -> Any:
        return self.env.agent_selection if self.env.agents else None

    def observations(self) -> dict:
        return {a: self.env.observe(a) for a in self.env.agents}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.env.reset(seed=seed) if seed is not None else self.env.reset()
        return self.observations(), {a: self.env.infos.get(a, {}) for a in self.env.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        env, rewards = self.env, dict[str, float]()
        env.step(actions[env.agent_selection])
        for agent, r in env.rewards.items():
            rewards[agent] = rewards.get(agent, 0.0) + float(r)
        terms, truncs, infos = dict(env.terminations), dict(env.truncations), dict(env.infos)
        live = self.observations()
        self.final = {a: live[a] for a in live if truncs.get(a) and not terms.get(a)}  # kept past the dead steps
        while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            env.step(None)
            for agent, r in env.rewards.items():
                rewards[agent] = rewards.get(agent, 0.0) + float(r)
        return ({a: o for a, o in live.items() if a in env.agents}, rewards, terms, truncs, infos)

    def close(self) -> None:
        self.env.close()


def make_raw(spec: EnvSpec, cfg: CheckConfig) -> Any:
    """The plugin's raw env; a turn-based (AEC) one behind :class:`TurnByTurn`, one whose mask comes in
    an info entry with it in its observation (as the emulator sees it)."""
    env, _ = with_info_mask(spec.make_raw(**cfg.kwargs), spec.build.action_mask, spec.name)
    return TurnByTurn(env) if is_aec(env) else env


def fail(message: str) -> NoReturn:
    raise ConformanceError(message)


def same_tree(space: gymnasium.Space, expected: Any, actual: Any, where: str) -> None:
    """Leaf-by-leaf exact equality of two samples of ``space``; fails naming the first field."""
    spec = ObservationSpec(space, name=where)
    for leaf in spec.leaves:
        want = np.asarray(get_path(expected, leaf.path), dtype=leaf.dtype)
        got = np.asarray(get_path(actual, leaf.path))
        if got.shape != want.shape or not np.array_equal(got.astype(leaf.dtype), want):
            name = where + "".join(f"[{p!r}]" for p in leaf.path)
            fail(f"{name}: expected {want.tolist()}, got {got.tolist()}")


def seeded_sampler(space: gymnasium.Space, seed: int) -> gymnasium.Space:
    space.seed(seed)
    return space


# -- api --------------------------------------------------------------------------------
def check_api(spec: EnvSpec, cfg: CheckConfig) -> None:
    """The ecosystem's own checker on the raw env, then on the flattened (emulated) env."""
    for kind, make in (("raw", spec.make_raw), ("flattened", spec.make_emulated)):
        env = make(**cfg.kwargs)
        multi = is_multiagent(env)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")  # style warnings and banners are not contract violations
                if is_aec(env):
                    from pettingzoo.test import api_test

                    api_test(env, num_cycles=min(cfg.steps, 100))
                elif multi:
                    from pettingzoo.test import parallel_api_test

                    parallel_api_test(env, num_cycles=min(cfg.steps, 100))
                else:
                    from gymnasium.utils.env_checker import check_env

                    check_env(env, skip_render_check=True)
        except ConformanceError:
            raise
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            fail(
                f"{'api_test' if is_aec(env) else 'parallel_api_test' if multi else 'gymnasium check_env'} failed "
                f"on the {kind} env: "
                f"{type(exc).__name__}: {first}"
            )
        finally:
            env.close()


# -- raw rollouts -----------------------------------------------------------------------
def rollout(env: Any, seed: int, steps: int, actions: Callable[[Any, int, Any], Any]) -> list[tuple]:
    """``(obs, reward, terminated, truncated)`` per step (reset steps have reward None)."""
    out: list[tuple] = []
    multi = is_multiagent(env)
    # Deep copies: envs such as nle reuse their observation arrays from step to step.
    obs, _ = env.reset(seed=seed)
    out.append((copy.deepcopy(obs), None, None, None))
    for t in range(steps):
        act = actions(env, t, obs)
        obs, reward, terminated, truncated, _ = env.step(act)
        out.append((copy.deepcopy(obs), reward, terminated, truncated))
        done = (not env.agents) if multi else (terminated or truncated)
        if done:
            obs, _ = env.reset()
            out.append((copy.deepcopy(obs), None, None, None))
    return out


def mask_key(spec: EnvSpec) -> str:
    """The observation key of the env's legal actions (``EnvBuild.action_mask``, else ``action_mask``,
    where an info mask is put)."""
    key = spec.build.action_mask
    return ACTION_MASK_KEY if key is None or key.startswith(INFO_MASK) else key


def random_actions(seed: int, key: str = ACTION_MASK_KEY) -> Callable[[Any, int, Any], Any]:
    """Seeded structured actions for whatever agents are live (one sampler per space), legal where the
    last observation (``pick(env, t, obs)``) declares an action mask (under ``key``)."""
    samplers: dict[Any, gymnasium.Space] = {}

    def pick(env: Any, t: int, obs: Any = None) -> Any:
        if is_multiagent(env):
            acts = {}
            for agent in env.agents:
                if agent not in samplers:
                    samplers[agent] = seeded_sampler(env.action_space(agent), seed + len(samplers))
                acts[agent] = legal_sample(samplers[agent], (obs or {}).get(agent), key)
            return acts
        if None not in samplers:
            samplers[None] = seeded_sampler(env.action_space, seed)
        return legal_sample(samplers[None], obs, key)

    return pick


def legal_sample(space: gymnasium.Space, obs: Any, key: str = ACTION_MASK_KEY) -> Any:
    """``space.sample()``, within the observation's action mask (under ``key``) when it has one: Discrete,
    MultiDiscrete, or the discrete choices of a tree (drawn as its flat row, seeded from ``space``)."""
    mask = obs.get(key) if isinstance(obs, dict) else None
    if mask is None or not np.asarray(mask).any():
        return space.sample()
    mask = np.asarray(mask, dtype=np.int8).ravel()
    if isinstance(space, gymnasium.spaces.Discrete):
        return space.sample(mask=mask)
    spec = ActionSpec(space)
    flat = spec.flat_space
    choices: Any = getattr(flat, "discrete", flat)  # a hybrid row's discrete part, or the MultiDiscrete itself
    nvec = np.asarray(choices.nvec).ravel()
    per_slot = tuple(np.split(mask, np.cumsum(nvec)[:-1]))
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        return space.sample(mask=per_slot)
    flat.seed(int(space.np_random.integers(2**31)))
    return spec.unflatten(flat.sample(mask=per_slot))


def check_spaces(spec: EnvSpec, cfg: CheckConfig) -> None:
    env = make_raw(spec, cfg)
    try:
        multi = is_multiagent(env)
        spaces_of = (lambda a: env.observation_space(a)) if multi else (lambda a: env.observation_space)
        for t, (obs, reward, _, _) in enumerate(rollout(env, cfg.seed, cfg.steps, random_actions(cfg.seed, mask_key(spec)))):
            for agent, value in obs.items() if multi else [(None, obs)]:
                who = "observation" if agent is None else f"observation of {agent!r}"
                try:
                    ObservationSpec(spaces_of(agent), name=who).check(value)
                except SpaceError as exc:
                    fail(f"record {t} of the rollout: {exc}")
            for r in (reward or {}).values() if multi else [reward]:
                if r is not None and not (np.isscalar(r) and math.isfinite(float(r))):  # type: ignore[arg-type]
                    fail(f"record {t}: reward {r!r} is not a finite number")
    finally:
        env.close()


def check_determinism(spec: EnvSpec, cfg: CheckConfig) -> None:
    runs = []
    for _ in range(2):
        env = make_raw(spec, cfg)
        try:
            runs.append(rollout(env, cfg.seed, cfg.steps, random_actions(cfg.seed, mask_key(spec))))
            obs_space = env.observation_space(env.possible_agents[0]) if is_multiagent(env) else env.observation_space
            multi = is_multiagent(env)
        finally:
            env.close()
    first, second = runs
    if len(first) != len(second):
        fail(f"two runs with seed {cfg.seed} and the same actions had different episode boundaries")
    for t, (a, b) in enumerate(zip(first, second)):
        where = f"seed {cfg.seed}, record {t}: observation"
        if multi:
            if list(a[0]) != list(b[0]):
                fail(f"seed {cfg.seed}, record {t}: agents {list(a[0])} vs {list(b[0])}")
            for agent in a[0]:
                same_tree(obs_space, a[0][agent], b[0][agent], f"{where} of {agent!r}")
        else:
            same_tree(obs_space, a[0], b[0], where)
        if a[1:] != b[1:] and not _same_scalars(a[1:], b[1:]):
            fail(f"seed {cfg.seed}, record {t}: (reward, terminated, truncated) {a[1:]} vs {b[1:]}")


def _same_scalars(a: tuple, b: tuple) -> bool:
    return all(np.array_equal(np.asarray(x, dtype=object), np.asarray(y, dtype=object)) for x, y in zip(a, b))


# -- flattening -------------------------------------------------------------------------
def check_flattening(spec: EnvSpec, cfg: CheckConfig) -> None:
    import torch

    raw, flat = make_raw(spec, cfg), spec.make_emulated(**cfg.kwargs)
    try:
        multi = is_multiagent(raw)
        pick = random_actions(cfg.seed, mask_key(spec))
        # each agent's own specs: agents with their own spaces keep their record at the start of a shared row
        slot_specs = getattr(flat, "agent_specs", None)
        own = dict(zip(raw.possible_agents, slot_specs)) if multi and slot_specs else {}

        def specs_of(agent: Any) -> tuple[ObservationSpec, ActionSpec]:
            return own.get(agent, (flat.obs_spec, flat.act_spec))

        def compare(raw_obs: Any, flat_obs: Any, where: str) -> None:
            rows = {a: flat_obs[a] for a in raw_obs} if multi else {None: flat_obs}
            for agent, raw_value in raw_obs.items() if multi else [(None, raw_obs)]:
                who = where + ("" if agent is None else f" of {agent!r}")
                row, obs_spec = rows[agent], specs_of(agent)[0]
                obs_spec.torch_layout()
                same_tree(obs_spec.space, raw_value, _squeeze(obs_spec.unflatten(row[None])), f"{who} (numpy unflatten)")
                tree = obs_spec.unflatten_torch(torch.from_numpy(np.ascontiguousarray(row[None])))
                same_tree(obs_spec.space, raw_value, _squeeze(_to_numpy(tree)), f"{who} (torch unflatten)")

        raw_obs, _ = raw.reset(seed=cfg.seed)
        flat_obs, _ = flat.reset(seed=cfg.seed)
        compare(raw_obs, flat_obs, "reset observation")
        for t in range(cfg.steps):
            act = pick(raw, t, raw_obs)
            if multi:
                flat_act = {a: specs_of(a)[1].flatten(v) for a, v in act.items()}
                for a, v in act.items():
                    unflat = specs_of(a)[1].unflatten(flat_act[a])
                    same_tree(specs_of(a)[1].space, v, unflat, f"step {t}: action of {a!r} round trip")
            else:
                act_spec = flat.act_spec
                flat_act = act_spec.flatten(act)
                same_tree(act_spec.space, act, act_spec.unflatten(flat_act), f"step {t}: action round trip")
            r_obs, r_rew, r_term, r_trunc, _ = raw.step(act)
            f_obs, f_rew, f_term, f_trunc, _ = flat.step(flat_act)
            compare(r_obs, f_obs, f"step {t}: observation")
            raw_obs = r_obs
            if not _same_scalars((r_rew, r_term, r_trunc), (f_rew, f_term, f_trunc)):
                fail(
                    f"step {t}: raw env gave (reward, terminated, truncated) = {(r_rew, r_term, r_trunc)}, "
                    f"the flattened env {(f_rew, f_term, f_trunc)}"
                )
            done = (not raw.agents) if multi else (r_term or r_trunc)
            if done:
                raw_obs, _ = raw.reset(seed=cfg.seed + t + 1)
                flat_obs, _ = flat.reset(seed=cfg.seed + t + 1)
                compare(raw_obs, flat_obs, f"step {t}: reset observation")
    finally:
        raw.close()
        flat.close()


def _squeeze(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _squeeze(v) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(_squeeze(v) for v in tree)
    return tree[0]


def _to_numpy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(_to_numpy(v) for v in tree)
    return tree.numpy()


# -- vector backends --------------------------------------------------------------------
class ManualEnvs:
    """Raw envs stepped one by one, with the emulator's padding and autoreset rules spelled out."""

    def __init__(
        self,
        spec: EnvSpec,
        cfg: CheckConfig,
        obs_spec: ObservationSpec,
        act_spec: ActionSpec,
        agent_specs: list[tuple[ObservationSpec, ActionSpec]] | None = None,
    ):
        self.envs = [make_raw(spec, cfg) for _ in range(cfg.num_envs)]
        self.obs_spec, self.act_spec = obs_spec, act_spec
        self.multi = is_multiagent(self.envs[0])
        self.agents = list(self.envs[0].possible_agents) if self.multi else [None]
        # each slot's own specs (agents with their own spaces write their record at the start of the row)
        self.specs = agent_specs or [(obs_spec, act_spec)] * len(self.agents)
        n, k = len(self.envs), len(self.agents)
        self.obs = obs_spec.zeros(n * k)
        self.final = obs_spec.zeros(n * k)  # a truncated (not terminated) row's last observation
        self.rewards = np.zeros(n * k, np.float32)
        self.terminals = np.zeros(n * k, bool)
        self.truncations = np.zeros(n * k, bool)
        self.masks = np.ones(n * k, bool)
        self.returns = [np.zeros(k) for _ in range(n)]
        self.lengths = [0] * n
        self.metric_names = spec.build.episode_metrics  # read from the final info, as the emulator does

    def write(self, i: int, observations: Any) -> None:
        k = len(self.agents)
        rows = slice(i * k, (i + 1) * k)
        self.obs[rows] = 0
        self.masks[rows] = False
        for j, agent in enumerate(self.agents):
            if not self.multi:
                value = observations
            elif agent in observations:
                value = observations[agent]
            else:
                continue
            self.specs[j][0].write(self.obs, i * k + j, value)
            self.masks[i * k + j] = not isinstance(self.envs[i], TurnByTurn) or agent == self.envs[i].mover

    def reset(self, seed: int) -> None:
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=seed + i)
            self.write(i, obs)

    def step(self, actions: np.ndarray) -> Episodes:
        ended, k = [], len(self.agents)
        for i, env in enumerate(self.envs):
            base = i * k
            if self.multi:
                act = {a: self.specs[j][1].unflatten(actions[base + j]) for a in env.agents for j in [self.agents.index(a)]}
                obs, rew, term, trunc, info = env.step(act)
                metrics = {
                    name: float(np.mean([metric(i, name) for i in info.values()])) if info else math.nan
                    for name in self.metric_names
                }
                self.rewards[base : base + k] = 0.0
                self.terminals[base : base + k] = True
                self.truncations[base : base + k] = False
                for j, agent in enumerate(self.agents):
                    if agent in rew:
                        self.rewards[base + j] = rew[agent]
                        self.terminals[base + j] = term.get(agent, False)
                        self.truncations[base + j] = trunc.get(agent, False)
                self.returns[i] += self.rewards[base : base + k]
                done = not env.agents
            else:
                obs, rew, term, trunc, info = env.step(self.act_spec.unflatten(actions[base]))
                metrics = {name: metric(info, name) for name in self.metric_names}
                self.rewards[base], self.terminals[base], self.truncations[base] = rew, term, trunc
                self.returns[i] += float(rew)
                done = term or trunc
            self.lengths[i] += 1
            for j, agent in enumerate(self.agents):
                row = base + j
                last = obs.get(agent, getattr(env, "final", {}).get(agent)) if self.multi else obs
                if self.truncations[row] and not self.terminals[row] and last is not None:
                    self.specs[j][0].write(self.final, row, last)
            if done:
                ended.append(Episodes.one(i, float(self.returns[i].mean()), self.lengths[i], metrics))
                self.returns[i][:] = 0.0
                self.lengths[i] = 0
                obs, _ = env.reset()
            self.write(i, obs)
        return Episodes.concat(ended)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def episode_table(episodes: Episodes) -> list[tuple]:
    """``(env, return, length, metrics...)`` per episode, sorted: comparable whatever the order."""
    names = sorted(episodes.metrics)
    return sorted(
        zip(
            episodes.env_ids.tolist(),
            episodes.returns.tolist(),
            episodes.lengths.tolist(),
            *(np.nan_to_num(episodes.metrics[n], nan=-1e300).tolist() for n in names),
        )
    )


def compare_batches(t: int, names: tuple[str, str], a: tuple, b: tuple, multi: bool) -> None:
    fields = ("observations", "rewards", "terminals", "truncations", "masks")
    for name, x, y in zip(fields, a, b):
        if name == "masks" and not multi:
            continue
        if not np.array_equal(np.asarray(x), np.asarray(y)):
            rows = np.flatnonzero(np.asarray(x != y).reshape(len(x), -1).any(axis=1)) if np.ndim(x) else np.zeros(0, int)
            fail(
                f"step {t}: {name} differ between {names[0]} and {names[1]} at rows {list(rows)[:8]}: "
                f"{np.asarray(x)[rows[:2]].tolist()} vs {np.asarray(y)[rows[:2]].tolist()}"
            )


def compare_final(t: int, names: tuple[str, str], a: Any, b: Any, cut: np.ndarray) -> None:
    """The final observations of the rows truncated (not terminated) this step agree."""
    cut = np.asarray(cut)
    if not cut.any():
        return
    if a is None:
        fail(
            f"step {t}: rows {np.flatnonzero(cut)[:8].tolist()} were truncated but the {names[0]} keeps no final "
            f"observations: copy them into buffers.final_observations before the reset and set "
            f"writes_final_observations = True (learners bootstrap truncated returns from them)"
        )
    x, y = np.asarray(a)[cut], np.asarray(b)[cut]
    if not np.array_equal(x, y):
        rows = np.flatnonzero(cut)[np.asarray(x != y).reshape(len(x), -1).any(axis=1)]
        fail(f"step {t}: final observations of truncated rows {rows[:8].tolist()} differ between {names[0]} and {names[1]}")


def action_batches(venv: Any, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    """Random action batches for every row of ``venv`` (each agent slot within its own action space),
    ``sample(obs)``: legal in each row of ``obs`` where the env declares an action mask."""
    space, shape = seeded_sampler(venv.action_space, seed), (venv.num_agents, *venv.single_action_space.shape)
    mask, rng = venv.obs_spec.mask, np.random.default_rng(seed)

    def sample(obs: np.ndarray) -> np.ndarray:
        actions = np.asarray(space.sample()).reshape(shape)
        if mask is not None:  # the choices (a hybrid row's discrete slots) legal, its continuous values kept
            return with_choices(actions, sample_legal(mask.legal(obs), mask.sizes, rng), venv.act_spec)
        return actions

    return sample


def with_choices(rows: np.ndarray, choices: np.ndarray, act_spec: ActionSpec) -> np.ndarray:
    """``rows`` (whole flat actions) with their discrete choices replaced by ``choices`` (one per slot)."""
    if not act_spec.hybrid:
        return np.asarray(choices).reshape(rows.shape).astype(rows.dtype)
    rows = rows.copy()
    rows[:, : act_spec.discrete_size] = np.asarray(choices).reshape(len(rows), -1)
    return rows


def check_serial(spec: EnvSpec, cfg: CheckConfig) -> None:
    from pufferbox.vector import make

    venv = make(spec, backend="serial", num_envs=cfg.num_envs, env_kwargs=cfg.kwargs, native=False)
    manual = ManualEnvs(spec, cfg, venv.obs_spec, venv.act_spec, spec.agent_specs(**cfg.kwargs))
    try:
        sample = action_batches(venv, cfg.seed)
        venv.async_reset(cfg.seed)
        manual.reset(cfg.seed)
        batch = venv.recv()
        obs = batch[0]
        names = ("serial backend", "manual stepping")
        mine = (manual.obs, manual.rewards, manual.terminals, manual.truncations, manual.masks)
        compare_batches(-1, names, batch[:4] + (batch[6],), mine, manual.multi)
        for t in range(cfg.steps):
            actions = sample(obs)
            venv.send(actions)
            obs, rew, term, trunc, infos, _env_ids, masks = venv.recv()
            expected_infos = manual.step(actions)
            compare_batches(t, names, (obs, rew, term, trunc, masks), mine, manual.multi)
            compare_final(t, names, venv.final_observations(), manual.final, manual.truncations & ~manual.terminals)
            if episode_table(infos) != episode_table(expected_infos):
                fail(
                    f"step {t}: episode infos differ: serial backend {episode_table(infos)} vs "
                    f"manual stepping {episode_table(expected_infos)}"
                )
    finally:
        venv.close()
        manual.close()


def check_native(spec: EnvSpec, cfg: CheckConfig) -> None:
    from pufferbox.vector import make

    if spec.build.native is None:
        return
    kwargs = {**getattr(spec.build.native, "conformance_kwargs", {}), **cfg.kwargs}
    native = make(spec, backend="serial", num_envs=cfg.num_envs, env_kwargs=kwargs, native=True)
    emulated = make(spec, backend="serial", num_envs=cfg.num_envs, env_kwargs=kwargs, native=False)
    try:
        for what in ("obs_spec", "act_spec"):
            a, b = getattr(native, what), getattr(emulated, what)
            if a.space != b.space:
                fail(f"native block {what} {a.space} differs from the env's {b.space}")
        sample = action_batches(emulated, cfg.seed)
        native.async_reset(cfg.seed)
        emulated.async_reset(cfg.seed)
        names = ("native", "emulated")
        multi = emulated.agents_per_env > 1
        a, b = native.recv(), emulated.recv()
        compare_batches(-1, names, a[:4] + (a[6],), b[:4] + (b[6],), multi)
        for t in range(cfg.steps):
            actions = sample(b[0])
            native.send(actions)
            emulated.send(actions)
            a, b = native.recv(), emulated.recv()
            compare_batches(t, names, a[:4] + (a[6],), b[:4] + (b[6],), multi)
            compare_final(t, names, native.final_observations(), emulated.final_observations(), b[3] & ~b[2])
            ia, ib = episode_table(a[4]), episode_table(b[4])
            if ia != ib or sorted(a[4].metrics) != sorted(b[4].metrics):
                fail(f"step {t}: finished episodes differ: native {a[4]} vs emulated {b[4]}")
    finally:
        native.close()
        emulated.close()


def time_limit_of(env: Any) -> int | None:
    """The step limit an env declares: Gymnasium's ``spec.max_episode_steps`` or a ``TimeLimit`` wrapper,
    PettingZoo's ``max_cycles`` (MPE, butterfly); None if it declares none."""
    spec = getattr(env, "spec", None)
    limit = getattr(spec, "max_episode_steps", None)
    if limit:
        return int(limit)
    layer = env
    while layer is not None:
        if isinstance(layer, gymnasium.wrappers.TimeLimit):
            return int(layer._max_episode_steps)
        layer = getattr(layer, "env", None)
    cycles = getattr(getattr(env, "unwrapped", env), "max_cycles", None)
    return int(cycles) if isinstance(cycles, int) and cycles > 0 else None


def check_truncation(spec: EnvSpec, cfg: CheckConfig) -> None:
    """An env reports reaching its declared time limit as truncation: never silently running past it,
    never as termination alone (a learner must not read "the task ended" where only time ran out)."""
    env = make_raw(spec, cfg)
    try:
        limit = time_limit_of(getattr(env, "env", env) if isinstance(env, TurnByTurn) else env)
        if limit is None:
            return
        multi = is_multiagent(env)
        sample = random_actions(cfg.seed, mask_key(spec))
        obs, _ = env.reset(seed=cfg.seed)
        length = 0
        at_limit = as_termination = 0  # episodes that reached the limit; of those, ended as termination only
        for t in range(cfg.steps):
            obs, _, term, trunc, _ = env.step(sample(env, t, obs))
            length += 1
            if multi:
                done = not env.agents
                terminated, truncated = all(term.values()) if term else False, any(trunc.values())
            else:
                done, terminated, truncated = term or trunc, bool(term), bool(trunc)
            if length == limit and not terminated and not truncated:
                fail(
                    f"step {t}: the episode reached its time limit ({limit} steps) without truncated=True: "
                    f"report the limit as truncation (gymnasium's TimeLimit does)"
                )
            if length > limit:
                fail(f"step {t}: the episode ran past its declared time limit of {limit} steps without ending")
            if length == limit:
                at_limit += 1
                as_termination += terminated and not truncated
            if done:
                obs, _ = env.reset()
                length = 0
        # One task ending on the last allowed step happens; every episode at the limit doing so is the limit.
        if at_limit >= 2 and as_termination == at_limit:
            fail(
                f"all {at_limit} episodes that reached the time limit ({limit} steps) ended terminated, without "
                f"truncated=True: report the limit as truncation (gymnasium's TimeLimit does)"
            )
    finally:
        env.close()


# -- action masks -----------------------------------------------------------------------
def illegal_rows(actions: np.ndarray, legal: np.ndarray, sizes: tuple[int, ...], acting: np.ndarray) -> np.ndarray:
    """The acting rows whose action (one choice per slot) is illegal in their observation's mask."""
    choice = np.asarray(actions).reshape(len(legal), len(sizes)) + np.cumsum((0,) + sizes[:-1])
    taken = np.take_along_axis(legal, choice, axis=1)
    none_legal = np.stack([~part.any(1) for part in np.split(legal, np.cumsum(sizes)[:-1], axis=1)], axis=1)
    return np.flatnonzero(acting & ~(taken | none_legal).all(1))


def policy_choices(logits: Any, legal: np.ndarray, sizes: tuple[int, ...], greedy: bool) -> np.ndarray:
    """Actions the way pufferbox's policies choose them: masked logits, then a Categorical per slot
    (sampled) or its argmax (greedy)."""
    import torch

    masked = mask_logits(logits, torch.from_numpy(legal), sizes)
    parts = torch.split(masked, list(sizes), dim=-1)
    if greedy:
        chosen = [p.argmax(-1) for p in parts]
    else:
        chosen = [torch.distributions.Categorical(logits=p).sample() for p in parts]
    return torch.stack(chosen, dim=-1).numpy()


def check_masks(spec: EnvSpec, cfg: CheckConfig) -> None:
    """Every step of a serial vector env, the random sampler's actions and a policy's (logits drawn wide,
    as an untrained or overconfident policy's may be, then masked: sampled and greedy) are legal in every
    acting row; the three take turns driving the env, so all of them meet mid-episode positions."""
    import torch

    from pufferbox.vector import make

    venv = make(spec, backend="serial", num_envs=cfg.num_envs, env_kwargs=cfg.kwargs, native=False)
    try:
        mask = venv.obs_spec.mask
        if mask is None:
            fail(f"{spec.name}: no action mask: the observation has no {mask_key(spec)!r} key")
        sample, gen = action_batches(venv, cfg.seed), torch.Generator().manual_seed(cfg.seed)
        venv.async_reset(cfg.seed)
        obs, *_, acting = venv.recv()
        for t in range(cfg.steps):
            legal = mask.legal(obs)
            empty = no_legal_rows(legal, mask.sizes, np.asarray(acting))
            if len(empty):
                fail(
                    f"step {t}: the action mask of acting row {empty[0]} is all zeros (no legal action); an agent "
                    "that acts needs at least one legal choice in each part of its action"
                )
            logits = torch.randn(len(obs), sum(mask.sizes), generator=gen) * 10.0
            rows = sample(obs)  # whole random rows: a hybrid action's continuous values ride along
            choices = {
                "the random sampler": venv.act_spec.split(rows)[0].astype(np.int64) if venv.act_spec.hybrid else rows,
                "policy sampling": policy_choices(logits, legal, mask.sizes, greedy=False),
                "greedy policy": policy_choices(logits, legal, mask.sizes, greedy=True),
            }
            for source, actions in choices.items():
                bad = illegal_rows(actions, legal, mask.sizes, np.asarray(acting))
                if len(bad):
                    fail(
                        f"step {t}: {source} chose illegal action {np.asarray(actions)[bad[0]].tolist()} in row {bad[0]} "
                        f"(legal: {np.flatnonzero(legal[bad[0]]).tolist()})"
                    )
            driver = list(choices.values())[t % 3]
            venv.send(with_choices(rows, np.asarray(driver), venv.act_spec))
            obs, *_, acting = venv.recv()
    finally:
        venv.close()


def no_legal_rows(legal: np.ndarray, sizes: tuple[int, ...], acting: np.ndarray) -> np.ndarray:
    """The acting rows whose mask allows no choice in some part of the action (``legal``: the parts side by side)."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    empty = np.zeros(len(legal), bool)
    for start, n in zip(starts, sizes, strict=True):
        empty |= ~legal[:, start : start + n].any(1)
    return np.flatnonzero(empty & acting.astype(bool))


CHECKS: dict[str, Callable[[EnvSpec, CheckConfig], None]] = {
    "api": check_api,
    "spaces": check_spaces,
    "determinism": check_determinism,
    "flattening": check_flattening,
    "serial": check_serial,
    "native": check_native,
    "truncation": check_truncation,
    "masks": check_masks,
}


def check_groups(spec: EnvSpec, cfg: CheckConfig) -> None:
    from pufferbox.group_layout import GroupError, resolve_layout

    try:
        layout = resolve_layout(spec, cfg.kwargs, None)
    except GroupError as exc:
        fail(str(exc))
    if layout is not None and len(layout.names) != len(set(layout.names)):
        fail(f"group names repeat: {layout.names}")


CHECKS["groups"] = check_groups


def check_env_spec(
    spec: EnvSpec,
    steps: int = 200,
    seed: int = 0,
    num_envs: int = 3,
    checks: list[str] | None = None,
    env_kwargs: dict | None = None,
) -> list[CheckResult]:
    """Run the checks (all by default) on ``spec``; never raises for a failing env.

    Example:
        >>> from pufferbox.registry import get_registry
        >>> results = check_env_spec(get_registry().get("bandit"), steps=20)  # doctest: +SKIP
        >>> all(r.ok for r in results)                                         # doctest: +SKIP
        True
    """
    unknown = sorted(set(checks or ()) - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown checks {unknown}; choose from {list(CHECKS)}")
    cfg = CheckConfig(steps, seed, num_envs, tuple(sorted((env_kwargs or {}).items())))
    results = []
    for name in checks or CHECKS:
        if name == "native" and spec.build.native is None:
            results.append(CheckResult(name, True, "no native implementation (skipped)"))
            continue
        if name == "masks" and not declares_mask(spec, cfg):
            results.append(CheckResult(name, True, "no action mask (skipped)"))
            continue
        if name == "groups" and spec.training.groups is None:
            results.append(CheckResult(name, True, "one shared policy (no groups declared)"))
            continue
        try:
            CHECKS[name](spec, cfg)
            results.append(CheckResult(name, True, native_conditions(spec, cfg) if name == "native" else ""))
        except ConformanceError as exc:
            results.append(CheckResult(name, False, str(exc)))
        except Exception as exc:  # a crash inside the env is a failure of that check too
            results.append(CheckResult(name, False, f"{type(exc).__name__}: {exc}"))
    return results


def native_conditions(spec: EnvSpec, cfg: CheckConfig) -> str:
    """The env kwargs the native check ran under beyond the user's (the block's ``conformance_kwargs``)."""
    extra = {k: v for k, v in getattr(spec.build.native, "conformance_kwargs", {}).items() if k not in cfg.kwargs}
    return "bit for bit under " + ", ".join(f"{k}={v!r}" for k, v in extra.items()) if extra else ""


def declares_mask(spec: EnvSpec, cfg: CheckConfig) -> bool:
    """Whether the env's observation carries an action mask (True when it cannot even be built: the check reports why)."""
    try:
        return spec.flattening(**cfg.kwargs)[0].mask is not None
    except Exception:
        return True


def assert_conforms(spec: EnvSpec, **kwargs: Any) -> list[CheckResult]:
    """Like :func:`check_env_spec`, raising :class:`ConformanceError` listing every failed check."""
    results = check_env_spec(spec, **kwargs)
    failed = [r for r in results if not r.ok]
    if failed:
        raise ConformanceError(
            f"{spec.name} fails {len(failed)} conformance check(s):\n" + "\n".join(str(r) for r in failed)
        )
    return results
