"""The PPO update, top to bottom (CleanRL's ``ppo.py`` update, on segments of a batch).

:meth:`Learner.update` takes a batch of full segments (tensors ``(segments, horizon + 1, ...)``
on the learner's device, as a :mod:`~pufferbox.train.collector` returns them) and does GAE
along each segment's own time axis, then ``update_epochs`` epochs of clipped-PPO minibatch
steps. It knows nothing about backends or envs.

* An episode start cuts the bootstrap. A time-limit truncation's reward already holds
  ``r + gamma * V(final obs)`` when the collector bootstraps it (``train.bootstrap_truncation``),
  so the update needs no case for it.
* ``masks`` False (a padded agent slot, or an agent waiting for its turn in a turn-based env) removes that
  transition from every loss and statistic; GAE passes through it (its reward counts toward the row's
  previous acting step, see :func:`turn_gae`).
* Recurrent policies: minibatches of whole segments, unrolled from each segment's first stored
  LSTM state with resets at episode starts (truncated BPTT).
* Data-parallel learners (``team``, :mod:`~pufferbox.train.distributed`): each holds a part of the batch;
  all draw the same shuffle of the whole batch and keep their own samples of each minibatch, the losses
  are means over the whole minibatch, and the gradients are summed over the learners while ``backward``
  runs (:meth:`Team.start_averaging`, ``finish_averaging``), before the optimizer step: every learner
  takes the step one learner would take on the whole batch.

Example:
    >>> learner = Learner(agent, resolve_run_config().train, seed=1)  # doctest: +SKIP
    >>> learner.update(collector.collect().batch)["policy_loss"]        # doctest: +SKIP
    -0.0123
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

import torch

from pufferbox.train.config import TrainConfig
from pufferbox.train.hardware import pick_autocast
from pufferbox.train.optim import Adam
from pufferbox.train.policies import Agent

__all__ = ["Learner", "gae"]


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    starts: torch.Tensor,
    gamma: float,
    lam: float,
    acting: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE along dim 1 of ``(segments, horizon + 1)`` tensors; ``(advantages, returns)``, ``horizon`` wide.

    ``starts[:, t + 1]`` (an episode starts at the next obs) cuts the bootstrap. Runs on the tensors' device.
    ``acting`` (turn-based envs: False while the row's agent waits for the others) makes waiting steps
    transparent: their rewards count toward the agent's previous move, and the bootstrap skips their
    values (never trained) to the agent's next move; the discount counts the agent's own moves.
    """
    if acting is not None:
        return turn_gae(rewards, values, starts, gamma, lam, acting)
    steps = values.shape[1] - 1
    nonterminal = 1.0 - starts[:, 1:].float()
    adv = torch.zeros(len(values), steps, device=values.device)
    last = torch.zeros(len(values), device=values.device)
    for t in reversed(range(steps)):
        delta = rewards[:, t] + gamma * values[:, t + 1] * nonterminal[:, t] - values[:, t]
        last = delta + gamma * lam * nonterminal[:, t] * last
        adv[:, t] = last
    return adv, adv + values[:, :steps]


def turn_gae(
    rewards: torch.Tensor, values: torch.Tensor, starts: torch.Tensor, gamma: float, lam: float, acting: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`gae` over each row's acting steps only: the rewards of the waiting steps after a move are summed
    into that move's reward (undiscounted, up to an episode end) and its bootstrap is the row's next acting
    value, so this is GAE on the agent's own moves (and GAE exactly when every step acts). Going back in
    time: ``ahead``/``carry`` are the next acting step's value and advantage, ``pending`` the waiting rewards
    before it, ``alive`` 0 if an episode ended among those waiting steps. A row that waits at the end of its
    segment bootstraps from the critic's value of its waiting observation."""
    steps = values.shape[1] - 1
    nonterminal = 1.0 - starts[:, 1:].float()
    adv = torch.zeros(len(values), steps, device=values.device)
    ahead, carry = values[:, steps], torch.zeros(len(values), device=values.device)
    pending, alive = torch.zeros_like(carry), torch.ones_like(carry)
    for t in reversed(range(steps)):
        n, move = nonterminal[:, t], acting[:, t]
        now = rewards[:, t] - values[:, t] + n * (pending + gamma * alive * (ahead + lam * carry))
        adv[:, t] = torch.where(move, now, 0.0)
        ahead = torch.where(move, values[:, t], ahead)
        carry = torch.where(move, now, carry)
        pending = torch.where(move, 0.0, rewards[:, t] + n * pending)
        alive = torch.where(move, 1.0, n * alive)
    return adv, adv + values[:, :steps]


def clip_grad_norm(params: list[torch.Tensor], max_norm: float) -> torch.Tensor:
    """``nn.utils.clip_grad_norm_`` for parameters on one device, without its per-tensor ``.to(device)``
    (no host transfer to forbid in the step's sync guard); returns the total norm before clipping."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(())
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp(max=1.0))
    return total


class Learner:
    """Owns the optimizer and the minibatch shuffle generator of one agent; ``hp`` its hyperparameters."""

    def __init__(self, agent: Agent, hp: TrainConfig, seed: int = 1, compile: bool = False, team: Any = None):
        self.agent, self.hp, self.team = agent, hp, team
        self.evaluate = torch.compile(agent.evaluate, mode=hp.compile_mode) if compile else agent.evaluate
        device = next(agent.parameters()).device
        self.device_type = device.type
        self.low_precision = pick_autocast(hp.autocast, device) == "bf16"
        self.optimizer = Adam(agent.parameters(), lr=hp.learning_rate, eps=1e-5)
        self.generator = torch.Generator().manual_seed(seed)  # minibatch shuffles
        self.nonfinite = 0  # updates in a row skipped for a NaN/inf reward, value or loss
        # Minibatch steps read nothing on the host (NaN guard on the device, read once per update): on
        # an accelerator, where a read waits for the device; tests set it on the CPU.
        self.sync_free = next(agent.parameters()).device.type != "cpu"

    def reset_optimizer(self) -> None:
        """Fresh Adam moments (a new lineage in a tournament)."""
        self.optimizer = Adam(self.agent.parameters(), lr=self.hp.learning_rate, eps=1e-5)

    def update(self, batch: dict[str, torch.Tensor], progress: float = 0.0) -> dict[str, float]:
        """PPO epochs over ``batch``; ``progress`` (0 to 1, the run's fraction done) anneals the learning rate."""
        hp = self.hp
        lr = hp.learning_rate * (max(0.0, 1.0 - progress) if hp.anneal_lr else 1.0)
        self.optimizer.param_groups[0]["lr"] = lr
        if "advantages" in batch:  # targets computed by the caller (overlap.vtrace_targets for lagged data)
            adv, returns = batch["advantages"], batch["returns"]
        else:
            waiting = not bool(batch["masks"].all())  # turn-based envs (agents that wait) or absent agents
            acting = batch["masks"] if waiting else None
            adv, returns = gae(batch["rewards"], batch["values"], batch["starts"], hp.gamma, hp.gae_lambda, acting)
        finite = bool(torch.isfinite(returns).all())
        if not (finite if self.team is None else self.team.all_true(finite)):  # a NaN/inf reward or value: skip
            return self.skipped(lr)
        steps = adv.shape[1]
        # contiguous once here, so each minibatch's reshape below is a view, not a copy of everything
        obs, actions, logprobs, values, masks, starts = (
            batch[k][:, :steps].contiguous() for k in ("obs", "actions", "logprobs", "values", "masks", "starts")
        )
        recurrent = "h" in batch
        if recurrent:  # minibatches of whole segments, time-major for the unroll
            units = torch.arange(len(obs))
            h0, c0 = batch["h"][:, 0], batch["c"][:, 0]
        else:  # minibatches of single live transitions
            units = masks.reshape(-1).nonzero().squeeze(-1).cpu()
        # data-parallel: this learner's units are positions offset.. of the whole batch's (learners in rank order)
        offset, whole = (0, len(units)) if self.team is None else self.team.offset_and_total(len(units))
        if whole == 0:
            return {}
        mb_size = max(1, whole // hp.num_minibatches)
        stats: dict[str, list[torch.Tensor]] = collections.defaultdict(list)
        # Every minibatch so far had a finite loss and gradient: a device flag, read once after the epochs
        # (a NaN step disables the optimizer from there on, as returning at once would, without a host read).
        self.all_finite = torch.ones((), dtype=torch.bool, device=obs.device)
        self.disabled_steps = torch.zeros((), dtype=torch.int64, device=obs.device)
        for _epoch in range(hp.update_epochs):
            batches = self.minibatches(units, whole, offset, mb_size, obs.device)
            moments = [None] * len(batches) if self.team is None else self.team_moments(batches, adv, masks, recurrent)
            for idx, whole_mb in zip(batches, moments):
                with torch.autocast(self.device_type, dtype=torch.bfloat16, enabled=self.low_precision):
                    if len(idx) == 0:  # data-parallel: none of this minibatch is here; step with the others
                        nothing = torch.zeros(0, device=obs.device)
                        new, old, weight = (nothing,) * 3, [nothing] * 4, nothing
                    elif recurrent:
                        sl = lambda x, idx=idx: x[idx].transpose(0, 1)
                        new = self.evaluate(sl(obs), sl(actions), (h0[idx], c0[idx]), sl(starts))
                        old = [sl(x).reshape(-1) for x in (logprobs, values, adv, returns)]
                        weight = sl(masks).reshape(-1).float()
                    else:
                        flat = lambda x, idx=idx: x.reshape(-1, *x.shape[2:])[idx]
                        new = self.evaluate(flat(obs), flat(actions))
                        old = [flat(x) for x in (logprobs, values, adv, returns)]
                        weight = torch.ones_like(old[0])
                (new_logprob, entropy, new_value), (old_logprob, old_value, mb_adv, mb_ret) = (x.float() for x in new), old
                if not self.minibatch_step(
                    new_logprob, entropy, new_value, old_logprob, old_value, mb_adv, mb_ret, weight, stats, whole_mb
                ):
                    return self.skipped(lr)
            recent_kl = torch.stack(stats["approx_kl"][-max(1, hp.num_minibatches) :]).mean()
            if hp.target_kl and float(recent_kl if self.team is None else self.team.average(recent_kl)) > hp.target_kl:
                break
        finite, disabled = torch.stack([self.all_finite.long(), self.disabled_steps]).tolist()  # the one read
        if not finite:
            self.optimizer.step_count -= disabled  # the steps that changed nothing do not count
            return self.skipped(lr)

        live = masks.reshape(-1)
        y_pred, y_true = values.reshape(-1)[live], returns.reshape(-1)[live]
        var_y = torch.var(y_true) if len(y_true) > 1 else torch.tensor(0.0)
        explained = float("nan") if var_y == 0 else float(1 - torch.var(y_true - y_pred) / var_y)
        # statistics stayed on the device during the epochs: one read each, here
        out = {k: torch.stack(v).double().mean() for k, v in stats.items()} | {"explained_variance": torch.tensor(explained)}
        if self.team is not None:  # each learner's statistics are its share of the whole minibatch's: average them
            out = dict(zip(out, self.team.average(torch.stack([v.double() for v in out.values()])).tolist()))
        self.nonfinite = 0
        return {k: float(v) for k, v in out.items()} | {"learning_rate": lr, "nonfinite_updates": 0}

    def minibatches(
        self, units: torch.Tensor, whole: int, offset: int, mb_size: int, device: torch.device
    ) -> list[torch.Tensor]:
        """One epoch's minibatches (indices into ``units``' tensors, on ``device``): a shuffle of the whole
        batch's ``whole`` units cut into ``mb_size`` slices. A data-parallel learner draws the same shuffle
        as every other and keeps the positions ``offset..offset + len(units)`` it holds."""
        order = torch.randperm(whole, generator=self.generator)
        cuts = range(0, whole - mb_size + 1, mb_size)
        if self.team is None:  # the whole batch is here: one copy per epoch
            order = units[order].to(device)
            return [order[start : start + mb_size] for start in cuts]
        mine = [order[start : start + mb_size] - offset for start in cuts]
        return [units[p[(p >= 0) & (p < len(units))]].to(device) for p in mine]

    def team_moments(
        self, batches: list[torch.Tensor], adv: torch.Tensor, masks: torch.Tensor, recurrent: bool
    ) -> list[torch.Tensor]:
        """Data-parallel: each minibatch's live samples, advantage sum and sum of squares over all learners
        (float64), for the means over the whole minibatch: one all-reduce per epoch."""
        rows = []
        for idx in batches:
            a = (adv[idx] if recurrent else adv.reshape(-1)[idx]).reshape(-1).double()
            w = masks[idx].reshape(-1).double() if recurrent else torch.ones_like(a)
            rows.append(torch.stack([w.sum(), (w * a).sum(), (w * a * a).sum()]))
        return list(self.team.all_reduce(torch.stack(rows)))

    def skipped(self, lr: float) -> dict[str, float]:
        self.nonfinite += 1
        return {"learning_rate": lr, "nonfinite_updates": self.nonfinite}

    def minibatch_step(
        self,
        new_logprob: torch.Tensor,
        entropy: torch.Tensor,
        new_value: torch.Tensor,
        old_logprob: torch.Tensor,
        old_value: torch.Tensor,
        adv: torch.Tensor,
        ret: torch.Tensor,
        weight: torch.Tensor,
        stats: dict[str, list[torch.Tensor]],
        whole: torch.Tensor | None = None,
    ) -> bool:
        """One gradient step of the clipped PPO objective on a minibatch (weighted means). A loss or gradient
        that is not finite: on the CPU no step and False; with ``sync_free`` (an accelerator) ``all_finite``
        is cleared and from then on the steps change nothing, without a host read here. ``whole``
        (data-parallel learners, :meth:`team_moments`): the whole minibatch's live samples, advantage sum
        and sum of squares; the means are then over the whole minibatch (this learner's share of it)."""
        hp = self.hp
        total, share = (weight.sum(), 1) if whole is None else (whole[0].float(), self.team.size)
        total = total.clamp(min=1.0)
        wmean = lambda x: (x * weight).sum() * share / total
        logratio = new_logprob - old_logprob
        ratio = logratio.exp()
        with torch.no_grad():  # statistics stay tensors (no device sync per minibatch)
            stats["approx_kl"].append(wmean((ratio - 1) - logratio))
            stats["clipfrac"].append(wmean(((ratio - 1.0).abs() > hp.clip_coef).float()))
        if hp.norm_adv:  # a lone live transition has no spread: keep it as is (torch.where: no sync)
            if whole is None:
                mean = wmean(adv)
                var = wmean((adv - mean) ** 2)
            else:
                mean64 = whole[1] / whole[0].clamp(min=1.0)
                var = (whole[2] / whole[0].clamp(min=1.0) - mean64**2).clamp(min=0.0)  # never below 0 by rounding
                mean, var = mean64.float(), var.float()
            std = (var * total / (total - 1).clamp(min=1e-8)).sqrt()
            adv = torch.where(total > 1, (adv - mean) / (std + 1e-8), adv)
        pg_loss = wmean(torch.max(-adv * ratio, -adv * ratio.clamp(1 - hp.clip_coef, 1 + hp.clip_coef)))
        if hp.clip_vloss:
            v_clipped = old_value + (new_value - old_value).clamp(-hp.clip_coef, hp.clip_coef)
            v_loss = 0.5 * wmean(torch.max((new_value - ret) ** 2, (v_clipped - ret) ** 2))
        else:
            v_loss = 0.5 * wmean((new_value - ret) ** 2)
        entropy_loss = wmean(entropy)
        loss = pg_loss - hp.ent_coef * entropy_loss + hp.vf_coef * v_loss
        self.optimizer.zero_grad(set_to_none=True)
        if self.team is not None:  # data-parallel: every learner steps with the gradients' mean over all of them
            self.team.start_averaging(self.optimizer.params, loss)  # summed while backward runs
        if loss.requires_grad:  # not when none of a data-parallel minibatch is here (its gradients: zero)
            loss.backward()
        if self.team is not None:
            loss = self.team.finish_averaging()
        grad_norm = clip_grad_norm(self.optimizer.params, hp.max_grad_norm)
        finite = torch.isfinite(loss.detach() + grad_norm)
        if self.sync_free:
            self.all_finite &= finite
            self.disabled_steps += (~self.all_finite).long()
            self.optimizer.step(enabled=self.all_finite)
        elif not bool(finite):  # a host read costs nothing on the CPU; the guarded step would cost two passes
            self.optimizer.zero_grad(set_to_none=True)
            return False
        else:
            self.optimizer.step()
        stats["policy_loss"].append(pg_loss.detach())
        stats["value_loss"].append(v_loss.detach())
        stats["entropy"].append(entropy_loss.detach())
        return True

    def load_weights(self, state: Mapping[str, Any]) -> None:
        """Model and optimizer moments from a checkpoint's ``model`` and ``optimizer`` entries."""
        self.agent.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])

    def state_dict(self) -> dict[str, Any]:
        """``model`` and ``optimizer`` entries of a checkpoint (:meth:`load_weights` reads them back)."""
        return {"model": self.agent.state_dict(), "optimizer": self.optimizer.state_dict()}
