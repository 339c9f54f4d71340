"""Remote rollout workers: ``pufferbox train ENV --backend ray`` collects where the envs are.

:class:`RayCollector` implements the :class:`~pufferbox.train.collector.Collector` protocol on
:class:`~pufferbox.vector.ray_rollout.RayRollouts`: each actor steps its block of envs for a whole
segment (``horizon`` steps) per call, acting with :class:`PolicyActing` (its acting half: a copy of
the policy and the host collector's act step, :class:`~pufferbox.train.act.RowActing`, on the actor's
CPU), and sends the segment back as contiguous numpy arrays; the learner stays where the trainer runs.
The batch has the host collector's layout: ``num_agents`` segments of ``horizon + 1`` slots;
without a pool one per agent row in row order (``env_id * agents_per_env + agent``), with a pool
those of the first actors done, a fast actor's rows possibly twice (as the host collector's pool).

Weights and policy lag: every :meth:`RayCollector.collect` first broadcasts the learner's
current weights (one ``ray.put``), and rollouts submitted then act with them. Without a pool
(``vec.batch_size`` unset) every actor starts its rollout after the broadcast: the batch is
exactly on-policy. With a pool (``batch_size < num_envs``) the actors not in a batch keep
running, so their next segment was (partly) acted by the weights of the update before:
``policy_lag`` reports the mean number of updates behind; PPO's clipped ratio uses the stored
behaviour logprobs, so the update stays correct for a lag of one (as in the overlap trainer).

Faults: an actor that dies mid-rollout (``ray.kill``, a lost node) is replaced, its envs are
rebuilt from the last reset's seeds and its segment is collected again; ``lost_steps`` and
``actors_replaced`` in the metrics count what was lost in that collect.

Example:
    >>> rollouts = make_ray_rollouts(spec, typed(VecConfig, {"backend": "ray"}), {})   # doctest: +SKIP
    >>> collector = RayCollector(rollouts, agent, horizon=64)                          # doctest: +SKIP
    >>> collector.reset(seed=1); collector.collect().batch["obs"].shape                # doctest: +SKIP
    torch.Size([8, 65, 4])
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from pufferbox.buffers import Buffers
from pufferbox.episodes import Episodes
from pufferbox.train.act import NonFiniteInput, RowActing, rollout_schema
from pufferbox.train.collector import Collected
from pufferbox.train.config import ConfigError, VecConfig
from pufferbox.vector.base import NonFiniteActing
from pufferbox.vector.ray_rollout import RandomActing, RayRollouts, WorkerRows

__all__ = ["PolicyActing", "RayCollector", "make_ray_rollouts"]


class PolicyActing(RandomActing):
    """A rollout actor's acting half with a copy of ``policy``: the host collector's act step on the actor's
    CPU (one core: the envs are the work), its actions replayable from the actor's seed; truncated steps
    bootstrapped as on the host when the envs keep final observations."""

    def __init__(self, rows: WorkerRows, policy: Any, bootstrap_gamma: float = 0.0):
        torch.set_num_threads(1)
        torch.manual_seed(rows.seed)
        self.lstm_size = int(policy.lstm_size)
        self.acting = RowActing(policy.to("cpu"), rows.act_spec, rows.rows, rows.agents_per_env, first_row=rows.first_row)
        self.all_rows = np.arange(rows.rows)
        self.bootstrap_gamma = bootstrap_gamma if rows.final_observations else 0.0
        super().__init__(rows)

    def schema(self) -> dict[str, tuple[tuple, np.dtype]]:
        return rollout_schema(self.layout.obs_spec, self.layout.act_spec, self.lstm_size)

    def restart(self) -> None:
        super().restart()
        self.acting.restart()

    def set_weights(self, weights: Mapping[str, np.ndarray], version: int) -> None:
        self.acting.policy.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()})
        self.version = version

    def choose(self, t: int, obs: np.ndarray, starts: np.ndarray) -> np.ndarray:
        out, state = self.out, self.acting.state
        if state is not None:
            out["h"][:, t], out["c"][:, t] = state[0].numpy(), state[1].numpy()
        sent, out["actions"][:, t], out["logprobs"][:, t], out["values"][:, t] = self.acting.act(obs, starts, self.all_rows)
        return sent

    def reward(self, buffers: Buffers) -> np.ndarray:
        if not self.bootstrap_gamma:
            return buffers.rewards
        cut = buffers.truncations & ~buffers.terminals
        final = buffers.final_observations
        return self.acting.bootstrap(buffers.rewards, buffers.observations, final, cut, self.all_rows, self.bootstrap_gamma)


def make_ray_rollouts(
    spec: Any, vec: VecConfig, env_kwargs: Mapping[str, Any], seed: int = 1, address: str | None = None
) -> RayRollouts:
    """The rollout actors ``vec`` describes (``--backend ray`` in training) on the Ray cluster at ``address``
    (None: ``$RAY_ADDRESS``, else a local Ray)."""
    from pufferbox.vector.base import EnvFactory

    if vec.main_envs:
        raise ConfigError("vec.main_envs applies to --backend multiprocessing; drop it for --backend ray")
    factory = EnvFactory(spec, dict(env_kwargs), use_native=vec.native, check_obs=vec.check_obs)
    return RayRollouts(
        factory,
        num_envs=vec.num_envs,
        num_workers=vec.num_workers or None,
        batch_size=vec.batch_size or None,
        step_timeout=vec.step_timeout,
        seed=seed,
        address=address,
    )


class RayCollector:
    """Segments acted and stepped on the Ray actors of ``venv`` (a :class:`RayRollouts`)."""

    def __init__(
        self,
        venv: RayRollouts,
        agent: Any,
        horizon: int,
        device: torch.device | str = "cpu",
        bootstrap_gamma: float = 0.0,
    ):
        self.venv, self.agent, self.horizon, self.device = venv, agent, horizon, torch.device(device)
        self.num_rows = venv.num_agents
        self.phase_time = {"env": 0.0, "inference": 0.0}  # inference happens on the actors, inside "env"
        policy = copy.deepcopy(agent).to("cpu")
        venv.set_acting(functools.partial(PolicyActing, policy=policy, bootstrap_gamma=bootstrap_gamma))
        self.reported = (0, 0)  # (lost_steps, replaced) already reported

    def reset(self, seed: int) -> None:
        self.venv.reset(seed)

    def restart(self) -> int:
        return self.venv.restart()

    def close(self) -> None:
        """The rollouts in flight are the actors'; the trainer closes them with the envs."""

    def collect(self, horizon: int | None = None) -> Collected:
        """Broadcast the current weights, run a segment on every idle actor, take the first batch back."""
        steps = self.horizon if horizon is None else max(1, min(horizon, self.horizon))
        t0 = time.perf_counter()
        version = self.venv.set_weights(self.agent.state_dict())
        results: list = []
        try:
            while len(results) * self.venv.rows_per_worker < self.num_rows:  # a pool: fast actors give several
                for w in self.venv.idle():
                    self.venv.submit(w, steps)
                results += self.venv.wait()
        except NonFiniteActing as exc:  # checked on the actors, before their policy acts
            raise NonFiniteInput(str(exc)) from None
        self.phase_time["env"] += time.perf_counter() - t0
        # Pool actors submitted before a cut-short rollout carry more steps: every segment to the shortest.
        steps = min(r.steps for r in results)
        batch = {
            k: torch.from_numpy(np.concatenate([r.arrays[k][:, : steps + 1] for r in results])).to(self.device)
            for k in results[0].arrays
        }
        lost, replaced = self.venv.lost_steps, self.venv.replaced
        metrics = {
            "lost_steps": float(lost - self.reported[0]),
            "actors_replaced": float(replaced - self.reported[1]),
            "policy_lag": float(np.mean([version - r.version for r in results])),
        }
        self.reported = (lost, replaced)
        return Collected(
            batch, len(results) * self.venv.rows_per_worker * steps, Episodes.concat([r.episodes for r in results]), metrics
        )
