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

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch

from pufferbox.train.config import TrainConfig
from pufferbox.train.distributed import Solo, Team
from pufferbox.train.hardware import pick_autocast
from pufferbox.train.optim import make_optimizer
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
    delta = rewards[:, :steps] + gamma * values[:, 1:] * nonterminal - values[:, :steps]
    adv = discounted_suffix_sums(delta.float(), starts[:, 1:], gamma * lam)  # float32, as turn_gae's
    return adv, adv + values[:, :steps]


SCAN_ELEMENTS = 1 << 24  # the largest (rows, block + 1, block + 1) matrix one scan block builds (64 MiB)


def discounted_suffix_sums(x: torch.Tensor, cut: torch.Tensor, discount: float) -> torch.Tensor:
    """``y[:, t] = x[:, t] + discount * (not cut[:, t]) * y[:, t + 1]`` (``y`` past the end is 0), in blocks of
    time, each one batched matrix product instead of a step per time index: within a block, ``y[t]`` is
    ``x[k]`` summed over ``k >= t`` with weight ``discount ** (k - t)`` while no cut lies in ``t..k-1``
    (the cuts counted so far are equal at ``t`` and ``k``), plus the next block's first ``y`` the same way."""
    rows, steps = x.shape
    block = max(1, min(steps, math.isqrt(SCAN_ELEMENTS // max(1, rows)) - 1))
    span = torch.arange(block + 1, device=x.device)
    ahead = (span[None, :] - span[:, None]).double()
    powers = torch.where(ahead >= 0, discount**ahead, 0.0).to(x.dtype)  # [t, k]: discount ** (k - t), k >= t
    out = torch.empty_like(x)
    carry = torch.zeros(rows, 1, device=x.device, dtype=x.dtype)
    for end in range(steps, 0, -block):
        begin = max(0, end - block)
        width = end - begin
        cuts = torch.nn.functional.pad(cut[:, begin:end].to(torch.int32).cumsum(1), (1, 0))  # cuts before t
        same = cuts[:, :width, None] == cuts[:, None, :]  # (rows, t, k): no cut between t and k
        weights = same * powers[:width, : width + 1]
        values = torch.cat([x[:, begin:end], carry], dim=1).unsqueeze(-1)
        out[:, begin:end] = torch.bmm(weights, values).squeeze(-1)
        carry = out[:, begin : begin + 1]
    return out


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


class ClippedPPOLoss(torch.autograd.Function):
    """The clipped PPO objective of a minibatch as one autograd node: the forward computes the loss and the
    statistics, the backward writes the loss's gradients with respect to the new log-probabilities,
    entropies and values directly, so neither pass issues an operation per term of the objective.

    ``old`` holds ``(old log-probability, -normalized advantage, return, lowest and highest value error
    the value clip allows)`` per sample (:meth:`Learner.epoch_minibatches`); ``coef`` each sample's weight
    in the means (None: each weighs 1, and ``weights`` holds the ``1 / samples``). Returns the loss and
    the weighted sums of ``(policy, value, entropy, approx_kl, clipfrac)`` terms; ``weights[0]``
    weighs those sums into the loss, ``weights[1]`` is its derivative per term.
    """

    @staticmethod
    def forward(ctx, new_logprob, entropy, new_value, old, coef, weights, clip: float, clip_value: bool):
        old_logprob, neg_adv, ret, low, high = old.unbind(-1)
        logratio = new_logprob - old_logprob
        ratio_less_one = logratio.expm1()  # exact near 0, where the approximate KL below cancels
        ratio = ratio_less_one + 1
        clipped_ratio = ratio.clamp(1 - clip, 1 + clip)
        surrogate, clipped = neg_adv * ratio, neg_adv * clipped_ratio
        policy = torch.maximum(surrogate, clipped)
        # the unclipped surrogate carries the gradient where it is the larger (equal inside the clip range)
        policy_slope = torch.where(surrogate >= clipped, surrogate, 0.0)
        error = new_value - ret
        if clip_value:  # old value + clamp(new - old, -clip, clip) - return, as a clamp of the error itself
            error_clipped = error.clamp(low, high)
            square, square_clipped = error * error, error_clipped * error_clipped
            value = torch.maximum(square, square_clipped)
            value_slope = torch.where(square >= square_clipped, error, 0.0)  # equal where the clip is inactive
        else:
            value, value_slope = error * error, error
        terms = torch.stack([policy, value, entropy, ratio_less_one - logratio, (clipped_ratio != ratio).float()], -1)
        sums = terms.sum(0) if coef is None else coef @ terms
        ctx.save_for_backward(policy_slope, value_slope, coef, weights)
        ctx.mark_non_differentiable(sums)
        return torch.dot(sums, weights[0]), sums

    @staticmethod
    def backward(ctx, grad_loss, _grad_sums):
        policy_slope, value_slope, coef, weights = ctx.saved_tensors
        per_term = grad_loss * weights[1]  # d loss / d each sample's terms (times coef): d error**2 = 2 error
        grad_logprob, grad_value = policy_slope * per_term[0], value_slope * per_term[1]
        if coef is None:
            return grad_logprob, per_term[2].expand(policy_slope.shape[0]), grad_value, *(None,) * 5
        return grad_logprob * coef, coef * per_term[2], grad_value * coef, *(None,) * 5


class Minibatch(NamedTuple):
    """One minibatch step's inputs (views of the epoch's gathered tensors where one learner holds the batch).

    ``old``: ``(samples, 5)``, see :class:`ClippedPPOLoss`; ``coef``: each sample's weight in the loss's
    means (None: a plain mean); recurrent: ``obs``/``actions``/``starts`` time-major ``(steps, segments,
    ...)`` and ``state`` the segments' first LSTM states."""

    obs: torch.Tensor
    actions: torch.Tensor
    old: torch.Tensor
    coef: torch.Tensor | None
    state: tuple[torch.Tensor, torch.Tensor] | None = None
    starts: torch.Tensor | None = None


COLUMNS = 5  # old log-probability, advantage (then -normalized), return, value error clip bounds
STAT_KEYS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")


class Learner:
    """Owns the optimizer and the minibatch shuffle generator (on the agent's device) of one agent;
    ``hp`` its hyperparameters."""

    def __init__(self, agent: Agent, hp: TrainConfig, seed: int = 1, compile: bool = False, team: Team | Solo | None = None):
        self.agent, self.hp = agent, hp
        self.team: Team | Solo = Solo() if team is None else team
        # train.compile: the minibatch's forward and loss as one graph, and their backward as another (AOTAutograd)
        self.loss_fn = torch.compile(self.forward_loss, mode=hp.compile_mode) if compile else self.forward_loss
        device = next(agent.parameters()).device
        self.device, self.device_type = device, device.type
        self.low_precision = pick_autocast(hp.autocast, device) == "bf16"
        self.optimizer = make_optimizer(agent, hp.optimizer, hp.learning_rate)
        self.generator = torch.Generator(device=device).manual_seed(seed)  # minibatch shuffles
        self.seed = seed
        self.nonfinite = 0  # updates in a row skipped for a NaN/inf reward, value or loss
        # Minibatch steps read nothing on the host (NaN guard and target_kl stop on the device, read once per
        # update): on an accelerator, where a read waits for the device; tests set it on the CPU.
        self.sync_free = device.type != "cpu"
        self.row_scale = 1.0  # the terms' sums per minibatch times this are their means
        self.weights_key: tuple[float, float, int] | None = None

    def reset_optimizer(self) -> None:
        """Fresh optimizer moments (a new lineage in a tournament)."""
        self.optimizer = make_optimizer(self.agent, self.hp.optimizer, self.hp.learning_rate)

    def restore_shuffle(self, state: torch.Tensor) -> None:
        """The shuffle generator's state from a checkpoint; one saved on another kind of device (a CPU run
        resumed on a GPU) cannot be set there: the shuffles then restart from the seed."""
        try:
            self.generator.set_state(state.cpu())
        except RuntimeError:
            self.generator.manual_seed(self.seed)

    def update(self, batch: dict[str, torch.Tensor], progress: float = 0.0) -> dict[str, float]:
        """PPO epochs over ``batch``; ``progress`` (0 to 1, the run's fraction done) anneals the learning rate."""
        hp = self.hp
        lr = hp.learning_rate * (max(0.0, 1.0 - progress) if hp.anneal_lr else 1.0)
        self.optimizer.set_lr(lr)
        if "advantages" in batch:  # targets computed by the caller (overlap.vtrace_targets for lagged data)
            adv, returns = batch["advantages"], batch["returns"]
        else:
            waiting = not bool(batch["masks"].all())  # turn-based envs (agents that wait) or absent agents
            acting = batch["masks"] if waiting else None
            adv, returns = gae(batch["rewards"], batch["values"], batch["starts"], hp.gamma, hp.gae_lambda, acting)
        finite = bool(torch.isfinite(returns).all())
        if not self.team.all_true(finite):  # a NaN/inf reward or value anywhere: every learner skips
            return self.skipped(lr)
        data = self.prepare(batch, adv, returns)
        if data["whole"] == 0:
            return {}
        rows = self.epochs(data)
        if rows is not None and self.sync_free:
            rows = self.kept_rows(rows)
        if rows is None:
            return self.skipped(lr)
        return self.statistics(rows, data, returns) | {"learning_rate": lr, "nonfinite_updates": 0}

    def prepare(self, batch: dict[str, torch.Tensor], adv: torch.Tensor, returns: torch.Tensor) -> dict[str, Any]:
        """The batch laid out for the epochs: each sample's scalars packed as one ``(..., 5)`` tensor, the
        live units (feed-forward: transitions, recurrent: segments) and, data-parallel, this learner's place."""
        steps = adv.shape[1]
        obs, actions, masks, starts, values = (batch[k][:, :steps] for k in ("obs", "actions", "masks", "starts", "values"))
        low = values - returns - self.hp.clip_coef
        packed = torch.stack([batch["logprobs"][:, :steps], adv, returns, low, low + 2 * self.hp.clip_coef], -1)
        data: dict[str, Any] = {"masks": masks, "values": values, "packed": packed, "recurrent": "h" in batch}
        if data["recurrent"]:  # minibatches of whole segments, time-major for the unroll
            data |= {"obs": obs, "actions": actions, "starts": starts, "h0": batch["h"][:, 0], "c0": batch["c"][:, 0]}
            units, count = None, len(obs)
        else:  # minibatches of single live transitions
            flat = lambda x: x.reshape(-1, *x.shape[2:])
            data |= {"obs": flat(obs), "actions": flat(actions), "packed": flat(packed)}
            units = None if bool(masks.all()) else masks.reshape(-1).nonzero().squeeze(-1)
            count = masks.numel() if units is None else len(units)
        # data-parallel: this learner's units are positions offset.. of the whole batch's (learners in rank order)
        offset, whole = self.team.offset_and_total(count)
        return data | {"units": units, "count": count, "offset": offset, "whole": whole}

    def epochs(self, data: dict[str, Any]) -> list[torch.Tensor] | None:
        """``update_epochs`` epochs of minibatch steps; each step's statistics row, or None when a step was
        not finite on the CPU. With ``sync_free`` nothing here reads the device: ``halt`` (1.0 once a step
        was not finite or target_kl passed) disables every later step, and :meth:`kept_rows` reads it once."""
        hp = self.hp
        mb_size = max(1, data["whole"] // hp.num_minibatches)
        rows: list[torch.Tensor] = []
        self.halt = torch.zeros((), device=self.device)
        self.epoch_marks: list[torch.Tensor] = []  # sync_free: halt before and after each epoch's steps
        for _epoch in range(hp.update_epochs):
            minibatches = self.epoch_minibatches(data, mb_size)
            if self.sync_free:
                self.epoch_marks.append(self.halt.clone())
            for mb in minibatches:
                if not self.minibatch_step(mb, rows):
                    return None
            if self.sync_free:
                self.epoch_marks.append(self.halt.clone())
            if hp.target_kl and self.kl_stopped(rows, len(minibatches)):
                break
        return rows

    def kl_stopped(self, rows: list[torch.Tensor], per_epoch: int) -> bool:
        """Whether ``target_kl`` ends the epochs here (the last epoch's mean approximate KL); with
        ``sync_free`` the later epochs run with their steps disabled instead of a host read."""
        recent_kl = self.team.average(torch.stack(rows[-max(1, per_epoch) :])[:, 3].mean() * self.row_scale)
        if self.sync_free:
            self.halt.logical_or_(recent_kl > self.hp.target_kl)
            return False
        return float(recent_kl) > self.hp.target_kl

    def kept_rows(self, rows: list[torch.Tensor]) -> list[torch.Tensor] | None:
        """``sync_free``: the rows of the epochs that ran enabled, or None when a step was not finite (the one
        host read of the update: halt rose during an epoch's steps only for a non-finite step)."""
        marks = torch.stack(self.epoch_marks).view(-1, 2).tolist()
        if any(after > before for before, after in marks):
            return None
        enabled = sum(1 for before, _ in marks if not before)
        return rows[: enabled * len(rows) // max(1, len(marks))]

    def epoch_minibatches(self, data: dict[str, Any], mb_size: int) -> list[Minibatch]:
        """One epoch's minibatches: a shuffle of the whole batch's units cut into ``mb_size`` slices (the
        remainder left out). One learner: the shuffle drawn on the device and every tensor gathered once
        in its order, the minibatches slices of that. Data-parallel: see :meth:`team_minibatches`."""
        if self.team.size > 1:
            return self.team_minibatches(data, mb_size)
        cuts = data["whole"] // mb_size
        order = torch.randperm(data["whole"], generator=self.generator, device=self.device)[: cuts * mb_size]
        if data["units"] is not None:
            order = data["units"][order]
        packed = data["packed"][order]
        if not data["recurrent"]:
            packed = normalized(packed.view(cuts, mb_size, COLUMNS), None, self.hp.norm_adv).view(-1, COLUMNS)
            obs, actions = data["obs"][order], data["actions"][order]
            return [
                Minibatch(obs[i : i + mb_size], actions[i : i + mb_size], packed[i : i + mb_size], None)
                for i in range(0, cuts * mb_size, mb_size)
            ]
        weight = data["masks"][order].float()
        steps = weight.shape[1]
        packed = normalized(packed.view(cuts, -1, COLUMNS), weight.view(cuts, -1), self.hp.norm_adv)
        packed = packed.view(-1, steps, COLUMNS)
        coef = weight / weight.view(cuts, -1).sum(1).clamp(min=1.0).repeat_interleave(mb_size)[:, None]
        obs, actions, starts = (data[k][order].transpose(0, 1) for k in ("obs", "actions", "starts"))
        h0, c0 = data["h0"][order], data["c0"][order]
        time_major = lambda x, i: x[:, i : i + mb_size]
        return [
            Minibatch(
                time_major(obs, i),
                time_major(actions, i),
                packed[i : i + mb_size].transpose(0, 1).reshape(-1, COLUMNS),
                coef[i : i + mb_size].transpose(0, 1).reshape(-1),
                (h0[i : i + mb_size], c0[i : i + mb_size]),
                time_major(starts, i),
            )
            for i in range(0, cuts * mb_size, mb_size)
        ]

    def team_minibatches(self, data: dict[str, Any], mb_size: int) -> list[Minibatch]:
        """Data-parallel: every learner draws the same shuffle of the whole batch and keeps the positions
        ``offset..offset + count`` it holds; the means are over the whole minibatch, from its live samples,
        advantage sum and sum of squares summed over all learners (float64, one all-reduce per epoch)."""
        whole, offset, count = data["whole"], data["offset"], data["count"]
        order = torch.randperm(whole, generator=self.generator, device=self.device).cpu()
        units = torch.arange(count, device=self.device) if data["units"] is None else data["units"]
        positions = [order[start : start + mb_size] - offset for start in range(0, whole - mb_size + 1, mb_size)]
        recurrent = data["recurrent"]
        parts = []
        for p in positions:
            idx = units[p[(p >= 0) & (p < count)].to(self.device)]
            weight = data["masks"][idx].float() if recurrent else torch.ones(len(idx), device=self.device)
            a, w = data["packed"][idx][..., 1].reshape(-1).double(), weight.reshape(-1).double()
            parts.append((idx, weight, torch.stack([w.sum(), (w * a).sum(), (w * a * a).sum()])))
        moments: Any = self.team.all_reduce(torch.stack([p[2] for p in parts])) if parts else []
        out = []
        for (idx, weight, _), whole_mb in zip(parts, moments):
            packed = with_advantage(data["packed"][idx], team_normalized(data["packed"][idx][..., 1], whole_mb, self.hp))
            coef = weight * (self.team.size / whole_mb[0].clamp(min=1.0).float())
            if not recurrent:
                out.append(Minibatch(data["obs"][idx], data["actions"][idx], packed, coef))
                continue
            sl = lambda x: x.transpose(0, 1)
            old, coef = sl(packed).reshape(-1, COLUMNS), sl(coef).reshape(-1)
            state = (data["h0"][idx], data["c0"][idx])
            out.append(Minibatch(sl(data["obs"][idx]), sl(data["actions"][idx]), old, coef, state, sl(data["starts"][idx])))
        return out

    def skipped(self, lr: float) -> dict[str, float]:
        self.nonfinite += 1
        return {"learning_rate": lr, "nonfinite_updates": self.nonfinite}

    def minibatch_step(self, mb: Minibatch, rows: list[torch.Tensor]) -> bool:
        """One gradient step of the clipped PPO objective on ``mb``; its statistics row appended to ``rows``.
        A loss or gradient that is not finite: on the CPU no step and False; with ``sync_free`` (an
        accelerator) ``halt`` is set and from then on the steps change nothing, without a host read."""
        hp = self.hp
        samples = 1 if mb.coef is not None else mb.old.shape[0]  # a plain mean: its size folded into the weights
        weights, self.row_scale = self.loss_weights(samples), 1.0 / samples
        loss, sums = self.loss_fn(mb, weights)
        self.optimizer.zero_grad(set_to_none=True)
        # data-parallel: every learner steps with the gradients' mean over all of them (summed while backward runs)
        self.team.start_averaging(self.optimizer.params, loss)
        if loss.requires_grad:  # not when none of a data-parallel minibatch is here (its gradients: zero)
            loss.backward()
        loss = self.team.finish_averaging()
        grad_norm, grad_scale = clipping(self.optimizer.params, hp.max_grad_norm)
        finite = torch.isfinite(loss.detach() + grad_norm)
        if self.sync_free:
            self.halt.logical_or_(~finite)
            self.optimizer.step(self.halt, grad_scale)
        elif not bool(finite):  # a host read costs nothing on the CPU; the guarded step would cost two passes
            self.optimizer.zero_grad(set_to_none=True)
            return False
        else:
            self.optimizer.step(None, grad_scale)
        rows.append(sums)
        return True

    def forward_loss(self, mb: Minibatch, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy on ``mb`` and :class:`ClippedPPOLoss`: ``(loss, sums of the terms)``; what ``train.compile``
        compiles, whole (the policy's forward and the loss, and from them their backward)."""
        with torch.autocast(self.device_type, dtype=torch.bfloat16, enabled=self.low_precision):
            if mb.old.shape[0] == 0:  # data-parallel: none of this minibatch is here; step with the others
                nothing = torch.zeros(0, device=self.device)
                new: tuple[torch.Tensor, ...] = (nothing,) * 3
            elif mb.state is not None:
                new = self.agent.evaluate(mb.obs, mb.actions, mb.state, mb.starts)
            else:
                new = self.agent.evaluate(mb.obs, mb.actions)
        new_logprob, entropy, new_value = (x if x.dtype == torch.float32 else x.float() for x in new)
        args = (mb.old, mb.coef, weights, self.hp.clip_coef, self.hp.clip_vloss)
        return ClippedPPOLoss.apply(new_logprob, entropy, new_value, *args)

    def loss_weights(self, samples: int) -> torch.Tensor:
        """:class:`ClippedPPOLoss`'s ``weights`` for minibatches of ``samples`` (1: weighted means): the loss's
        weights of the terms' sums and their derivatives (a squared error's is twice its error); made once
        per minibatch size and coefficients (a tournament changes ``hp`` between updates)."""
        hp = self.hp
        key = (hp.vf_coef, hp.ent_coef, samples)
        if key != self.weights_key:
            rows = [[1.0, 0.5 * hp.vf_coef, -hp.ent_coef, 0, 0], [1.0, hp.vf_coef, -hp.ent_coef, 0, 0]]
            self.weights_key, self.weights = key, torch.tensor(rows, device=self.device) / samples
        return self.weights

    def statistics(self, rows: list[torch.Tensor], data: dict[str, Any], returns: torch.Tensor) -> dict[str, float]:
        """The epochs' mean losses and statistics, and the value function's explained variance (one read)."""
        live = data["masks"].reshape(-1)
        y_pred, y_true = data["values"].reshape(-1)[live], returns.reshape(-1)[live]
        var_y = torch.var(y_true) if len(y_true) > 1 else torch.zeros((), device=y_true.device)
        explained = torch.where(var_y == 0, float("nan"), 1 - torch.var(y_true - y_pred) / var_y).double()
        scale = torch.tensor([1.0, 0.5, 1.0, 1.0, 1.0], dtype=torch.float64, device=explained.device) * self.row_scale
        # rows: each minibatch's sums of (policy, value, entropy, approx_kl, clipfrac) terms
        sums = torch.stack(rows).double().mean(0) if rows else torch.full((5,), float("nan"), dtype=torch.float64)
        # data-parallel: each learner's statistics are its share of the whole minibatch's: their average
        out = torch.cat([self.team.average(sums.to(explained.device) * scale), explained.reshape(1)])
        return dict(zip((*STAT_KEYS, "explained_variance"), out.tolist()))

    def load_weights(self, state: Mapping[str, Any]) -> None:
        """Model and optimizer moments from a checkpoint's ``model`` and ``optimizer`` entries."""
        self.agent.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])

    def state_dict(self) -> dict[str, Any]:
        """``model`` and ``optimizer`` entries of a checkpoint (:meth:`load_weights` reads them back)."""
        return {"model": self.agent.state_dict(), "optimizer": self.optimizer.state_dict()}


def with_advantage(packed: torch.Tensor, neg_adv: torch.Tensor) -> torch.Tensor:
    """``packed`` with its advantage column replaced by ``neg_adv`` (what :class:`ClippedPPOLoss` reads)."""
    return torch.cat([packed[..., :1], neg_adv.unsqueeze(-1), packed[..., 2:]], -1)


def normalized(packed: torch.Tensor, weight: torch.Tensor | None, on: bool) -> torch.Tensor:
    """``packed`` ``(minibatches, samples, 5)`` with each minibatch's advantages (column 1) normalized to mean
    0 and standard deviation 1 (unbiased; weighted by ``weight`` when given) and negated; a minibatch of
    one live sample keeps its advantage."""
    adv = packed[..., 1]
    if not on:
        return with_advantage(packed, -adv)
    if weight is None:
        if adv.shape[1] < 2:
            return with_advantage(packed, -adv)
        var, mean = torch.var_mean(adv, dim=1, keepdim=True)
        return with_advantage(packed, (mean - adv) / (var.sqrt() + 1e-8))
    total = weight.sum(1, keepdim=True).clamp(min=1.0)
    mean = (adv * weight).sum(1, keepdim=True) / total
    var = ((adv - mean) ** 2 * weight).sum(1, keepdim=True) / total
    std = (var * total / (total - 1).clamp(min=1e-8)).sqrt()
    return with_advantage(packed, torch.where(total > 1, (mean - adv) / (std + 1e-8), -adv))


def team_normalized(adv: torch.Tensor, whole: torch.Tensor, hp: TrainConfig) -> torch.Tensor:
    """Data-parallel: ``-adv`` normalized with the whole minibatch's ``(live samples, sum, sum of squares)``."""
    if not hp.norm_adv:
        return -adv
    total = whole[0].clamp(min=1.0)
    mean = whole[1] / total
    var = (whole[2] / total - mean**2).clamp(min=0.0)  # never below 0 by rounding
    std = (var * total / (total - 1).clamp(min=1e-8)).sqrt().float()
    return torch.where(whole[0] > 1, (mean.float() - adv) / (std + 1e-8), -adv)


def clipping(params: list[torch.Tensor], max_norm: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(total gradient norm, divisor)``: the optimizer divides the gradients by the divisor, which clips
    their norm to ``max_norm`` as ``nn.utils.clip_grad_norm_`` does, without a step of its own."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        zero = torch.zeros((), device=params[0].device if params else None)
        return zero, zero + 1
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    return total, (total / max_norm).clamp(min=1.0)
