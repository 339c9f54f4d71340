"""Remote rollouts on Ray: each actor steps its block of envs K steps per call, next to what acts on them.

One Ray call per actor carries K steps of simulation (K = the rollout horizon when training;
:meth:`RayRollouts.auto_steps` picks K from the measured step time so a call carries at least
``min_call_seconds``, default 10 ms, when stepping without a policy). This layer only steps envs:
what chooses the actions is the actor's *acting half* (the :class:`Acting` protocol), built on the
actor by :meth:`RayRollouts.set_acting` from a picklable factory; training sends
:class:`pufferbox.train.ray_collector.PolicyActing` (a copy of the policy, the host collector's act
step on the actor's CPU). Without one, :class:`RandomActing` takes uniform random actions
(benchmarks). An actor returns one *segment* per row as contiguous numpy arrays ``(rows, K + 1, ...)``
(the acting half's schema: at least :func:`~pufferbox.vector.base.env_schema`'s ``obs actions rewards starts masks``) plus
the :class:`~pufferbox.episodes.Episodes` that ended; Ray hands numpy arrays to the driver from its
object store without pickling them (zero-copy).

Slot ``K`` of a segment (last obs, the action chosen there) is slot 0 of the actor's next one, as in
:class:`pufferbox.train.collector.Rollout`. Weights go out once per update: :meth:`RayRollouts.set_weights`
``ray.put``\\ s them (numpy arrays: one copy per node's object store) and each actor loads the new
version with its next rollout, so a rollout submitted after ``set_weights`` acts with exactly those
weights. :meth:`RayRollouts.wait` returns the first actors done (``ray.wait``); an actor that died
(``ray.kill``, a lost node) is replaced, its envs rebuilt from the seeds of the last reset, and the
steps it had in flight are counted in :attr:`RayRollouts.lost_steps`.

Example:
    >>> rollouts = RayRollouts(EnvFactory(spec), num_envs=8, num_workers=2)   # doctest: +SKIP
    >>> rollouts.reset(seed=1); rollouts.submit_idle(steps=64)                # doctest: +SKIP
    >>> [r.arrays["obs"].shape for r in rollouts.wait(2)]                     # doctest: +SKIP
    [(4, 65, 4), (4, 65, 4)]
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from pufferbox.buffers import Buffers
from pufferbox.episodes import Episodes
from pufferbox.spaces import ActionSpec, ObservationSpec
from pufferbox.vector.base import (
    OBSERVATION_NOT_FINITE,
    EnvFactory,
    NonFiniteActing,
    VectorConfigError,
    WorkerError,
    WorkerTimeoutError,
    check_step_timeout,
    env_schema,
    first_non_finite_row,
)
from pufferbox.vector.ray import ensure_ray, stop_actors
from pufferbox.vector.stepper import BlockStepper

__all__ = ["Acting", "RandomActing", "RayRollouts", "RolloutResult", "RolloutWorker", "WorkerRows"]

MIN_CALL_SECONDS = 0.01  # simulation one call should carry, so Ray's per-call cost (~0.3 ms) is amortized
MAX_AUTO_STEPS = 4096
STARTUP_SECONDS = 120.0  # setup calls (reset, policy) may wait for actor processes to start on a busy node
SUSPECT_SECONDS = 60.0  # a node that lost an actor gets no replacement for this long (unless it is the only one)
SETUP_ATTEMPTS = 3  # a setup call re-sent to a replacement actor at most this often before giving up


@dataclass
class RolloutResult:
    """One actor's answer: ``arrays`` (rows, steps + 1, ...), the episodes that ended, timing."""

    worker: int
    steps: int
    version: int  # the weights version the actor acted with (0: initial or random actions)
    arrays: dict[str, np.ndarray]
    episodes: Episodes
    env_seconds: float  # time the actor spent stepping envs (inference excluded)


def random_actions(space: Any, rng: np.random.Generator, rows: int) -> np.ndarray:
    """``rows`` uniform actions of a flat Discrete, MultiDiscrete, Box or hybrid space."""
    from gymnasium import spaces

    from pufferbox.spaces import HybridRow

    if isinstance(space, HybridRow):
        parts = (random_actions(space.discrete, rng, rows), random_actions(space.continuous, rng, rows))
        return np.concatenate(parts, axis=-1).astype(np.float32)
    if isinstance(space, spaces.Discrete):
        return rng.integers(space.start, space.start + space.n, rows)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, (rows, *space.nvec.shape)) + space.start
    low, high = np.maximum(space.low, -1.0), np.minimum(space.high, 1.0)  # unbounded Box: [-1, 1]
    return rng.uniform(low, high, (rows, *space.shape)).astype(space.dtype)


@dataclass(frozen=True)
class WorkerRows:
    """The rows one rollout actor steps, as its acting half is built for them."""

    obs_spec: ObservationSpec
    act_spec: ActionSpec
    rows: int
    first_row: int  # the run-wide number of its first row (what messages name)
    agents_per_env: int
    final_observations: bool  # its envs keep truncated episodes' last observations (Buffers.final_observations)
    seed: int


class Segments:
    """One segment per row: ``(rows, steps + 1, ...)`` numpy arrays of ``schema``, reused between calls
    (Ray copies a result when the call returns); slot 0 of the next carries the last slot of this one."""

    def __init__(self, schema: Mapping[str, tuple[tuple, np.dtype]], rows: int):
        self.schema, self.rows = dict(schema), rows
        self.out: dict[str, np.ndarray] = {}
        self.last = 0

    def next(self, steps: int, carry: bool) -> dict[str, np.ndarray]:
        prev, last = self.out, self.last
        out = prev
        if not (prev and prev["rewards"].shape[1] == steps + 1):
            out = {k: np.zeros((self.rows, steps + 1, *shape), dtype) for k, (shape, dtype) in self.schema.items()}
        if prev and carry:
            for k, x in out.items():
                x[:, 0] = prev[k][:, last]
        self.out, self.last = out, steps
        return out


class Acting(Protocol):
    """A rollout actor's acting half: stores the segment and chooses the actions the envs step."""

    version: int  # the weights version it acts with (0: initial, or no weights)

    def restart(self) -> None:
        """The next segment starts from the envs' current obs, every row starting an episode."""

    def set_weights(self, weights: Mapping[str, np.ndarray], version: int) -> None: ...

    def begin(self, steps: int, buffers: Buffers) -> np.ndarray:
        """Start a ``steps``-step segment; returns the actions of its slot 0 (carried, or chosen now)."""

    def after_step(self, t: int, buffers: Buffers) -> np.ndarray:
        """Store step ``t``'s outcome (the reward one slot back) and obs; returns the actions to send."""

    def finish(self) -> dict[str, np.ndarray]:
        """The segment's arrays."""


class RandomActing:
    """The acting half without a policy: uniform random actions (benchmarks, the stepping tests)."""

    version = 0

    def __init__(self, rows: WorkerRows):
        self.layout = rows
        self.rng = np.random.default_rng(rows.seed)
        space: Any = rows.act_spec.flat_space
        self.bounds = (space.low, space.high) if not rows.act_spec.discrete else None  # Box or hybrid rows: clip
        self.segments = Segments(self.schema(), rows.rows)
        self.out: dict[str, np.ndarray] = {}
        self.fresh = True

    def schema(self) -> dict[str, tuple[tuple, np.dtype]]:
        return env_schema(self.layout.obs_spec, self.layout.act_spec)

    def restart(self) -> None:
        self.fresh = True

    def set_weights(self, weights: Mapping[str, np.ndarray], version: int) -> None:
        raise VectorConfigError("set_weights: these rollout actors act at random; set_acting() gives them a policy")

    def begin(self, steps: int, buffers: Buffers) -> np.ndarray:
        self.out = self.segments.next(steps, carry=not self.fresh)
        if not self.fresh:
            actions = self.out["actions"][:, 0]
            return actions if self.bounds is None else np.clip(actions, *self.bounds)  # sampled unclipped, stepped clipped
        self.fresh = False
        self.out["rewards"][:, 0] = 0.0
        return self.observe(0, buffers, np.ones(self.layout.rows, np.bool_))

    def after_step(self, t: int, buffers: Buffers) -> np.ndarray:
        self.out["rewards"][:, t - 1] = self.reward(buffers)  # the reward belongs to the transition one slot back
        return self.observe(t, buffers, buffers.terminals | buffers.truncations)

    def finish(self) -> dict[str, np.ndarray]:
        self.out["rewards"][:, -1] = 0.0
        return self.out

    def observe(self, t: int, buffers: Buffers, starts: np.ndarray) -> np.ndarray:
        """Store slot ``t`` (the rows' obs; NaN/inf names the env) and choose its actions."""
        bad = first_non_finite_row(buffers.observations)
        if bad is not None:
            row = self.layout.first_row + bad
            raise NonFiniteActing(OBSERVATION_NOT_FINITE.format(env=row // self.layout.agents_per_env, row=row))
        out = self.out
        out["obs"][:, t], out["starts"][:, t], out["masks"][:, t] = buffers.observations, starts, buffers.masks
        return self.choose(t, buffers.observations, starts)

    def choose(self, t: int, obs: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Store slot ``t``'s actions; returns the actions to send."""
        action = random_actions(self.layout.act_spec.flat_space, self.rng, self.layout.rows)
        self.out["actions"][:, t] = action
        return action

    def reward(self, buffers: Buffers) -> np.ndarray:
        return buffers.rewards


class RolloutWorker:
    """A Ray actor's state: envs ``first_env..`` on rows of its own and the acting half for them."""

    def __init__(self, factory: EnvFactory, first_env: int, num_envs: int, seed: int = 0):
        obs_spec, act_spec, agents = factory.layout()
        rows = num_envs * agents
        self.buffers = Buffers.allocate(obs_spec, act_spec, rows)
        self.stepper = BlockStepper(factory, self.buffers, first_env, num_envs)
        self.rows = WorkerRows(obs_spec, act_spec, rows, first_env * agents, agents, factory.writes_final_observations, seed)
        self.acting: Acting = RandomActing(self.rows)

    def set_acting(self, make: Callable[[WorkerRows], Acting]) -> None:
        self.acting = make(self.rows)

    def restart(self) -> None:
        self.acting.restart()

    def reset(self, seed: int | None) -> Episodes:
        episodes = self.run(lambda: self.stepper.reset(seed))
        self.restart()
        return episodes

    def run(self, what: Any) -> Any:
        try:
            return what()
        except Exception as exc:
            raise RuntimeError(f"env {self.stepper.failed_env} raised {type(exc).__name__}: {exc}") from exc

    def rollout(self, steps: int, weights: Mapping[str, np.ndarray] | None = None, version: int = 0) -> tuple:
        """Step every env ``steps`` times with the acting half's actions (``weights`` loaded first, when
        given); returns ``(arrays, episodes, env_seconds, version)``."""
        if weights is not None:
            self.acting.set_weights(weights, version)
        b = self.buffers
        sent = self.acting.begin(steps, b)
        episodes, env_seconds = [], 0.0
        for t in range(1, steps + 1):
            b.actions[:] = sent
            t0 = time.perf_counter()
            ended = self.run(self.stepper.step)
            env_seconds += time.perf_counter() - t0
            if len(ended):
                episodes.append(ended)
            sent = self.acting.after_step(t, b)
        return self.acting.finish(), Episodes.concat(episodes), env_seconds, self.acting.version

    def pid(self) -> int:
        return os.getpid()

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def close(self) -> None:
        self.stepper.close()


class RayRollouts:
    """``num_envs`` envs on ``num_workers`` rollout actors; ``batch_size`` envs per :meth:`wait` (a pool
    when fewer than ``num_envs``). Exposes the layout attributes of a vector env (``num_envs``,
    ``num_agents``, ``obs_spec``, ...) so a trainer can size its model from it."""

    backend = "ray"

    def __init__(
        self,
        factory: EnvFactory,
        num_envs: int = 1,
        num_workers: int | None = None,
        batch_size: int | None = None,
        address: str | None = None,
        step_timeout: float | None = None,
        min_call_seconds: float = MIN_CALL_SECONDS,
        seed: int = 0,
    ):
        self.closed = True
        num_workers = num_workers or max(w for w in range(1, min(os.cpu_count() or 1, num_envs) + 1) if num_envs % w == 0)
        if num_envs % num_workers:
            raise VectorConfigError(f"num_envs ({num_envs}) must be a multiple of num_workers ({num_workers})")
        batch_envs = batch_size if batch_size else num_envs
        self.envs_per_worker = num_envs // num_workers
        if batch_envs <= 0 or num_envs % batch_envs or batch_envs % self.envs_per_worker:
            raise VectorConfigError(
                f"batch_size ({batch_envs}) must divide num_envs ({num_envs}) and be a multiple "
                f"of envs per worker ({self.envs_per_worker})"
            )
        if not min_call_seconds > 0:
            raise VectorConfigError(f"min_call_seconds must be > 0, got {min_call_seconds}")
        self.factory, self.env_name = factory, factory.spec.name
        self.obs_spec, self.act_spec, self.agents_per_env = factory.layout()
        self.num_envs, self.num_workers, self.batch_envs = num_envs, num_workers, batch_envs
        self.num_agents, self.rows_per_worker = num_envs * self.agents_per_env, self.envs_per_worker * self.agents_per_env
        self.workers_per_batch = batch_envs // self.envs_per_worker
        self.step_timeout, self.min_call_seconds, self.base_seed = check_step_timeout(step_timeout), min_call_seconds, seed
        self.ray = ensure_ray(address)
        # Envs are light: actors take no CPU reservation; place() spreads them over the nodes by CPUs.
        self.actor_cls = self.ray.remote(num_cpus=0, max_restarts=0)(RolloutWorker)
        self.actor_nodes: list[str | None] = [None] * num_workers
        self.suspect: dict[str, float] = {}  # node -> when an actor on it died
        self.reset_seed: int | None = None
        self.acting_ref: Any = None  # what builds each actor's acting half (None: random actions)
        self.weights_ref: Any = None
        self.version = 0
        self.loaded = [0] * num_workers  # weights version each actor has (or will have with its pending call)
        self.pending: dict[Any, tuple[int, int]] = {}  # object ref -> (worker, steps)
        self.step_seconds = [0.0] * num_workers  # measured env seconds per step, per actor
        self.lost_steps = 0  # env steps lost with actors that died mid-rollout
        self.replaced = 0
        nodes = self.alive_nodes()  # asked once, not per actor
        self.actors = [self.spawn(w, nodes) for w in range(num_workers)]
        self.closed = False

    def alive_nodes(self) -> dict[str, float]:
        """Node id -> CPUs of the cluster's alive nodes that have CPUs."""
        return {
            n["NodeID"]: n["Resources"].get("CPU", 0.0)
            for n in self.ray.nodes()
            if n["Alive"] and n["Resources"].get("CPU", 0.0) > 0
        }

    def spawn(self, w: int, nodes: dict[str, float] | None = None) -> Any:
        """Actor ``w`` on the alive node with the fewest actors per CPU (a cluster's CPUs fill evenly)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self.alive_nodes() if nodes is None else nodes
        # A node where an actor just died may be dying (Ray takes seconds to declare it dead): avoid it a while.
        now = time.monotonic()
        trusted = {
            node: cpus for node, cpus in nodes.items() if now - self.suspect.get(node, -SUSPECT_SECONDS) >= SUSPECT_SECONDS
        }
        nodes = trusted or nodes
        options: dict[str, Any] = {}
        if nodes:
            load = {
                node: sum(1 for i, a in enumerate(self.actor_nodes) if a == node and i != w) / cpus
                for node, cpus in nodes.items()
            }
            node_id = min(load, key=lambda node: (load[node], -nodes[node], node))
            self.actor_nodes[w] = node_id
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
        return self.actor_cls.options(**options).remote(
            self.factory, w * self.envs_per_worker, self.envs_per_worker, self.base_seed * 1_000_003 + w
        )

    # -- setup ---------------------------------------------------------------------------------
    def set_acting(self, make: Callable[[WorkerRows], Acting]) -> None:
        """Every actor builds its acting half with ``make(its WorkerRows)``; ``make`` (picklable, e.g. a
        ``functools.partial`` holding a policy) goes once through the object store."""
        self.acting_ref = self.ray.put(make)
        self.setup(lambda a: a.set_acting.remote(self.acting_ref), "set_acting")
        self.loaded = [0] * self.num_workers

    def set_weights(self, state_dict: Mapping[str, Any]) -> int:
        """Broadcast new weights (once, as numpy arrays); rollouts submitted from now on act with them."""
        weights = {k: (v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)) for k, v in state_dict.items()}
        self.weights_ref = self.ray.put(weights)
        self.version += 1
        return self.version

    def reset(self, seed: int | None) -> None:
        """Drop the rollouts in flight, reset every env (env ``i`` with ``seed + i``)."""
        self.drain()
        self.reset_seed = seed
        self.setup(lambda a: a.reset.remote(seed), "reset")

    def restart(self) -> int:
        """Drop the rollouts in flight (their steps are returned) and every actor's carried slot and LSTM state."""
        dropped = self.drain()
        self.setup(lambda a: a.restart.remote(), "restart")
        return dropped

    def drain(self) -> int:
        """Wait out the rollouts in flight and discard them; returns their env steps."""
        steps = sum(s * self.rows_per_worker for _, s in self.pending.values())
        if self.pending:
            self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=self.step_timeout)
        self.pending = {}
        return steps

    def setup(self, call: Callable[[Any], Any], what: str) -> list:
        """Results of ``call(actor)`` (a setup call) on every actor. An actor that died is replaced
        (:meth:`respawn`) and called again, up to :data:`SETUP_ATTEMPTS` times; :class:`WorkerTimeoutError`
        after ``STARTUP_SECONDS`` (+ ``step_timeout``): actor processes may still be starting."""
        refs = [call(a) for a in self.actors]
        results = []
        for w in range(len(refs)):
            for attempt in range(1, SETUP_ATTEMPTS + 1):
                try:
                    results.append(self.ray.get(refs[w], timeout=STARTUP_SECONDS + self.step_timeout))
                    break
                except self.ray.exceptions.GetTimeoutError:
                    self.close(graceful=False)
                    raise WorkerTimeoutError(
                        f"{self.env_name}: rollout actors did not answer {what}() within "
                        f"{STARTUP_SECONDS + self.step_timeout:g}s (a cluster without room for them, "
                        f"or a hung env); the rollout actors are closed"
                    ) from None
                except (self.ray.exceptions.RayActorError, self.ray.exceptions.ObjectLostError):
                    if attempt == SETUP_ATTEMPTS:
                        self.close(graceful=False)
                        raise WorkerError(
                            f"{self.env_name}: rollout worker {w} died {attempt} times in a row during "
                            f"{what}(); the rollout actors are closed"
                        ) from None
                    self.respawn(w)
                    refs[w] = call(self.actors[w])
        return results

    # -- rollouts ------------------------------------------------------------------------------
    def idle(self) -> list[int]:
        busy = {w for w, _ in self.pending.values()}
        return [w for w in range(self.num_workers) if w not in busy]

    def submit(self, w: int, steps: int) -> None:
        """Start a ``steps``-step rollout on actor ``w`` with the latest weights."""
        if self.acting_ref is not None and self.loaded[w] != self.version and self.weights_ref is not None:
            ref = self.actors[w].rollout.remote(steps, self.weights_ref, self.version)
            self.loaded[w] = self.version
        else:
            ref = self.actors[w].rollout.remote(steps)
        self.pending[ref] = (w, steps)

    def submit_idle(self, steps: int | None = None, depth: int = 1) -> None:
        """Give every actor rollouts until it has ``depth`` in flight (2: it starts the next while the
        driver takes the last one's result, never idle)."""
        busy = [w for w, _ in self.pending.values()]
        for w in range(self.num_workers):
            for _ in range(depth - busy.count(w)):
                self.submit(w, steps or self.auto_steps())

    def auto_steps(self) -> int:
        """Steps per call so that one call carries ``min_call_seconds`` of simulation (8 until measured)."""
        measured = [s for s in self.step_seconds if s > 0]
        if not measured:
            return 8
        return max(1, min(MAX_AUTO_STEPS, math.ceil(self.min_call_seconds / (sum(measured) / len(measured)))))

    def wait(self, n: int | None = None) -> list[RolloutResult]:
        """The first ``n`` (default: a batch of) actors' rollouts to finish, in worker order. An actor that
        died is replaced and its rollout submitted again; one silent for ``step_timeout`` raises."""
        n = self.workers_per_batch if n is None else n
        if len(self.pending) < n:
            raise RuntimeError(f"{self.env_name}: wait({n}) with {len(self.pending)} rollouts in flight; submit first")
        results: list[RolloutResult] = []
        while len(results) < n:
            done, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=self.step_timeout)
            if not done:
                self.timeout()
            for ref in done:
                w, steps = self.pending.pop(ref)
                try:
                    arrays, episodes, env_seconds, version = self.ray.get(ref)
                except (self.ray.exceptions.RayActorError, self.ray.exceptions.ObjectLostError):
                    self.replace(w, steps)
                    continue
                except self.ray.exceptions.RayTaskError as exc:  # an env (or the policy) raised: not retried
                    self.close(graceful=False)
                    cause = getattr(exc, "cause", None) or exc
                    if isinstance(cause, NonFiniteActing):  # the trainer names the update and step
                        raise NonFiniteActing(str(cause)) from None
                    raise WorkerError(
                        f"{self.env_name}: rollout worker {w} (envs {w * self.envs_per_worker}-"
                        f"{(w + 1) * self.envs_per_worker - 1}): {cause}; the rollout actors are "
                        f"closed"
                    ) from None
                self.step_seconds[w] = env_seconds / max(1, steps)
                results.append(RolloutResult(w, steps, version, arrays, episodes, env_seconds))
        return sorted(results, key=lambda r: r.worker)

    def replace(self, w: int, steps: int) -> None:
        """Actor ``w`` died mid-rollout: a new one, envs rebuilt from the last reset's seeds, its rollouts again."""
        also = [ref for ref, (other, _) in self.pending.items() if other == w]  # its other calls in flight
        again = [steps] + [self.pending.pop(ref)[1] for ref in also]
        self.lost_steps += sum(again) * self.rows_per_worker
        self.respawn(w)
        for k in again:
            self.submit(w, k)

    def respawn(self, w: int) -> None:
        """A new actor ``w`` in place of a dead one: envs rebuilt from the last reset's seeds, policy sent."""
        self.replaced += 1
        self.ray.kill(self.actors[w])  # already dead; frees its name and handle
        node_id = self.actor_nodes[w]
        if node_id is not None:
            self.suspect[node_id] = time.monotonic()
        actor = self.actors[w] = self.spawn(w)
        actor.reset.remote(self.reset_seed)  # calls from one caller run in order: reset, acting, rollout
        self.loaded[w] = 0
        if self.acting_ref is not None:
            actor.set_acting.remote(self.acting_ref)

    def timeout(self) -> None:
        late = sorted(w for w, _ in self.pending.values())
        self.close(graceful=False)
        names = ", ".join(f"worker {w} (envs {w * self.envs_per_worker}-{(w + 1) * self.envs_per_worker - 1})" for w in late)
        raise WorkerTimeoutError(
            f"{self.env_name}: {names} did not answer within step_timeout={self.step_timeout:g}s "
            f"(a hung env or a stopped process); the rollout actors are closed. Raise "
            f"vec.step_timeout if rollouts are this slow"
        )

    def nodes(self) -> list[str]:
        """The Ray node id of each actor (where its envs run)."""
        return self.setup(lambda a: a.node.remote(), "node")

    def close(self, graceful: bool = True) -> None:
        if self.closed:
            return
        self.closed = True
        stop_actors(self.ray, self.actors, graceful, timeout=min(10.0, self.step_timeout))
        self.actors, self.pending = [], {}

    def __enter__(self) -> RayRollouts:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
