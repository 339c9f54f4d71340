"""Continuous actions on the kernels' device: a policy's floats as the fixed point words a C step reads.

A continuous C game (``pufferbox.native.actions``) reads each action element as the integer
``round(clip(a, -1, 1) * one)`` (``one`` = 65536, round half to even), which the CPU block computes with
numpy's ``np.rint``. :func:`quantize_into` is the same arithmetic in torch on the tensor's own device, so
the kernels step on the very integers the CPU block would: the values go to float64 (exact for float16,
bfloat16, float32, float64 and any integer in range), are clipped, multiplied by ``one`` (a power of
two: exact) and rounded by ``torch.round`` (half to even, as ``np.rint``).

NaN: the CPU block refuses it, but refusing it here would need a device-to-host read every step, so it
becomes 0 (the middle of the range, never an out-of-range word a game could index with); the trainer
finds the NaN log-probability that comes with such an action once per rollout and stops with
``NonFiniteInput``.

Example:
    >>> import torch
    >>> out = torch.zeros(4, dtype=torch.int32)
    >>> quantize_into(torch.tensor([0.5, -2.0, 1.5 / 65536, 2.5 / 65536]), 65536, out).tolist()
    [32768, -65536, 2, 2]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on use: importing the cuda backend stays cheap
    import torch

__all__ = ["quantize_into"]


def quantize_into(actions: Any, one: int, out: torch.Tensor, scratch: torch.Tensor | None = None) -> torch.Tensor:
    """``actions`` (any shape, as many elements as ``out``) as ``round(clip(a, -1, 1) * one)`` written into
    the integer tensor ``out`` (flat, on the kernels' device); ``scratch``: a float64 tensor like ``out`` to
    reuse (none: one is allocated). NaN becomes 0 (see the module docstring)."""
    import torch

    values = torch.as_tensor(actions).reshape(-1)
    if values.numel() != out.numel():
        raise ValueError(
            f"got {values.numel()} continuous action values, the envs read {out.numel()}; "
            f"fix: send one value per agent and action element ({tuple(out.shape)} in all)"
        )
    if scratch is None:
        scratch = torch.empty(out.shape, dtype=torch.float64, device=out.device)
    scratch.view(-1).copy_(values, non_blocking=True)
    torch.nan_to_num(scratch, nan=0.0, out=scratch)
    scratch.clamp_(-1.0, 1.0).mul_(one).round_()
    out.copy_(scratch)
    return out
