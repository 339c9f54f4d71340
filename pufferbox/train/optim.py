"""Adam, in a dozen lines: the same update as ``torch.optim.Adam`` without its start-up cost.

Constructing any ``torch.optim`` optimizer imports ``torch._dynamo`` (about 1.7 s on
a 2-core machine), a sixth of the 10 s CartPole time-to-solve budget. This class does
the textbook Adam update with foreach kernels and has ``state_dict`` /
``load_state_dict`` of plain tensors for checkpoints (tests compare it to torch's).

Example:
    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = Adam([w], lr=0.1)
    >>> (w ** 2).sum().backward(); opt.step()
    >>> [round(x, 3) for x in w.tolist()]
    [0.9, 0.9]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

__all__ = ["Adam"]


class Adam:
    """``torch.optim.Adam`` semantics (no weight decay, no amsgrad); ``param_groups[0]["lr"]`` is settable."""

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.params: list[torch.Tensor] = [p for p in params if p.requires_grad]
        self.param_groups: list[dict[str, Any]] = [{"lr": lr, "betas": betas, "eps": eps}]
        self.step_count = 0
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, enabled: torch.Tensor | None = None) -> None:
        """One Adam step; ``enabled`` (a bool tensor on the device) False leaves parameters and moments
        exactly as they were, without reading it on the host (the caller corrects ``step_count`` once)."""
        if enabled is not None:
            return self.guarded_step(enabled)
        lr, beta1, beta2, eps = self.hyperparameters()
        params, grads, m, v = self.live()
        self.step_count += 1
        torch._foreach_lerp_(m, grads, 1 - beta1)
        torch._foreach_mul_(v, beta2)
        torch._foreach_addcmul_(v, grads, grads, 1 - beta2)
        bias1 = 1 - beta1**self.step_count
        bias2_sqrt = (1 - beta2**self.step_count) ** 0.5
        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, bias2_sqrt)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, m, denom, -lr / bias1)

    def guarded_step(self, enabled: torch.Tensor) -> None:
        # The step into new tensors, then lerp by 0 or 1, which torch computes exactly (a + 0*(b-a), b - 0*(b-a)).
        lr, beta1, beta2, eps = self.hyperparameters()
        params, raw_grads, m, v = self.live()
        grads = [torch.where(enabled, g, 0.0) for g in raw_grads]  # NaN grads would poison 0 * x
        self.step_count += 1
        weight = enabled.to(params[0].dtype) if params else enabled.float()
        new_m = torch._foreach_lerp(m, grads, 1 - beta1)
        new_v = torch._foreach_mul(v, beta2)
        torch._foreach_addcmul_(new_v, grads, grads, 1 - beta2)
        denom = torch._foreach_sqrt(new_v)
        torch._foreach_div_(denom, (1 - beta2**self.step_count) ** 0.5)
        torch._foreach_add_(denom, eps)
        update = torch._foreach_div(new_m, denom)
        torch._foreach_mul_(update, weight * (-lr / (1 - beta1**self.step_count)))
        torch._foreach_add_(params, list(update))
        # a 0-d tensor weight works at run time; torch's stubs list only number/sequence weights
        torch._foreach_lerp_(m, new_m, weight)  # type: ignore[call-overload]
        torch._foreach_lerp_(v, new_v, weight)  # type: ignore[call-overload]

    def hyperparameters(self) -> tuple[float, float, float, float]:
        """``(lr, beta1, beta2, eps)`` of the single parameter group (lr changes during training)."""
        group = self.param_groups[0]
        beta1, beta2 = group["betas"]
        return float(group["lr"]), float(beta1), float(beta2), float(group["eps"])

    def live(self) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
        """The parameters that have a gradient, their gradients and their two Adam moments."""
        params, grads, m, v = [], [], [], []
        for p, exp_avg, exp_avg_sq in zip(self.params, self.exp_avg, self.exp_avg_sq):
            if p.grad is not None:
                params.append(p)
                grads.append(p.grad)
                m.append(exp_avg)
                v.append(exp_avg_sq)
        return params, grads, m, v

    def state_dict(self) -> dict:
        return {
            "step": self.step_count,
            "param_groups": [dict(g) for g in self.param_groups],
            "exp_avg": [t.clone() for t in self.exp_avg],
            "exp_avg_sq": [t.clone() for t in self.exp_avg_sq],
        }

    def load_state_dict(self, state: dict) -> None:
        if len(state["exp_avg"]) != len(self.params):
            raise ValueError(f"optimizer state has {len(state['exp_avg'])} tensors, the model {len(self.params)}")
        self.step_count = int(state["step"])
        self.param_groups = [dict(g, betas=tuple(g["betas"])) for g in state["param_groups"]]
        for dst, src in zip(self.exp_avg + self.exp_avg_sq, state["exp_avg"] + state["exp_avg_sq"]):
            dst.copy_(src)
