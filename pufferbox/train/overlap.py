"""Overlapped simulation and learning: double-buffered rollouts and the V-trace policy-lag correction.

With ``train.overlap = true`` the :class:`OverlapCollector` collects rollout ``k+1`` in a background
thread while the learner updates on rollout ``k`` (Sample Factory's asynchronous PPO with the policy
lag bounded to one update). The thread acts with its own copy of the policy (the *actor*), whose
weights are copied from the learner's once per rollout, while the thread is idle, so every step of a
rollout uses one consistent snapshot. It overlaps on CPU because the envs step outside the GIL (worker
processes of the multiprocessing backend, or native C blocks) and torch ops release it.

Timeline (``v_k``: the weights after ``k`` updates)::

    collect #0: collect rollout 0 with v_0 (nothing in flight yet), start rollout 1 with v_0, return 0
    update  #1: learner v_0 -> v_1 on rollout 0            (rollout 1 runs meanwhile)
    collect #1: wait for rollout 1, copy v_1 to the actor, start rollout 2 with v_1, return 1
    update  #2: learner v_1 -> v_2 on rollout 1 (acted by v_0: one version behind)

Each rollout's first stored step is the last step of the previous one (its action was chosen by the
previous snapshot), exactly as in the synchronous collector, where that step is also one update old.

The lag is corrected with V-trace (IMPALA, Espeholt et al. 2018): :func:`vtrace_targets` rescores the
batch with the learner's current weights and replaces GAE's advantages and returns by V-trace's
``pg_advantages`` and ``vs``, with truncated importance weights ``rho = min(1, pi/mu)``,
``c = lambda * min(1, pi/mu)``. PPO then clips its ratio around the current policy. With
``train.lag_correction = "none"`` the clipped ratio against the behaviour policy is the only correction
(Sample Factory's default).

Example:
    >>> cfg = resolve_config(overrides=["train.overlap=true", "vec.backend=multiprocessing"])  # doctest: +SKIP
    >>> Trainer("cartpole", cfg).train()                                                         # doctest: +SKIP
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from pufferbox.train.collector import Collected, Collector

__all__ = ["LAG_CORRECTIONS", "OverlapCollector", "vtrace", "vtrace_targets"]

LAG_CORRECTIONS = ("vtrace", "none")


def vtrace(
    behaviour_logprobs: torch.Tensor,
    target_logprobs: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    starts: torch.Tensor,
    gamma: float,
    lam: float = 1.0,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """V-trace along dim 1 of ``(segments, horizon + 1)`` tensors; ``(pg_advantages, vs)``, ``horizon`` wide.

    ``values`` are the target policy's; ``starts[:, t + 1]`` cuts the bootstrap as in
    :func:`~pufferbox.train.learner.gae`. With ``behaviour == target`` and ``lam = 1`` both outputs
    equal GAE(lambda=1)'s advantages and returns.

    Example:
        >>> z = torch.zeros(1, 3)
        >>> adv, vs = vtrace(z, z, torch.ones(1, 3), torch.zeros(1, 3), z.bool(), gamma=0.5)
        >>> vs.tolist(), adv.tolist()
        ([[1.5, 1.0]], [[1.5, 1.0]])
    """
    steps = values.shape[1] - 1
    ratio = (target_logprobs[:, :steps] - behaviour_logprobs[:, :steps]).exp()
    rho, c = ratio.clamp(max=rho_bar), lam * ratio.clamp(max=c_bar)
    discount = gamma * (1.0 - starts[:, 1:].float())
    deltas = rho * (rewards[:, :steps] + discount * values[:, 1:] - values[:, :steps])
    vs_minus_v = torch.zeros(len(values), steps + 1, device=values.device)  # vs_T = V_T: the bootstrap
    for t in reversed(range(steps)):
        vs_minus_v[:, t] = deltas[:, t] + discount[:, t] * c[:, t] * vs_minus_v[:, t + 1]
    vs = vs_minus_v + values
    pg_advantages = rho * (rewards[:, :steps] + discount * vs[:, 1:] - values[:, :steps])
    return pg_advantages, vs[:, :steps]


@torch.no_grad()
def rescore(agent: Any, batch: dict[str, torch.Tensor], chunk: int = 16384) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logprobs, values)`` of the batch's stored actions under ``agent``'s current weights.

    Both are ``(segments, horizon + 1)``.
    """
    obs, actions = batch["obs"], batch["actions"]
    segments, width = obs.shape[:2]
    if "h" in batch:  # unroll each segment from its first stored LSTM state
        sl = lambda x: x.transpose(0, 1)
        logprob, _, value = agent.evaluate(sl(obs), sl(actions), (batch["h"][:, 0], batch["c"][:, 0]), sl(batch["starts"]))
        return logprob.reshape(width, segments).T, value.reshape(width, segments).T
    flat_obs, flat_act = obs.reshape(segments * width, *obs.shape[2:]), actions.reshape(segments * width, *actions.shape[2:])
    parts = [agent.evaluate(flat_obs[i : i + chunk], flat_act[i : i + chunk]) for i in range(0, len(flat_obs), chunk)]
    logprob, value = torch.cat([p[0] for p in parts]), torch.cat([p[2] for p in parts])
    return logprob.reshape(segments, width), value.reshape(segments, width)


def vtrace_targets(agent: Any, batch: dict[str, torch.Tensor], gamma: float, lam: float) -> dict[str, torch.Tensor]:
    """``batch`` re-based on ``agent``'s current weights for the PPO update: ``logprobs``/``values`` rescored,
    ``advantages``/``returns`` from :func:`vtrace` (the :class:`~pufferbox.train.learner.Learner` uses them
    instead of GAE's)."""
    logprobs, values = rescore(agent, batch)
    adv, vs = vtrace(batch["logprobs"], logprobs, batch["rewards"], values, batch["starts"], gamma, lam)
    return batch | {"logprobs": logprobs, "values": values, "advantages": adv, "returns": vs}


class OverlapCollector:
    """Double-buffered rollouts: ``collect()`` returns rollout ``k`` and leaves ``k+1`` collecting.

    ``inner`` is a collector acting with ``actor`` (a copy of ``learner_agent``, the weights the learner
    updates); ``version()`` counts the learner's updates (recorded per rollout as ``policy_version``);
    ``plan(pending)`` is the horizon of the rollout to prefetch when ``pending`` steps are about to be
    handed out (None: a whole rollout, 0: none, the step budget is spent).
    """

    def __init__(
        self,
        inner: Collector,
        actor: torch.nn.Module,
        learner_agent: torch.nn.Module,
        version: Callable[[], int] = lambda: 0,
        plan: Callable[[int], int | None] = lambda pending: None,
    ):
        if actor is learner_agent:
            raise ValueError("OverlapCollector needs its own copy of the policy (copy.deepcopy(agent))")
        self.inner, self.actor, self.learner_agent = inner, actor, learner_agent
        self.version, self.plan = version, plan
        self.venv, self.horizon = inner.venv, inner.horizon
        device = next(actor.parameters()).device
        # on a GPU the thread acts on a stream of its own: on the shared default stream every act would
        # queue behind the kernels the update has enqueued, and its wait for the actions behind all of them
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.actor_version = 0  # set by sync(), before the first rollout
        self.thread: threading.Thread | None = None
        self.result: Collected | BaseException | None = None
        self.wait_time = 0.0  # seconds the learner's side waited for a rollout

    @property
    def phase_time(self) -> dict[str, float]:
        return {**self.inner.phase_time, "wait": self.wait_time}

    def reset(self, seed: int) -> None:
        self.drop()
        self.sync()
        self.inner.reset(seed)

    def restart(self) -> int:
        """Drop the rollout in flight and start over; returns the env steps taken but never recorded
        (the dropped rollout's and the actions still pending)."""
        dropped = self.drop()
        self.sync()
        return dropped + self.inner.restart()

    def collect(self, horizon: int | None = None) -> Collected:
        if self.thread is None:  # nothing in flight (first rollout, after a reset): collect it now
            self.sync()
            self.launch(horizon)
        got = self.join()
        self.sync()
        following = self.plan(got.steps)
        if following != 0:
            self.launch(following)
        return got

    def sync(self) -> None:
        """Copy the learner's weights into the actor (only while no rollout is in flight)."""
        assert self.thread is None, "the actor's weights change only between rollouts"
        with torch.no_grad():
            for mine, theirs in zip(self.actor.parameters(), self.learner_agent.parameters()):
                mine.copy_(theirs)
            for my_buffer, their_buffer in zip(self.actor.buffers(), self.learner_agent.buffers()):
                my_buffer.copy_(their_buffer)
        self.actor_version = self.version()

    def launch(self, horizon: int | None) -> None:
        version, stream = self.actor_version, self.stream
        if stream is not None:  # sync() copied the actor's weights on the learner's stream: first
            stream.wait_stream(torch.cuda.current_stream(stream.device))

        def run() -> None:
            try:
                with torch.cuda.stream(stream):  # None (CPU): no-op
                    got = self.inner.collect(horizon)
                got.metrics["policy_version"] = float(version)
                self.result = got
            except BaseException as exc:
                self.result = exc

        self.result = None
        self.thread = threading.Thread(target=run, name="pufferbox-overlap-collector", daemon=True)
        self.thread.start()

    def join(self) -> Collected:
        t0 = time.perf_counter()
        thread, self.thread = self.thread, None
        if thread is not None:
            while thread.is_alive():  # a timed join keeps the main thread responsive to Ctrl-C
                thread.join(0.1)
        self.wait_time += time.perf_counter() - t0
        result, self.result = self.result, None
        if isinstance(result, BaseException):
            raise result
        if result is None:
            raise RuntimeError("no rollout in flight")
        result.metrics["policy_lag"] = float(self.version() - result.metrics["policy_version"])
        if self.stream is not None:
            self.hand_over(result.batch)
        return result

    def hand_over(self, batch: dict[str, torch.Tensor]) -> None:
        """The learner's stream waits for the rollout's last copies to the device, and the allocator
        learns that the batch (allocated on the collector's stream) is used on the learner's."""
        assert self.stream is not None
        learner_stream = torch.cuda.current_stream(self.stream.device)
        learner_stream.wait_stream(self.stream)
        for tensor in batch.values():
            if tensor.is_cuda:
                tensor.record_stream(learner_stream)

    def drop(self) -> int:
        """Wait for the rollout in flight to end and discard it (errors included: the caller starts over);
        returns its env steps."""
        if self.thread is None:
            return 0
        try:
            return self.join().steps
        except Exception:
            return 0

    def close(self) -> None:
        self.drop()
