"""The kernels' integer RNG and float helpers in numpy, bit for bit (see ``kernels/pufferbox_common.cuh``).

Counter-based: a draw is a pure function of ``(key, counter)``, so a GPU thread's random
state is one ``uint32`` counter and the CPU reference recomputes any draw exactly.

Example:
    >>> import numpy as np
    >>> u = uniform(np.uint32(7), np.arange(3, dtype=np.uint32))
    >>> bool(((0 <= u) & (u < 1)).all()), u.dtype
    (True, dtype('float32'))
"""

from __future__ import annotations

import numpy as np

__all__ = ["mix32", "hash32", "uniform", "env_keys", "sin_poly", "cos_poly", "f32"]

U32 = np.uint32


def mix32(x: np.ndarray | np.integer) -> np.ndarray:
    """lowbias32, wrapping uint32 arithmetic like the C version."""
    x = np.asarray(x, dtype=U32).copy()
    with np.errstate(over="ignore"):
        x ^= x >> U32(16)
        x *= U32(0x7FEB352D)
        x ^= x >> U32(15)
        x *= U32(0x846CA68B)
        x ^= x >> U32(16)
    return x


def hash32(key: np.ndarray, counter: np.ndarray) -> np.ndarray:
    counter = np.asarray(counter, dtype=U32)
    with np.errstate(over="ignore"):
        salted = counter * U32(0x9E3779B9) + U32(0x632BE5AB)
    return mix32(mix32(key) ^ salted)


def uniform(key: np.ndarray, counter: np.ndarray) -> np.ndarray:
    """Uniform float32 in [0, 1): the top 24 bits times 2^-24."""
    return (hash32(key, counter) >> U32(8)).astype(np.float32) * np.float32(5.9604644775390625e-08)


def env_keys(seed: int, num_envs: int) -> np.ndarray:
    """One RNG key per env, derived from the run's seed (the kernels receive these)."""
    return mix32(np.arange(num_envs, dtype=U32) ^ mix32(np.full(num_envs, seed & 0xFFFFFFFF, dtype=U32)))


def f32(value: float | str) -> np.float32:
    return np.float32(value)


_SIN = [f32(c) for c in ("-1.6666667163e-01", "8.3333337680e-03", "-1.9841270114e-04", "2.7557318845e-06")]
_COS = [f32(c) for c in ("-0.5", "4.1666667908e-02", "-1.3888889225e-03", "2.4801587642e-05")]


def sin_poly(x: np.ndarray) -> np.ndarray:
    """``pb_sin``: the same Horner polynomial in float32, term by term."""
    x = np.asarray(x, dtype=np.float32)
    x2 = x * x
    return x * (f32(1.0) + x2 * (_SIN[0] + x2 * (_SIN[1] + x2 * (_SIN[2] + x2 * _SIN[3]))))


def cos_poly(x: np.ndarray) -> np.ndarray:
    """``pb_cos``: the same Horner polynomial in float32."""
    x = np.asarray(x, dtype=np.float32)
    x2 = x * x
    return f32(1.0) + x2 * (_COS[0] + x2 * (_COS[1] + x2 * (_COS[2] + x2 * _COS[3])))


def sample_categorical(probs: np.ndarray, counters: np.ndarray, key: int) -> np.ndarray:
    """``pb_sample_categorical`` on the host: advances ``counters`` in place, returns int32 actions."""
    rows, num_actions = probs.shape
    u = uniform(U32(key) ^ mix32(np.arange(rows, dtype=U32)), counters)
    counters += U32(1)
    cumulative = np.cumsum(probs.astype(np.float32), axis=1, dtype=np.float32)
    above = u[:, None] < cumulative
    return np.where(above.any(axis=1), above.argmax(axis=1), num_actions - 1).astype(np.int32)
