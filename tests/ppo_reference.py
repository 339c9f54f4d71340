"""The PPO update written plainly, one minibatch at a time (CleanRL's shape), for one learner.

The trainer's :class:`~pufferbox.train.learner.Learner` issues few operations (one gather per epoch, the
losses in one autograd function, a fused optimizer step); this is the same update spelled out with
``torch.optim.Adam`` and ``clip_grad_norm_``, so tests can hold the fast one to it (same seed, same batch).
"""

from __future__ import annotations

import torch

from pufferbox.train.config import TrainConfig
from pufferbox.train.learner import turn_gae
from pufferbox.train.policies import Agent


def loop_gae(rewards, values, starts, gamma, lam):
    steps = values.shape[1] - 1
    nonterminal = 1.0 - starts[:, 1:].float()
    adv = torch.zeros(len(values), steps)
    last = torch.zeros(len(values))
    for t in reversed(range(steps)):
        delta = rewards[:, t] + gamma * values[:, t + 1] * nonterminal[:, t] - values[:, t]
        last = delta + gamma * lam * nonterminal[:, t] * last
        adv[:, t] = last
    return adv, adv + values[:, :steps]


def reference_update(agent: Agent, hp: TrainConfig, batch: dict, optimizer: torch.optim.Adam, shuffle: torch.Generator):
    """One update; returns the per-minibatch ``(policy_loss, value_loss, entropy, approx_kl, clipfrac)`` rows."""
    masks = batch["masks"]
    if bool(masks.all()):
        adv, returns = loop_gae(batch["rewards"], batch["values"], batch["starts"], hp.gamma, hp.gae_lambda)
    else:
        adv, returns = turn_gae(batch["rewards"], batch["values"], batch["starts"], hp.gamma, hp.gae_lambda, masks)
    steps = adv.shape[1]
    obs, actions, logprobs, values, masks, starts = (
        batch[k][:, :steps] for k in ("obs", "actions", "logprobs", "values", "masks", "starts")
    )
    recurrent = "h" in batch
    units = torch.arange(len(obs)) if recurrent else masks.reshape(-1).nonzero().squeeze(-1)
    mb_size = max(1, len(units) // hp.num_minibatches)
    rows = []
    for _ in range(hp.update_epochs):
        order = units[torch.randperm(len(units), generator=shuffle)]
        for start in range(0, len(units) - mb_size + 1, mb_size):
            idx = order[start : start + mb_size]
            if recurrent:
                sl = lambda x, idx=idx: x[idx].transpose(0, 1)
                new_lp, ent, new_v = agent.evaluate(
                    sl(obs), sl(actions), (batch["h"][idx, 0], batch["c"][idx, 0]), sl(starts)
                )
                old_lp, old_v, a, r = (sl(x).reshape(-1) for x in (logprobs, values, adv, returns))
                w = sl(masks).reshape(-1).float()
            else:
                flat = lambda x, idx=idx: x.reshape(-1, *x.shape[2:])[idx]
                new_lp, ent, new_v = agent.evaluate(flat(obs), flat(actions))
                old_lp, old_v, a, r = (flat(x) for x in (logprobs, values, adv, returns))
                w = torch.ones_like(a)
            total = w.sum().clamp(min=1.0)
            mean = lambda x, w=w, total=total: (x * w).sum() / total
            logratio = new_lp - old_lp
            ratio = logratio.exp()
            if hp.norm_adv and total > 1:
                m = mean(a)
                std = (mean((a - m) ** 2) * total / (total - 1)).sqrt()
                a = (a - m) / (std + 1e-8)
            pg = mean(torch.max(-a * ratio, -a * ratio.clamp(1 - hp.clip_coef, 1 + hp.clip_coef)))
            if hp.clip_vloss:
                v_clip = old_v + (new_v - old_v).clamp(-hp.clip_coef, hp.clip_coef)
                v = 0.5 * mean(torch.max((new_v - r) ** 2, (v_clip - r) ** 2))
            else:
                v = 0.5 * mean((new_v - r) ** 2)
            e = mean(ent)
            loss = pg - hp.ent_coef * e + hp.vf_coef * v
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(agent.parameters(), hp.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                kl = mean((ratio - 1) - logratio)
                clipfrac = mean(((ratio - 1).abs() > hp.clip_coef).float())
            rows.append(torch.stack([pg, v, e, kl, clipfrac]).detach())
        if hp.target_kl and float(torch.stack([row[3] for row in rows[-hp.num_minibatches :]]).mean()) > hp.target_kl:
            break
    return rows
