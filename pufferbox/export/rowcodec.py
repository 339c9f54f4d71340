"""Observation leaves read out of a byte row with arithmetic only, so graph exporters can follow.

A row whose leaves have different dtypes is raw bytes (:mod:`pufferbox.spaces`), and policies read
their leaves back with ``Tensor.view(dtype)``, a bitcast that neither ONNX nor torch.export's ONNX
translation has. Little-endian bytes are instead combined with multiplies and adds (integers) or
split into sign, exponent and mantissa (IEEE floats), which every runtime computes exactly.

Example:
    >>> import numpy as np, torch
    >>> row = torch.from_numpy(np.array([-3, 7], np.int16).view(np.uint8))[None]
    >>> decode_leaf(row, 0, np.dtype(np.int16), (2,)).tolist()
    [[-3, 7]]
"""

from __future__ import annotations

import numpy as np
import torch

from pufferbox.spaces import SpaceError, torch_dtype_of

__all__ = ["decode_leaf", "DECODABLE"]

DECODABLE = tuple(
    np.dtype(t)
    for t in (np.uint8, np.int8, np.bool_, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.float32, np.float64)
)
FLOAT_FIELDS = {4: (23, 127), 8: (52, 1023)}  # bytes -> (mantissa bits, exponent bias)


def unsigned(parts: torch.Tensor, first: int, count: int) -> torch.Tensor:
    """The unsigned integer of bytes ``first..first+count-1`` (little-endian, at most 7: fits int64)."""
    value = parts[..., first]
    for k in range(1, count):
        value = value + parts[..., first + k] * (256**k)
    return value


def signed(value: torch.Tensor, bits: int) -> torch.Tensor:
    """Two's complement of an unsigned ``bits``-wide value."""
    return value - (value >= 2 ** (bits - 1)).to(torch.int64) * (2**bits)


def integer(parts: torch.Tensor, size: int, is_signed: bool) -> torch.Tensor:
    if size < 8:
        value = unsigned(parts, 0, size)
        return signed(value, 8 * size) if is_signed else value
    # int64: low 32 bits plus the signed high 32 bits times 2**32, never overflowing on the way
    return signed(unsigned(parts, 4, 4), 32) * (2**32) + unsigned(parts, 0, 4)


def floating(parts: torch.Tensor, size: int) -> torch.Tensor:
    """A float32/float64 leaf as float64, from its sign, exponent and mantissa bits."""
    mant_bits, bias = FLOAT_FIELDS[size]
    top, second = parts[..., size - 1], parts[..., size - 2]
    low_exp_bits = 8 - (mant_bits - 8 * (size - 2))  # exponent bits held in the second-highest byte
    split = 2 ** (8 - low_exp_bits)  # the second byte: low exponent bits above the top mantissa bits
    sign = torch.div(top, 128, rounding_mode="floor")
    exp_low = torch.div(second, split, rounding_mode="floor")
    exponent = (top - sign * 128) * (2**low_exp_bits) + exp_low
    mantissa = (second - exp_low * split) * (256 ** (size - 2)) + unsigned(parts, 0, size - 2)
    mantissa_f = mantissa.to(torch.float64)
    exp_f = exponent.to(torch.float64)
    normal = (mantissa_f + 2.0**mant_bits) * torch.pow(2.0, exp_f - float(bias + mant_bits))
    subnormal = mantissa_f * torch.pow(2.0, torch.full_like(exp_f, float(1 - bias - mant_bits)))
    magnitude = torch.where(exponent == 0, subnormal, normal)
    special = torch.where(mantissa == 0, torch.full_like(magnitude, float("inf")), torch.full_like(magnitude, float("nan")))
    magnitude = torch.where(exponent == 2 ** (8 * size - mant_bits - 1) - 1, special, magnitude)
    return magnitude * (1 - 2 * sign).to(torch.float64)


def decode_leaf(row: torch.Tensor, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """The leaf of ``dtype`` and ``shape`` stored at byte ``offset`` of ``(..., bytes)`` uint8 rows."""
    if dtype not in DECODABLE:
        raise SpaceError(f"{dtype} leaves in a byte row cannot be exported (supported: {', '.join(map(str, DECODABLE))})")
    lead, count, size = row.shape[:-1], int(np.prod(shape, dtype=np.int64)), dtype.itemsize
    raw = row.narrow(-1, offset, count * size)
    if dtype == np.uint8:
        return raw.reshape(*lead, *shape)
    parts = raw.reshape(*lead, count, size).to(torch.int64)
    if dtype == np.bool_:
        value = parts[..., 0] != 0
    elif dtype.kind == "f":
        value = floating(parts, size)
    else:
        value = integer(parts, size, dtype.kind == "i")
    return value.to(torch_dtype_of(dtype)).reshape(*lead, *shape)
