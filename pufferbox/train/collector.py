"""Collectors: the env <-> policy loop that fills a rollout, on the host or on the kernels' device.

A :class:`Collector` owns everything between a vector env and the policy while acting: the
actions chosen but not yet sent, each row's recurrent state, which row starts an episode,
(re)seeding the envs and the episodes that ended. ``collect()`` returns a :class:`Collected`:
full *segments* as one batch of tensors ``(segments, horizon + 1, ...)`` on the learner's
device (keys ``obs actions logprobs values rewards starts masks`` and ``h c`` for an LSTM),
the env steps they hold, the finished :class:`~pufferbox.episodes.Episodes` and rollout metrics.

Both act through :mod:`pufferbox.train.act` (the one act step, also the Ray actors' and league matches').

* :class:`HostCollector` (serial, multiprocessing, grouped envs on ray): numpy rows from ``recv()``. Every agent
  row (``env_id * agents_per_env + agent``) writes its own segment along its own time axis, so an
  async pool (batches of any envs, in any order) keeps every row's steps in order; a full
  segment's last obs is also the first obs of the row's next one. A batch is ready once
  ``num_rows`` segments are full (PufferLib's "train on full segments").
* :class:`DeviceCollector` (``--backend cuda``): ``recv()`` returns tensors on the kernels' device;
  every env steps at once, so each row owns one segment. The step loop makes no host<->device
  transfer (discrete actions come from the backend's sampler kernel); episode statistics and the
  plugin's event counts (``CudaImplementation.events``, e.g. Tag's ``tagged`` -> ``tag_rate``) are
  read once per rollout.

Autoreset is SAME_STEP: the obs that comes with ``done`` starts the next episode, so
``starts[row, t]`` is CleanRL's ``dones[t]``; ``masks[row, t]`` False marks a padded agent slot.

Truncation (a time limit, not the end of the task): with ``bootstrap_gamma`` > 0 every collector
(host, device, Ray) stores the reward of a truncated, not terminated step as
``r + gamma * V(final obs)``, the value of the episode's last observation
(``venv.final_observations()``, kept by the backend past the autoreset), so the return is cut
there without pretending the task ended (SB3's fix of the time-limit bias). Native blocks that do
not keep final observations leave truncation counted as termination.

Example:
    >>> collector = HostCollector(venv, agent, horizon=32, device="cpu")         # doctest: +SKIP
    >>> collector.reset(seed=1)                                                 # doctest: +SKIP
    >>> got = collector.collect(); got.batch["obs"].shape, got.steps            # doctest: +SKIP
    (torch.Size([8, 33, 4]), 256)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from gymnasium import spaces

from pufferbox.episodes import Episodes
from pufferbox.spaces import sample_legal
from pufferbox.train.act import (
    ActStep,
    NonFiniteInput,
    RowActing,
    bootstrapped,
    discrete_sampler,
    rollout_fields,
    rollout_schema,
)
from pufferbox.train.config import ConfigError, VecConfig
from pufferbox.train.hardware import pick_device  # re-exported: callers import it from here
from pufferbox.vector.base import LOGITS_NOT_FINITE, OBSERVATION_NOT_FINITE, VectorEnv

if TYPE_CHECKING:
    from pufferbox.vector.cuda import CudaVectorEnv
    from pufferbox.vector.ray_rollout import RayRollouts

__all__ = [
    "Collected",
    "Collector",
    "HostCollector",
    "DeviceCollector",
    "NonFiniteInput",
    "PlayedStep",
    "Rollout",
    "make_vec_env",
    "pick_device",
]


@dataclass
class Collected:
    """One rollout: the batch of full segments, the env steps in it, episodes that ended, metrics."""

    batch: dict[str, torch.Tensor]
    steps: int
    episodes: Episodes
    metrics: dict[str, float] = field(default_factory=dict)
    rows: np.ndarray | None = None  # the agent row of each segment (None: segment i is row i)


class Collector(Protocol):
    """What the trainer, evaluation and tournament pods need from an act loop (host, device, Ray, overlap)."""

    @property
    def venv(self) -> VectorEnv | RayRollouts:
        """The envs it steps (a vector env, or Ray's rollout actors)."""

    @property
    def horizon(self) -> int:
        """Steps per segment of a full rollout."""

    @property
    def phase_time(self) -> dict[str, float]:
        """Seconds in "env" (send/recv) and "inference" (the policy)."""

    def reset(self, seed: int) -> None:
        """Re-seed the envs and start over: no pending actions, zero recurrent state, every row starts."""

    def restart(self) -> int:
        """Keep the envs running but drop the rollout and recurrent state; returns the env steps the
        actions still pending will take unrecorded."""

    def collect(self, horizon: int | None = None) -> Collected:
        """Step until a batch of full segments is ready; ``horizon`` (at most the collector's) cuts this
        rollout's segments short (the last rollout of a step budget)."""

    def close(self) -> None:
        """Stop what runs beside the trainer (a rollout in flight); the envs are the trainer's to close."""


def make_vec_env(
    spec: Any,
    vec: VecConfig,
    env_kwargs: Mapping[str, Any],
    seed: int = 1,
    horizon: int = 128,
) -> VectorEnv:
    """The vector env ``vec`` describes; ``--backend cuda`` seeds its kernels from ``seed`` and keeps room
    for the episodes ``horizon`` steps can end; ``--backend ray`` joins the cluster at ``vec.ray_address``."""
    import pufferbox.vector

    kwargs: dict[str, Any] = {}
    if vec.num_workers:
        kwargs["num_workers"] = vec.num_workers
    if vec.batch_size:
        kwargs["batch_size"] = vec.batch_size
    if vec.main_envs:
        kwargs["main_envs"] = vec.main_envs
    if vec.backend in ("serial", "multiprocessing", "ray"):  # the backends with envs or workers to wait for
        kwargs["step_timeout"] = vec.step_timeout
    if vec.backend == "ray" and vec.ray_address:
        kwargs["address"] = vec.ray_address
    if vec.backend == "cuda":
        from pufferbox.vector.cuda import DEFAULT_SLOTS  # episodes an env may end between two reads

        kwargs.update(device=vec.device, seed=seed * 1_000_003, episode_slots=max(DEFAULT_SLOTS, horizon // 4))
    elif vec.device != "gpu":
        raise ConfigError(
            f"vec.device={vec.device!r} only applies to --backend cuda (where the kernels run); "
            f"drop it or add --backend cuda"
        )
    return pufferbox.vector.make(
        spec,
        backend=vec.backend,
        num_envs=vec.num_envs,
        env_kwargs=dict(env_kwargs),
        native=vec.native,
        check_obs=vec.check_obs,
        **kwargs,
    )


class Rollout:
    """Host storage in *segments* of ``horizon`` transitions (+1 bootstrap obs) each.

    Torch tensors on the CPU with numpy views for cheap writes. With a pool, fast rows may fill
    several segments while slow ones fill part of one, hence the spare segments.
    """

    # the rollout's arrays (rollout_schema): torch tensors and their numpy views (np_ + name)
    obs: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    starts: torch.Tensor
    masks: torch.Tensor
    h: torch.Tensor
    c: torch.Tensor
    np_obs: np.ndarray
    np_actions: np.ndarray
    np_logprobs: np.ndarray
    np_values: np.ndarray
    np_rewards: np.ndarray
    np_starts: np.ndarray
    np_masks: np.ndarray
    np_h: np.ndarray
    np_c: np.ndarray

    def __init__(self, rows: int, segments: int, horizon: int, schema: Mapping[str, tuple[tuple, np.dtype]]):
        self.rows, self.segments, self.horizon = rows, segments, horizon
        self.lstm = "h" in schema
        for name, (shape, dtype) in schema.items():  # attributes NAME (torch) and np_NAME (its numpy view)
            t = torch.from_numpy(np.zeros((segments, horizon + 1, *shape), dtype=dtype))
            setattr(self, name, t)
            setattr(self, "np_" + name, t.numpy())
        self.clear()

    def clear(self) -> None:
        self.seg = np.arange(self.rows)  # the segment each row writes to
        self.seg_row = np.arange(self.segments) % self.rows  # the row each segment holds (agent groups)
        self.ptr = np.zeros(self.rows, dtype=np.int64)  # obs stored in it so far
        self.full = np.zeros(self.segments, dtype=bool)
        self.free = list(range(self.rows, self.segments))
        self.waiting = np.zeros(0, dtype=np.int64)  # rows with a full segment and no fresh one yet

    def arrays(self) -> list[np.ndarray]:
        return [getattr(self, "np_" + name) for name in rollout_fields(self.lstm)]

    def take(self, segs: np.ndarray) -> dict[str, torch.Tensor]:
        """Copies of segments ``segs`` of every stored array, ``(len(segs), horizon + 1, ...)``."""
        idx = torch.from_numpy(segs)
        return {name: getattr(self, name)[idx] for name in rollout_fields(self.lstm)}

    def carry(self, rows: np.ndarray, new_segs: np.ndarray) -> None:
        """Move ``rows`` to ``new_segs``, whose first step is the last step stored in their old segment
        (``horizon``, or less after a rollout cut short)."""
        old, last = self.seg[rows], self.ptr[rows] - 1
        for arr in self.arrays():
            arr[new_segs, 0] = arr[old, last]
        self.seg[rows] = new_segs
        self.seg_row[new_segs] = rows
        self.ptr[rows] = 1

    def finish(self, rows: np.ndarray) -> None:
        """``rows`` filled their segments: mark them full, give the rows fresh ones while any are free."""
        self.full[self.seg[rows]] = True
        k = min(len(self.free), len(rows))
        if k:
            take, self.free = self.free[:k], self.free[k:]
            self.carry(rows[:k], np.asarray(take))
        self.waiting = np.concatenate([self.waiting, rows[k:]])

    def ready(self) -> bool:
        return len(self.waiting) > 0 or int(self.full.sum()) >= self.rows

    def release(self, segs: np.ndarray) -> None:
        """Taken segments become free; rows waiting for one continue in them."""
        self.full[segs] = False
        self.free.extend(int(s) for s in segs)
        if len(self.waiting):
            waiting, self.waiting = self.waiting, np.zeros(0, dtype=np.int64)
            take, self.free = self.free[: len(waiting)], self.free[len(waiting) :]
            self.carry(waiting, np.asarray(take))


class RandomSeats:
    """Self-play's careless opponent (``league.random_opponent``): at each episode start an env, with
    probability ``share``, hands one of its groups (drawn uniformly) to uniformly random legal actions for
    the whole episode; those rows' samples are masked out of training (as a waiting agent's are).

    Example:
        >>> from gymnasium import spaces
        >>> from pufferbox.spaces import ActionSpec, ObservationSpec
        >>> seats = RandomSeats(1.0, np.array([0, 1]), 2, ObservationSpec(spaces.Box(0, 1, (3,))),
        ...                     ActionSpec(spaces.Discrete(4)), seed=0)
        >>> actions, masks = np.zeros(4, np.int64), np.ones(4, bool)
        >>> masks = seats.apply(np.arange(4), np.zeros((4, 3), np.float32), np.ones(4, bool), actions, masks)
        >>> int(masks.sum())  # one row of each env plays at random, untrained
        2
    """

    def __init__(self, share: float, slot_group: np.ndarray, num_envs: int, obs_spec: Any, act_spec: Any, seed: int):
        flat = act_spec.flat_space
        if not act_spec.discrete:
            raise ConfigError(f"league.random_opponent: random legal actions need discrete actions, not {flat}")
        self.sizes = (int(flat.n),) if isinstance(flat, spaces.Discrete) else tuple(int(n) for n in flat.nvec.ravel())
        self.share, self.slot_group, self.mask = share, np.asarray(slot_group), obs_spec.mask
        self.groups, self.apr = int(self.slot_group.max()) + 1, len(self.slot_group)
        self.rng = np.random.default_rng(seed)
        self.random_group = np.full(num_envs, -1)  # per env: the group playing at random this episode, or -1

    def apply(
        self, rows: np.ndarray, obs: np.ndarray, starts: np.ndarray, actions: np.ndarray, masks: np.ndarray
    ) -> np.ndarray:
        """Redraw the random group of envs starting an episode, overwrite its rows' ``actions`` in place
        with uniform legal ones; returns ``masks`` with those rows off."""
        envs = rows[:: self.apr] // self.apr
        fresh = envs[starts.reshape(-1, self.apr).all(1)]
        if len(fresh):
            pick = self.rng.random(len(fresh)) < self.share
            self.random_group[fresh] = np.where(pick, self.rng.integers(self.groups, size=len(fresh)), -1)
        chosen = self.random_group[rows // self.apr] == self.slot_group[rows % self.apr]
        if not chosen.any():
            return masks
        legal = self.mask.legal(obs[chosen]) if self.mask is not None else np.ones((chosen.sum(), sum(self.sizes)), bool)
        actions[chosen] = self.pick(rows[chosen], obs[chosen], legal).reshape(actions[chosen].shape)
        return masks & ~chosen

    def pick(self, rows: np.ndarray, obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The careless group's actions in ``rows`` (uniform legal ones; a subclass may script them)."""
        return sample_legal(legal, self.sizes, self.rng)


@dataclass
class PlayedStep:
    """One ``recv`` of :meth:`HostCollector.play_steps`: the batch's agent rows, their rewards, which rows
    start an episode (``first``: the collector's first one, not an env's reset) and the episodes that ended."""

    rows: np.ndarray
    rewards: np.ndarray
    starts: np.ndarray
    first: np.ndarray
    episodes: Episodes


class NoLegalAction(ConfigError):
    """An acting agent's action mask allows no choice (all zeros): a broken env, named in one line."""


def check_some_legal(mask: Any, obs: np.ndarray, acting: np.ndarray, rows: np.ndarray, apr: int, env: str) -> None:
    """Raise :class:`NoLegalAction` naming the env and agent row of the first acting row whose ``mask``
    leaves some part of its action without a legal choice."""
    legal, empty, start = mask.legal(obs), np.zeros(len(obs), bool), 0
    for n in mask.sizes:
        empty |= ~legal[:, start : start + n].any(1)
        start += n
    empty &= np.asarray(acting, bool)
    if empty.any():
        row = int(rows[int(np.argmax(empty))])
        raise NoLegalAction(
            f"{env}: env {row // apr} (agent row {row}) gave its acting agent an action mask of all zeros (no legal "
            f"action); fix the env's mask (`pufferbox check {env} --check masks` finds the step)"
        )


class HostCollector:
    """The act loop over a CPU backend: ``recv -> store -> act -> send`` into a :class:`Rollout`."""

    def __init__(
        self,
        venv: VectorEnv,
        agent: Any,
        horizon: int,
        device: torch.device | str = "cpu",
        compile: bool = False,
        bootstrap_gamma: float = 0.0,
        compile_mode: str = "default",
    ):
        self.venv, self.agent, self.horizon, self.device = venv, agent, horizon, torch.device(device)
        self.bootstrap_gamma = bootstrap_gamma  # truncated steps: r + gamma * V(final obs) (0: off)
        self.num_rows, self.agents_per_env = venv.num_agents, venv.agents_per_env
        self.acting = RowActing(agent, venv.act_spec, self.num_rows, self.agents_per_env, self.device, compile, compile_mode)
        self.action_mask = venv.obs_spec.mask
        pool = venv.batch_envs != venv.num_envs  # rows can run ahead: spare segments
        schema = rollout_schema(venv.obs_spec, venv.act_spec, agent.lstm_size)
        self.rollout = Rollout(self.num_rows, self.num_rows * (2 if pool else 1), horizon, schema)
        self.all_env_ids, self.all_rows = np.arange(venv.num_envs), np.arange(self.num_rows)
        self.first = np.ones(self.num_rows, dtype=bool)  # next obs of this row starts an episode
        self.pending: np.ndarray | None = None  # actions chosen for the last stored step, not yet sent
        self.phase_time = {"env": 0.0, "inference": 0.0}
        self.random_seats: RandomSeats | None = None  # league.random_opponent's careless seats

    @property
    def norm(self) -> Any:
        """The :class:`~pufferbox.train.normalize.Normalizer` (or None): what the policy sees and learns from."""
        return self.acting.norm

    @norm.setter
    def norm(self, normalizer: Any) -> None:
        self.acting.norm = normalizer

    def reset(self, seed: int) -> None:
        self.venv.async_reset(seed)
        self.restart()
        self.pending = None

    def restart(self) -> int:
        self.rollout.clear()
        self.first[:] = True
        self.acting.restart()
        return self.num_rows if self.pending is not None else 0

    def close(self) -> None:
        """Nothing runs beside the trainer's thread here."""

    def collect(self, horizon: int | None = None) -> Collected:
        steps = self.horizon if horizon is None else max(1, min(horizon, self.horizon))
        episodes: list[Episodes] = []
        while True:
            rows = self.step(episodes)
            done_rows = rows[self.rollout.ptr[rows] >= steps + 1]
            if len(done_rows):
                self.rollout.finish(done_rows)
                if self.rollout.ready():
                    segs = np.nonzero(self.rollout.full)[0]
                    batch = {k: v[:, : steps + 1].to(self.device) for k, v in self.rollout.take(segs).items()}
                    rows_of_segs = self.rollout.seg_row[segs].copy()
                    self.rollout.release(segs)  # ``take`` copied them
                    return Collected(batch, len(segs) * steps, Episodes.concat(episodes), rows=rows_of_segs)

    def rows_of(self, env_ids: np.ndarray) -> np.ndarray:
        if len(env_ids) == len(self.all_env_ids) and np.array_equal(env_ids, self.all_env_ids):
            return self.all_rows
        return (np.asarray(env_ids)[:, None] * self.agents_per_env + np.arange(self.agents_per_env)).reshape(-1)

    def step(self, episodes: list[Episodes]) -> np.ndarray:
        """Send the pending actions, store what comes back, choose the next actions; returns the rows."""
        ro = self.rollout
        t0 = time.perf_counter()
        if self.pending is not None:
            self.venv.send(self.pending)
        obs, rewards, terminals, truncations, ended, env_ids, masks = self.venv.recv()
        t1 = time.perf_counter()
        self.phase_time["env"] += t1 - t0
        rows = self.rows_of(env_ids)
        if self.action_mask is not None:  # before normalization: the raw mask
            check_some_legal(self.action_mask, obs, masks, rows, self.agents_per_env, self.venv.env_name)
        obs = self.acting.observe(obs, rows)
        if self.norm is not None:
            rewards = self.norm.scale(rewards, rows, terminals | truncations)
        if self.bootstrap_gamma:
            cut = truncations & ~terminals
            final = self.venv.final_observations() if cut.any() else None
            rewards = self.acting.bootstrap(rewards, obs, final, cut, rows, self.bootstrap_gamma)
        seg, ptr = ro.seg[rows], ro.ptr[rows]
        has_prev = ptr > 0  # the reward belongs to the transition stored one slot back
        ro.np_rewards[seg[has_prev], ptr[has_prev] - 1] = rewards[has_prev]
        starts = np.logical_or(terminals, truncations) | self.first[rows]
        self.first[rows] = False
        if len(ended):
            episodes.append(ended)
        ro.np_obs[seg, ptr] = obs
        ro.np_starts[seg, ptr] = starts
        state = self.acting.state
        if state is not None:
            ro.np_h[seg, ptr], ro.np_c[seg, ptr] = state[0][rows].numpy(), state[1][rows].numpy()
        self.pending, action, logprob, value = self.choose(obs, starts, rows)
        if self.random_seats is not None:  # discrete actions: what is sent is what is stored
            masks = self.random_seats.apply(rows, obs, starts, action, masks)
        ro.np_masks[seg, ptr] = masks
        ro.np_actions[seg, ptr] = action
        ro.np_logprobs[seg, ptr] = logprob
        ro.np_values[seg, ptr] = value
        ro.ptr[rows] = ptr + 1
        self.phase_time["inference"] += time.perf_counter() - t1
        return rows

    def choose(self, obs: np.ndarray, starts: np.ndarray, rows: np.ndarray, greedy: bool = False) -> tuple:
        """``(actions to send, actions, logprobs, values)`` of ``rows`` (:meth:`RowActing.act`)."""
        return self.acting.act(obs, starts, rows, greedy)

    def play_steps(self, greedy: bool = False) -> Iterator[PlayedStep]:
        """Act without storing anything, one :class:`PlayedStep` per ``recv`` (its actions already chosen,
        so a caller that stops leaves the collector ready to go on), for as long as the caller iterates
        (evaluation, league matches); ``greedy``: the policy's mode."""
        while True:
            if self.pending is not None:
                self.venv.send(self.pending)
            obs, rewards, terminals, truncations, finished, env_ids, _ = self.venv.recv()
            rows = self.rows_of(env_ids)
            first = self.first[rows]
            starts = np.logical_or(terminals, truncations) | first
            self.first[rows] = False
            obs = self.acting.observe(obs, rows)
            self.pending = self.choose(obs, starts, rows, greedy)[0]
            yield PlayedStep(rows, rewards, starts, first, finished)

    def play(self, episodes: int, greedy: bool = False, on_step: Callable[[Episodes], None] | None = None) -> Episodes:
        """Act without storing anything until ``episodes`` episodes ended (evaluation); returns them.

        ``on_step(finished)`` runs after every ``recv`` with the episodes that step ended (e.g. to render
        a frame); ``greedy`` takes the policy's mode.
        """
        ended: list[Episodes] = []
        for played in self.play_steps(greedy):
            if on_step is not None:
                on_step(played.episodes)
            if len(played.episodes):
                ended.append(played.episodes)
            if sum(len(e) for e in ended) >= episodes:
                break
        return Episodes.concat(ended)


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype=dtype)).dtype


class DeviceCollector:
    """One segment of ``horizon`` (+1) transitions per agent row, as tensors on ``venv.device``.

    ``agent`` is a :class:`~pufferbox.train.policies.Agent` already on that device; ``events`` maps
    kernel state arrays that flag an event of the current step to the metric reporting their rate
    (events per env and step over the rollout), as the plugin declares in ``CudaImplementation.events``.
    """

    obs: torch.Tensor  # the rollout's arrays (rollout_schema), (rows, horizon + 1, ...) each
    actions: torch.Tensor
    logprobs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    starts: torch.Tensor
    masks: torch.Tensor
    h: torch.Tensor
    c: torch.Tensor

    def __init__(
        self,
        venv: CudaVectorEnv,
        agent: Any,
        horizon: int,
        events: Mapping[str, str] | None = None,
        bootstrap_gamma: float = 0.0,
    ):
        self.venv, self.agent, self.horizon = venv, agent, horizon
        self.device = torch.device(venv.device)
        self.rows = self.num_rows = venv.num_agents
        self.num_envs = venv.num_envs
        obs_spec, act_spec = venv.obs_spec, venv.act_spec

        def tensor(shape: tuple, dtype: Any) -> torch.Tensor:
            return torch.zeros((self.rows, horizon + 1, *shape), dtype=dtype, device=self.device)

        schema = rollout_schema(obs_spec, act_spec, agent.lstm_size)
        for name, (shape, dtype) in schema.items():
            setattr(self, name, tensor(shape, torch_dtype(dtype)))
        self.lstm = "h" in schema
        # Truncated rows keep their final observation per slot; their bootstrap values are computed
        # once per rollout, only for the slots where some row was cut (one host sync to find them).
        final = venv.final_observations() if bootstrap_gamma else None
        self.bootstrap_gamma = bootstrap_gamma if final is not None else 0.0
        if self.bootstrap_gamma:
            self.final_obs = tensor((obs_spec.flat_size,), torch_dtype(obs_spec.flat_dtype))
            self.cut = tensor((), torch.bool)
        # Discrete actions come from the backend's sampler kernel (one launch, written where the env reads them).
        self.act_step = ActStep(agent, act_spec, self.device, sampler=discrete_sampler(venv, act_spec, agent))
        self.events = {  # the kernels' per-env event flags, where they keep any
            metric: flag for name, metric in (events or {}).items() if (flag := venv.state_tensor(name)) is not None
        }
        self.phase_time = {"env": 0.0, "inference": 0.0}
        # Per row: a NaN/inf observation (0) or log-prob (1) seen during this collect; read once at its end.
        self.nonfinite = torch.zeros((2, self.rows), dtype=torch.bool, device=self.device)
        self.float_obs = self.obs.is_floating_point()
        self.restart()

    def reset(self, seed: int) -> None:
        """Kernel envs are seeded once, when built (their reset is a no-op): start the rollout over."""
        self.venv.async_reset(seed)
        self.restart()

    def restart(self) -> int:
        """Start over from the envs' current observations: every row begins an episode, LSTM state zero."""
        self.state = self.agent.initial_state(self.rows, self.device)
        self.pending: torch.Tensor | None = None  # actions chosen for the last stored step, not yet sent
        self.fresh = True
        self.event_totals: dict[str, torch.Tensor] = {}  # device scalars, summed during a collect
        self.sent_steps = 0
        self.last = self.horizon  # the slot of the last stored step (less after a rollout cut short)
        return 0

    @property
    def use_sampler(self) -> bool:
        """Whether the backend's sampler kernel draws the actions (else torch samples)."""
        return self.act_step.sampler is not None

    @use_sampler.setter
    def use_sampler(self, on: bool) -> None:
        self.act_step.sampler = discrete_sampler(self.venv, self.venv.act_spec, self.agent) if on else None

    def close(self) -> None:
        """Nothing runs beside the trainer's thread here."""

    def arrays(self) -> list[torch.Tensor]:
        return list(self.batch().values())

    def batch(self) -> dict[str, torch.Tensor]:
        """Every row's segment, in row order, no copies (the next :meth:`collect` overwrites them)."""
        return {name: getattr(self, name) for name in rollout_fields(self.lstm)}

    @torch.no_grad()
    def collect(self, horizon: int | None = None) -> Collected:
        """Fill every row's segment (``horizon`` steps, at most the collector's). The steps (:meth:`step`)
        make no host<->device transfer; the reads after them (episode statistics, event totals) are the only ones."""
        steps = self.horizon if horizon is None else max(1, min(horizon, self.horizon))
        first = 0
        if self.pending is not None:  # the last step of the previous rollout is this one's first
            for x in self.arrays():
                x[:, 0] = x[:, self.last]
            first = 1
        self.event_totals = {metric: torch.zeros((), dtype=torch.int64, device=self.device) for metric in self.events}
        self.sent_steps = 0
        self.nonfinite.zero_()
        for t in range(first, steps + 1):
            self.step(t)
        self.check_finite()
        self.last = steps
        if self.bootstrap_gamma:
            self.bootstrap_truncated(first, steps)
        t0 = time.perf_counter()
        episodes = self.venv.episode_stats()
        per_env_step = max(1, self.num_envs * self.sent_steps)
        metrics = {metric: float(total) / per_env_step for metric, total in self.event_totals.items()}
        metrics["episodes_dropped"] = float(self.venv.episodes_dropped)
        self.phase_time["env"] += time.perf_counter() - t0
        batch = {name: x[:, : steps + 1] for name, x in self.batch().items()}
        return Collected(batch, self.rows * steps, episodes, metrics)

    def check_finite(self) -> None:
        """Raise :class:`NonFiniteInput` naming the first env whose observation or log-prob was NaN/inf in
        this collect (one host read per collect: the steps never wait for the device)."""
        seen = self.nonfinite.any(dim=1).tolist()
        if not any(seen):
            return
        kind = 0 if seen[0] else 1
        row = int(self.nonfinite[kind].nonzero()[0])
        env = row // (self.rows // self.num_envs)
        raise NonFiniteInput((OBSERVATION_NOT_FINITE if kind == 0 else LOGITS_NOT_FINITE).format(env=env, row=row))

    def bootstrap_truncated(self, first: int, steps: int) -> None:
        """Add ``bootstrap_gamma * V(final obs)`` to the reward before each slot where a row was truncated.

        Every row of such a slot goes through the policy (grouped policies see the rows they expect),
        with the LSTM state the row carried into that slot (no reset)."""
        # one device->host copy of a flag per slot (nonzero() on the device would read its size, then the list)
        cut_slots = self.cut[:, first : steps + 1].any(dim=0).cpu().nonzero().flatten().tolist()
        for t in (first + i for i in cut_slots):
            state = (self.h[:, t], self.c[:, t]) if self.lstm else None
            value = self.act_step.value(self.final_obs[:, t], state)
            self.rewards[:, t - 1] = bootstrapped(self.rewards[:, t - 1], value, self.cut[:, t], self.bootstrap_gamma)

    def step(self, t: int) -> None:
        """Send the pending actions, store what comes back at slot ``t``, choose the next actions."""
        t0 = time.perf_counter()
        if self.pending is not None:
            self.venv.send(self.pending)
            self.sent_steps += 1
        obs, rewards, terminals, truncations, _, _, masks = self.venv.recv()
        t1 = time.perf_counter()
        if t > 0:  # the reward belongs to the transition stored one slot back
            self.rewards[:, t - 1] = rewards
        if self.pending is not None:
            for metric, flags in self.events.items():
                self.event_totals[metric] += flags.sum()
        starts = terminals | truncations
        if self.bootstrap_gamma:
            self.cut[:, t] = truncations & ~terminals & (t > 0)
            self.final_obs[:, t] = self.venv.final_observations()
        if self.fresh:
            starts.fill_(True)
            self.fresh = False
        if self.float_obs:  # flagged, and zeroed so the policy's sampler never sees them (a device assert)
            self.nonfinite[0] |= ~torch.isfinite(obs).all(dim=-1)
            obs = obs.nan_to_num(0.0, 0.0, 0.0)
        self.obs[:, t] = obs
        self.starts[:, t] = starts
        self.masks[:, t] = masks
        if self.lstm:
            self.h[:, t], self.c[:, t] = self.state
        acted = self.act_step(obs, self.state, starts)
        assert acted.logprobs is not None and acted.values is not None  # sampled, not greedy
        self.state = acted.state
        self.nonfinite[1] |= ~torch.isfinite(acted.logprobs)
        self.actions[:, t] = acted.actions.reshape(self.actions[:, t].shape)
        self.logprobs[:, t] = acted.logprobs
        self.values[:, t] = acted.values
        self.pending = self.act_step.sendable(acted.actions)  # the sampler's: already in the env's action buffer
        self.phase_time["env"] += t1 - t0
        self.phase_time["inference"] += time.perf_counter() - t1
