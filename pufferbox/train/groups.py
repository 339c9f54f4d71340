"""Agent groups: a policy and an optimizer per named group of agent slots (multi-agent PPO).

A multi-agent env has fixed agent slots (one row each, see :mod:`pufferbox.emulation`). A *group
map* names which slots form which group, e.g. Tag's ``{"tagger": [0], "runner": [1, 2, 3, 4]}``.
It comes from the user's ``[groups]`` config table (``tagger = [0]`` or agent ids
``runner = ["agent_1", ...]``), else from the plugin (``EnvSpec.groups``: a dict, or a
module-level ``groups(raw_env)``); without either every slot shares one policy (the
single-group path, unchanged); agents whose spaces differ get one group per pair of spaces. Each
group's policy is built on its own spaces (:func:`group_specs`): it reads its observation from the
start of the shared rows and acts in its own action space, so the backends only move rows as before.

* :class:`GroupedAgent` acts like one :class:`~pufferbox.train.policies.Agent` for the collectors:
  rows come in whole envs (``env * agents_per_env + slot``), so row ``i``'s slot is
  ``i % agents_per_env``; one forward per group per step, on its rows gathered by index.
* :class:`GroupLearner` gives each learning group its own :class:`~pufferbox.train.learner.Learner`
  and trains it only on its own segments (the segments of other groups never enter its losses).
* ``[league] frozen = ["runner"]``: those groups act but never learn; :class:`Pool` refills them
  from snapshots in ``RUN_DIR/pool/<group>/`` (``latest``, ``uniform`` or ``prioritized`` by the
  learners' win rate against each snapshot, fictitious self-play style).

Example:
    >>> layout = GroupLayout.build({"tagger": [0], "runner": [1, 2]}, ["a0", "a1", "a2"])
    >>> layout.names, layout.slot_group.tolist()
    (['tagger', 'runner'], [0, 1, 1])
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from torch import nn

from pufferbox.group_layout import GroupError, GroupLayout, resolve_layout, winner
from pufferbox.spaces import ActionSpec, InRow, ObservationSpec
from pufferbox.train.config import LeagueConfig, TrainConfig
from pufferbox.train.learner import Learner

if TYPE_CHECKING:
    from pufferbox.train.policies import Agent

__all__ = [
    "GroupError",
    "GroupLayout",
    "GroupLearner",
    "GroupScore",
    "GroupedAgent",
    "Pool",
    "groups_by_prefix",
    "grouped_agent",
    "resolve_layout",
]

POOL_MODES = ("latest", "uniform", "prioritized", "none")


def groups_by_prefix(env: Any) -> dict[str, list[str]]:
    """One group per agent-id prefix (``adversary_0``, ``agent_1`` -> ``adversary``, ``agent``): MPE and
    butterfly team envs. A module-level function, usable as ``EnvSpec.groups``."""
    out: dict[str, list[str]] = {}
    for agent in env.possible_agents:
        out.setdefault(str(agent).rsplit("_", 1)[0], []).append(agent)
    return out


class GroupedAgent(nn.Module):
    """One :class:`~pufferbox.train.policies.Agent` per group behind the Agent interface the collectors use.

    Rows of a batch are whole envs, so row ``i`` is slot ``i % agents_per_env``; each group's
    policy runs once per call on its rows (gathered by index) and the outputs are scattered back.
    """

    def __init__(self, agents: Mapping[str, nn.Module], layout: GroupLayout):
        super().__init__()
        self.groups = nn.ModuleDict(dict(agents))
        self.layout = layout
        self.slot_group = torch.as_tensor(layout.slot_group)
        self.agents_per_env = len(layout.slot_group)
        self.lstm_size = int(next(iter(self.agents.values())).lstm_size)
        self.index_cache: dict[tuple[int, str], list[torch.Tensor]] = {}

    @property
    def agents(self) -> dict[str, Agent]:
        """The groups' policies by name (``groups`` typed as what they are)."""
        return {name: cast("Agent", agent) for name, agent in self.groups.items()}

    @property
    def masked(self) -> bool:
        """Whether any group's env declares an action mask."""
        return any(agent.masked for agent in self.agents.values())

    def rows(self, n: int, device: torch.device) -> list[torch.Tensor]:
        """Per group, the positions of its rows in a batch of ``n`` rows (whole envs)."""
        key = (n, str(device))
        if key not in self.index_cache:
            # numpy, once per batch size: no device read inside a rollout (the cuda backend's loop)
            group = self.layout.slot_group[np.arange(n) % self.agents_per_env]
            self.index_cache[key] = [
                torch.as_tensor(np.nonzero(group == g)[0], device=device) for g in range(len(self.groups))
            ]
        return self.index_cache[key]

    def initial_state(self, rows: int, device: torch.device | str = "cpu"):
        if not self.lstm_size:
            return None
        zeros = torch.zeros(rows, self.lstm_size, device=device)
        return zeros, zeros.clone()

    def per_group(self, fn: str, obs: torch.Tensor, state: Any, starts: Any, *extra: torch.Tensor) -> list:
        """``(index, outputs of agent.fn on those rows)`` per group with rows in this batch."""
        out = []
        for idx, agent in zip(self.rows(obs.shape[0], obs.device), self.groups.values()):
            if idx.shape[0] == 0:
                continue
            sub_state = None if state is None else (state[0][idx], state[1][idx])
            sub_starts = None if starts is None else starts[idx]
            out.append((idx, getattr(agent, fn)(obs[idx], *[e[idx] for e in extra], sub_state, sub_starts)))
        return out

    @staticmethod
    def scatter(n: int, parts: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        first = parts[0][1]
        out = torch.empty((n, *first.shape[1:]), dtype=first.dtype, device=first.device)
        for idx, value in parts:
            out[idx] = value
        return out

    def gather_state(self, n: int, parts: list[tuple[torch.Tensor, Any]]) -> Any:
        if not self.lstm_size:
            return None
        return (self.scatter(n, [(i, s[0]) for i, s in parts]), self.scatter(n, [(i, s[1]) for i, s in parts]))

    def act(self, obs: torch.Tensor, state: Any = None, starts: torch.Tensor | None = None):
        """``(action, logprob, entropy, value, new_state)`` as :meth:`Agent.act`, each group on its rows."""
        parts = self.per_group("act", obs, state, starts)
        n = obs.shape[0]
        outs = [self.scatter(n, [(i, p[k]) for i, p in parts]) for k in range(4)]
        return (*outs, self.gather_state(n, [(i, p[4]) for i, p in parts]))

    def greedy(self, obs: torch.Tensor, state: Any = None, starts: torch.Tensor | None = None):
        return self.joined(obs.shape[0], self.per_group("greedy", obs, state, starts))

    def hidden(self, obs: torch.Tensor, state: Any, starts: torch.Tensor | None):
        return self.joined(obs.shape[0], self.per_group("hidden", obs, state, starts))

    def joined(self, n: int, parts: list) -> tuple[torch.Tensor, Any]:
        """``(output, new state)`` of per-group ``(output, state)`` pairs, back in row order."""
        return self.scatter(n, [(i, p[0]) for i, p in parts]), self.gather_state(n, [(i, p[1]) for i, p in parts])

    def heads(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, value)`` per row; a group with fewer actions than another (its own action space)
        has its logits padded with -1e9 (never sampled) to the widest group's."""
        n = hidden.shape[0]
        parts = [
            (idx, agent.heads(hidden[idx]))
            for idx, agent in zip(self.rows(n, hidden.device), self.agents.values())
            if idx.shape[0]
        ]
        width = max(p[0].shape[-1] for _, p in parts)
        logits = [(i, nn.functional.pad(p[0], (0, width - p[0].shape[-1]), value=-1e9)) for i, p in parts]
        return self.scatter(n, logits), self.scatter(n, [(i, p[1]) for i, p in parts])


class GroupLearner:
    """A :class:`Learner` per learning group, each trained only on its own segments.

    Same interface as :class:`Learner` for the trainer (``update``, ``state_dict``, ``load_weights``,
    ``nonfinite``, ``generator``, ``hp``); ``update`` takes ``rows``, the agent row of each segment.
    """

    def __init__(
        self, grouped: GroupedAgent, hp: TrainConfig, seed: int = 1, compile: bool = False, frozen: list[str] | tuple = ()
    ):
        self.grouped = grouped
        unknown = [g for g in frozen if g not in grouped.groups]
        if unknown:
            raise GroupError(f"league.frozen: unknown group {unknown[0]!r}; groups are {list(grouped.groups)}")
        self.frozen = list(frozen)
        if len(self.frozen) == len(grouped.groups):
            raise GroupError(
                f"league.frozen: every group ({', '.join(self.frozen)}) is frozen, so nothing "
                "learns; leave at least one group out of league.frozen"
            )
        self.learners = {
            name: Learner(agent, hp, seed=seed + i, compile=compile)
            for i, (name, agent) in enumerate(grouped.agents.items())
        }
        for name in self.frozen:
            grouped.groups[name].requires_grad_(False)
        self._hp = hp

    @property
    def hp(self) -> TrainConfig:
        return self._hp

    @hp.setter
    def hp(self, value: TrainConfig) -> None:
        self._hp = value
        for learner in self.learners.values():
            learner.hp = value

    @property
    def generator(self) -> torch.Generator:
        return next(iter(self.learners.values())).generator

    def restore_shuffle(self, state: torch.Tensor) -> None:
        next(iter(self.learners.values())).restore_shuffle(state)

    @property
    def nonfinite(self) -> int:
        return max((self.learners[name].nonfinite for name in self.learning), default=0)

    @property
    def learning(self) -> list[str]:
        return [name for name in self.learners if name not in self.frozen]

    def segments_of(self, rows: np.ndarray | None, count: int) -> dict[str, torch.Tensor]:
        rows = np.arange(count) if rows is None else np.asarray(rows)
        group = self.grouped.layout.slot_group[rows % self.grouped.agents_per_env]
        return {name: torch.from_numpy(np.nonzero(group == g)[0]) for g, name in enumerate(self.grouped.layout.names)}

    def update(
        self,
        batch: dict[str, torch.Tensor],
        progress: float = 0.0,
        rows: np.ndarray | None = None,
        targets: Any = None,
    ) -> dict[str, float]:
        """Each learning group's PPO update on its own segments; metrics ``<group>/<name>`` and their means.

        ``targets(agent, group_batch) -> group_batch`` re-bases a group's segments on its current policy
        first (V-trace for a batch acted by an older policy, ``train.overlap``)."""
        out: dict[str, float] = {}
        segments = self.segments_of(rows, len(batch["obs"]))
        for name in self.learning:
            idx = segments[name]
            if len(idx) == 0:
                continue
            idx = idx.to(batch["obs"].device)
            mine = {k: v[idx] for k, v in batch.items()}
            if targets is not None:
                mine = targets(self.grouped.groups[name], mine)
            losses = self.learners[name].update(mine, progress)
            out |= {f"{name}/{k}": v for k, v in losses.items()}
        for key in {k.split("/", 1)[1] for k in out}:
            values = [v for k, v in out.items() if k.endswith("/" + key) and np.isfinite(v)]
            out[key] = float(np.mean(values)) if values else float("nan")
        return out

    def reset_optimizer(self) -> None:
        for learner in self.learners.values():
            learner.reset_optimizer()

    def state_dict(self) -> dict[str, Any]:
        """``model`` (every group's weights) and per-group optimizer and shuffle RNG, with the slot layout."""
        layout = self.grouped.layout
        return {
            "model": self.grouped.state_dict(),
            "optimizer": {},
            "groups": {
                name: {
                    "optimizer": lr.optimizer.state_dict(),
                    "shuffle_rng": lr.generator.get_state(),
                    "slots": torch.tensor(layout.slots(name)),
                }
                for name, lr in self.learners.items()
            },
        }

    def load_weights(self, state: Mapping[str, Any]) -> None:
        if "groups" not in state:
            raise GroupError(
                "this checkpoint holds one shared policy, not agent groups; resume it without [groups] (or start a new run)"
            )
        if sorted(state["groups"]) != sorted(self.learners):
            raise GroupError(
                f"checkpoint groups {sorted(state['groups'])} differ from this run's "
                f"{sorted(self.learners)}; use the run's own [groups]"
            )
        for name, agent in self.grouped.groups.items():
            load_group(agent, name, state["model"])
        for name, learner in self.learners.items():
            learner.optimizer.load_state_dict(state["groups"][name]["optimizer"])
            learner.restore_shuffle(state["groups"][name]["shuffle_rng"])


class GroupScore:
    """Per-group episode returns from rollout batches: an env's episode ends where all its rows start.

    (A finished agent's row starts at every step, since absent agents are terminal, so only all rows
    of an env starting together marks the env's episode end.) Needs one segment per row per batch
    (synchronous backends); returns ``{group: [returns of finished episodes]}``.
    """

    def __init__(self, layout: GroupLayout, num_rows: int):
        self.layout, self.num_rows = layout, num_rows
        self.apr = len(layout.slot_group)
        self.acc = np.zeros(num_rows, dtype=np.float64)

    def add(self, batch: Mapping[str, torch.Tensor], rows: np.ndarray | None) -> dict[str, list[float]]:
        rows = np.arange(len(batch["rewards"])) if rows is None else np.asarray(rows)
        if len(rows) != self.num_rows or len(np.unique(rows)) != len(rows):
            return {}  # an async pool batch: rows are not aligned in time
        order = np.argsort(rows)
        rewards = batch["rewards"].detach().cpu().numpy()[order].astype(np.float64)
        starts = batch["starts"].detach().cpu().numpy()[order]
        envs = self.num_rows // self.apr
        ended = starts.reshape(envs, self.apr, -1).all(axis=1)  # (envs, T+1)
        out: dict[str, list[float]] = {name: [] for name in self.layout.names}
        acc = self.acc.reshape(envs, self.apr)
        for t in range(1, rewards.shape[1]):
            acc += rewards[:, t - 1].reshape(envs, self.apr)
            for e in np.nonzero(ended[:, t])[0]:
                for g, name in enumerate(self.layout.names):
                    out[name].append(float(acc[e, self.layout.slot_group == g].mean()))
                acc[e] = 0.0
        return out


def outcome(
    returns: Mapping[str, float], learners: list[str], rule: Any = None, env_kwargs: Mapping[str, Any] | None = None
) -> float:
    """The learners' score of one episode: with the env's outcome ``rule`` 1 if a learning group won,
    0.5 on a draw, else 0; without one, 1 if the learning groups' mean return beats every other group's,
    0.5 on a tie, else 0."""
    if rule is not None:
        won = winner(returns, rule, env_kwargs)
        return 1.0 if won in learners else 0.5 if won is None else 0.0
    mine = float(np.mean([returns[g] for g in learners]))
    others = [returns[g] for g in returns if g not in learners]
    if not others:
        return 0.5
    best = max(others)
    return 1.0 if mine > best else 0.5 if mine == best else 0.0


class Pool:
    """Snapshots of one group's policy in ``RUN_DIR/pool/<group>/snap-<update>.pt``, and the learners'
    results against each (``results.json``: ``{snapshot: [score sum, games]}``).

    Example:
        >>> import tempfile
        >>> pool = Pool(tempfile.mkdtemp(), "runner")
        >>> pool.sample("latest", np.random.default_rng(0)) is None
        True
    """

    def __init__(self, root: str | os.PathLike, group: str):
        self.dir = Path(root) / group
        self.results_path = self.dir / "results.json"

    def snapshots(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return sorted(self.dir.glob("snap-*.pt"), key=lambda p: int(p.stem.split("-")[1]))

    def add(self, update: int, weights: Mapping[str, torch.Tensor]) -> Path:
        from pufferbox.train.checkpoint import save_checkpoint

        path = save_checkpoint({"model": dict(weights)}, self.dir, update, keep=0)
        final = self.dir / f"snap-{update:08d}.pt"
        os.replace(path, final)
        return final

    def results(self) -> dict[str, list[float]]:
        if not self.results_path.is_file():
            return {}
        return json.loads(self.results_path.read_text())

    def record(self, snapshot: Path, scores: list[float]) -> None:
        """Add the learners' scores (1 win, 0.5 draw, 0 loss) against ``snapshot``."""
        if not scores:
            return
        results = self.results()
        total, games = results.get(snapshot.name, [0.0, 0])
        results[snapshot.name] = [total + float(sum(scores)), games + len(scores)]
        tmp = self.results_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(results))
        os.replace(tmp, self.results_path)

    def weights(self, mode: str) -> np.ndarray:
        snaps = self.snapshots()
        if mode == "uniform":
            return np.full(len(snaps), 1.0 / len(snaps))
        if mode == "latest":
            return np.eye(len(snaps))[-1]
        # prioritized (AlphaStar's PFSP "hard" weighting): favour snapshots the learners beat least,
        # f(p) = (1 - p)^2 with p the learners' win rate (Laplace-smoothed: unseen snapshots count as p = 0.5)
        results = self.results()
        p = np.array([(results.get(s.name, [0.0, 0])[0] + 1.0) / (results.get(s.name, [0.0, 0])[1] + 2.0) for s in snaps])
        w = (1.0 - p) ** 2 + 1e-6
        return w / w.sum()

    def sample(self, mode: str, rng: np.random.Generator) -> Path | None:
        """A snapshot drawn by ``mode`` (``latest``, ``uniform``, ``prioritized``), or None if empty."""
        if mode not in POOL_MODES:
            raise GroupError(f"league.pool: unknown mode {mode!r}; use one of {', '.join(POOL_MODES)}")
        snaps = self.snapshots()
        if not snaps or mode == "none":
            return None
        return snaps[int(rng.choice(len(snaps), p=self.weights(mode)))]


class League:
    """Snapshots of the learning groups and refills of the frozen ones, every few updates (the trainer's hook)."""

    def __init__(
        self,
        grouped: GroupedAgent,
        learner: GroupLearner,
        cfg: LeagueConfig,
        run_dir: str | None,
        seed: int,
        num_rows: int,
        rule: Any = None,
        env_kwargs: Mapping[str, Any] | None = None,
    ):
        self.grouped, self.learner, self.cfg = grouped, learner, cfg
        self.rule, self.env_kwargs = rule, dict(env_kwargs or {})  # the env's outcome rule (EnvSpec.outcome)
        self.score = GroupScore(grouped.layout, num_rows)
        if cfg.pool not in POOL_MODES:
            raise GroupError(f"league.pool: unknown mode {cfg.pool!r}; use one of {', '.join(POOL_MODES)}")
        if cfg.pool_source and cfg.pool_source not in grouped.groups:
            raise GroupError(f"league.pool_source: unknown group {cfg.pool_source!r}; groups are {list(grouped.groups)}")
        self.root = None if run_dir is None else Path(run_dir) / "pool"
        self.rng = np.random.default_rng(seed)
        self.active: dict[str, Path | None] = {name: None for name in learner.frozen}

    def record(self, update: int, rollout: Any) -> dict[str, Any]:
        """Per-group episode returns of ``rollout`` (metrics ``<group>/episode_return``) and the pool's turn."""
        returns = self.score.add(rollout.batch, rollout.rows)
        out: dict[str, Any] = {f"{name}/episode_return": float(np.mean(r)) if r else None for name, r in returns.items()}
        return out | self.after_update(update, returns)

    def pool(self, frozen: str) -> Pool:
        assert self.root is not None, "pools live in the run dir (after_update returns early without one)"
        return Pool(self.root, self.cfg.pool_source or frozen)

    def after_update(self, update: int, episode_returns: Mapping[str, list[float]]) -> dict[str, Any]:
        """Record results, snapshot learners, refill frozen groups; returns metrics for the update."""
        games = len(next(iter(episode_returns.values()), []))
        scores = [
            outcome({g: r[i] for g, r in episode_returns.items()}, self.learner.learning, self.rule, self.env_kwargs)
            for i in range(games)
        ]
        out = {"win_rate": float(np.mean(scores)) if scores else None}
        if self.root is None:
            return out
        for name, snap in self.active.items():
            if snap is not None:
                self.pool(name).record(snap, scores)
        if self.cfg.snapshot_interval and update % self.cfg.snapshot_interval == 0:
            for name in self.learner.learning:
                Pool(self.root, name).add(update, self.grouped.groups[name].state_dict())
        if self.learner.frozen and self.cfg.refresh_interval and update % self.cfg.refresh_interval == 0:
            self.refill()
        return out

    def refill(self) -> None:
        """Load a snapshot drawn from the pool into each frozen group (a group whose pool is empty keeps its weights)."""
        for name in self.learner.frozen:
            snap = self.pool(name).sample(self.cfg.pool, self.rng)
            if snap is not None:
                state = torch.load(snap, map_location="cpu", weights_only=True)["model"]
                self.grouped.groups[name].load_state_dict(state)
                self.active[name] = snap

    def use_pool(self, root: str | os.PathLike) -> None:
        """Draw the frozen groups from the pool under ``root`` (a tournament's copy of its leaderboard's
        policies) from now on, and refill them at once."""
        self.root = Path(root)
        self.refill()


def group_specs(layout: GroupLayout, name: str, venv: Any) -> tuple[ObservationSpec, ActionSpec]:
    """Group ``name``'s own flattening specs over ``venv``'s shared rows: its observation read from the
    start of each row (:class:`~pufferbox.spaces.InRow`), its own action space (e.g. MPE's speaker:
    3 actions where the listener has 5)."""
    if name not in layout.spaces:  # a layout built without the env (tests): the shared row specs
        return venv.obs_spec, venv.act_spec
    obs_space, act_space = layout.spaces[name]
    obs = venv.obs_spec if obs_space == venv.obs_spec.space else InRow(obs_space, venv.obs_spec, f"{name} observation")
    act = venv.act_spec if act_space == venv.act_spec.space else ActionSpec(act_space, f"{name} action")
    return obs, act


def load_group(agent: nn.Module, name: str, model: Mapping[str, torch.Tensor]) -> None:
    """Load group ``name``'s weights out of a grouped checkpoint's ``model``; one line if they do not fit."""
    prefix = f"groups.{name}."
    try:
        agent.load_state_dict({k[len(prefix) :]: v for k, v in model.items() if k.startswith(prefix)})
    except RuntimeError as exc:
        raise GroupError(
            f"group {name!r}: the checkpoint's policy does not fit this env's spaces for the group "
            f"({str(exc).splitlines()[0]}); was it trained with other [groups] or an older pufferbox?"
        ) from None


def grouped_agent(spec: Any, layout: GroupLayout, venv: Any, pc: Any) -> GroupedAgent:
    """One freshly drawn policy per group of ``layout`` (on the CPU), each on its own spaces."""
    from pufferbox.train.policies import build_agent

    agents = {name: build_agent(*group_specs(layout, name, venv), pc, spec.load_policy()) for name in layout.names}
    return GroupedAgent(agents, layout)


def build_groups(
    spec: Any,
    layout: GroupLayout,
    venv: Any,
    pc: Any,
    tc: TrainConfig,
    device: torch.device,
    run_dir: str | None,
    cfg: LeagueConfig,
    env_kwargs: Mapping[str, Any],
) -> tuple[GroupedAgent, GroupLearner, League]:
    """The grouped agent, its learners and league for a run whose env has agent groups."""
    grouped = grouped_agent(spec, layout, venv, pc).to(device)
    learner = GroupLearner(grouped, tc, seed=tc.seed, compile=tc.compile, frozen=cfg.frozen)
    rule = spec.training.outcome
    league = League(grouped, learner, cfg, run_dir, tc.seed, venv.num_agents, rule, env_kwargs)
    return grouped, learner, league
