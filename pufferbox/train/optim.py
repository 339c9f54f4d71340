"""The update's optimizers: Adam as one fused operation, and Muon for the hidden weights beside it.

:class:`Adam` is ``torch.optim.Adam``'s update (no weight decay, no amsgrad) issued as torch's single
fused Adam operation per step, which also takes the gradient clipping (as a divisor) and a skip flag,
so a step is one launch on an accelerator and reads nothing on the host. It avoids constructing a
``torch.optim`` optimizer, which imports ``torch._dynamo`` (about 1.7 s on a 2-core machine, a sixth of
CartPole's time-to-solve budget). ``state_dict``/``load_state_dict`` hold plain tensors for checkpoints.

:class:`MuonAdam` (``train.optimizer = "muon"``): ``torch.optim.Muon`` (momentum orthogonalized by
Newton-Schulz iterations) for every 2-D weight of the agent but its action and value layers and
embeddings, :class:`Adam` for those and for biases, convolutions and the rest. Muon's step is scaled
to Adam's update RMS (``adjust_lr_fn="match_rms_adamw"``), so one learning rate drives both.

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
from typing import Any, cast

import torch
from torch import nn

from pufferbox.train.config import ConfigError

__all__ = ["Adam", "MuonAdam", "make_optimizer", "muon_parameters"]


class Adam:
    """``torch.optim.Adam`` semantics (no weight decay, no amsgrad); :meth:`set_lr` changes the rate."""

    kind = "adam"

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.params: list[torch.Tensor] = [p for p in params if p.requires_grad]
        self.param_groups: list[dict[str, Any]] = [{"lr": lr, "betas": betas, "eps": eps}]
        device = self.params[0].device if self.params else torch.device("cpu")
        self.steps = torch.zeros((), device=device)  # steps taken, on the device (the kernel's bias correction)
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    @property
    def step_count(self) -> int:
        return int(self.steps)

    @step_count.setter
    def step_count(self, value: int) -> None:
        self.steps.fill_(value)

    def set_lr(self, lr: float) -> None:
        self.param_groups[0]["lr"] = lr

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, skip: torch.Tensor | None = None, grad_scale: torch.Tensor | None = None) -> None:
        """One Adam step on the gradients divided by ``grad_scale`` (a 0-d tensor: gradient clipping), in
        place. ``skip`` (a 0-d float tensor on the device) 1.0 leaves parameters, moments and the step
        count exactly as they were, without reading it on the host."""
        params, grads, m, v = self.live()
        if not params:
            return
        lr, (beta1, beta2), eps = self.param_groups[0]["lr"], self.param_groups[0]["betas"], self.param_groups[0]["eps"]
        self.steps.add_(1 if skip is None else 1 - skip)
        torch._fused_adam_(
            params,
            grads,
            m,
            v,
            [],
            [self.steps] * len(params),
            lr=float(lr),
            beta1=float(beta1),
            beta2=float(beta2),
            weight_decay=0.0,
            eps=float(eps),
            amsgrad=False,
            maximize=False,
            grad_scale=grad_scale,
            found_inf=skip,
        )

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
        if "muon" in state:
            raise ConfigError(
                "the checkpoint's optimizer is muon, the run's adam; fix: resume with --set train.optimizer=muon"
            )
        if len(state["exp_avg"]) != len(self.params):
            raise ValueError(f"optimizer state has {len(state['exp_avg'])} tensors, the model {len(self.params)}")
        self.step_count = int(state["step"])
        self.param_groups = [dict(g, betas=tuple(g["betas"])) for g in state["param_groups"]]
        for dst, src in zip(self.exp_avg + self.exp_avg_sq, state["exp_avg"] + state["exp_avg_sq"]):
            dst.copy_(src)


def muon_parameters(agent: nn.Module) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """``(muon, adam)``: the 2-D weights of ``agent``'s hidden layers (linear and recurrent), and the rest
    (the action and value layers, embeddings, biases, convolutions, log standard deviations)."""
    outputs = {id(p) for name in ("actor", "critic") for p in getattr(agent, name, nn.Module()).parameters()}
    embeddings = {id(p) for m in agent.modules() if isinstance(m, nn.Embedding) for p in m.parameters()}
    muon: list[nn.Parameter] = []
    adam: list[nn.Parameter] = []
    for p in agent.parameters():
        if not p.requires_grad:
            continue
        hidden = p.ndim == 2 and id(p) not in outputs and id(p) not in embeddings
        (muon if hidden else adam).append(p)
    return muon, adam


class MuonAdam:
    """``torch.optim.Muon`` on :func:`muon_parameters`' hidden weights, :class:`Adam` on the rest, one rate."""

    kind = "muon"
    MOMENTUM = 0.95  # Muon's published default (Nesterov momentum)

    def __init__(self, agent: nn.Module, lr: float, eps: float = 1e-5):
        muon, rest = muon_parameters(agent)
        if not muon:
            raise ConfigError(
                f"train.optimizer=muon: the policy {type(agent).__name__} has no 2-D hidden weights for Muon; "
                "fix: --set train.optimizer=adam"
            )
        self.params: list[torch.Tensor] = [p for p in agent.parameters() if p.requires_grad]
        self.adam = Adam(rest, lr=lr, eps=eps)
        self.muon = torch.optim.Muon(
            muon, lr=lr, weight_decay=0.0, momentum=self.MOMENTUM, nesterov=True, adjust_lr_fn="match_rms_adamw"
        )
        self.hidden = muon
        self.param_groups = self.adam.param_groups

    @property
    def step_count(self) -> int:
        return self.adam.step_count

    def set_lr(self, lr: float) -> None:
        self.adam.set_lr(lr)
        for group in self.muon.param_groups:
            group["lr"] = lr

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, skip: torch.Tensor | None = None, grad_scale: torch.Tensor | None = None) -> None:
        """As :meth:`Adam.step`; a skipped step puts Muon's weights and momentum back by an exact lerp."""
        grads = [p.grad for p in self.hidden if p.grad is not None]
        if grad_scale is not None and grads:
            torch._foreach_div_(grads, grad_scale)
        self.adam.step(skip, grad_scale)
        if skip is None:
            self.muon.step()
            return
        stepped = [p for p in self.hidden if p.grad is not None]
        for p in stepped:  # NaN gradients would poison the restoring lerp
            p.grad = torch.where(skip > 0, 0.0, cast(torch.Tensor, p.grad))
        self.muon_buffers()  # created before the snapshot, so a skipped first step restores them too
        buffers = [self.muon.state[p]["momentum_buffer"] for p in stepped]
        before = torch._foreach_mul(stepped + buffers, 1.0)
        self.muon.step()
        # lerp by exactly 0 or 1 (a 0-d tensor weight works at run time; torch's stubs list only numbers)
        torch._foreach_lerp_(stepped + buffers, before, skip)  # type: ignore[call-overload]

    def muon_buffers(self) -> None:
        for p in self.hidden:
            state = self.muon.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(p)

    def state_dict(self) -> dict:
        return {"adam": self.adam.state_dict(), "muon": self.muon.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        if "muon" not in state:
            raise ConfigError(
                "the checkpoint's optimizer is adam, the run's muon; fix: resume with --set train.optimizer=adam"
            )
        self.adam.load_state_dict(state["adam"])
        self.muon.load_state_dict(state["muon"])


def make_optimizer(agent: nn.Module, kind: str, lr: float) -> Adam | MuonAdam:
    """The optimizer ``train.optimizer`` names, for ``agent``'s trainable parameters."""
    if kind == "muon":
        return MuonAdam(agent, lr)
    return Adam(agent.parameters(), lr=lr, eps=1e-5)
