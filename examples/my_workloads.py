"""Example workloads for ``--config examples/workloads.toml``: small JAX functions, each with a
NumPy reference that the report's correctness check compares against.

Importing this module runs nothing: it only defines functions. The references compute in float64
and return float64 arrays; the checker compares them with the JAX result within the tolerances
given in the config.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

Array = jax.Array
F64 = npt.NDArray[np.float64]


def scaled_matmul(a: Array, b: Array) -> Array:
    """(a @ b) / sqrt(k) for a[m, k], b[k, n]: the scaling used in attention scores."""
    return jnp.matmul(a, b) * (1.0 / math.sqrt(a.shape[-1]))


def scaled_matmul_numpy(a: npt.ArrayLike, b: npt.ArrayLike) -> F64:
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    return np.asarray((a64 @ b64) / math.sqrt(a64.shape[-1]), dtype=np.float64)


def gelu_mlp(x: Array, w_in: Array, w_out: Array) -> Array:
    """A transformer MLP block without biases, tanh-approximate gelu:
    gelu(x @ w_in / sqrt(d_model)) @ w_out / sqrt(d_ff). The 1/sqrt scalings keep values near
    one for unit-scale inputs, so fixed tolerances work at every size."""
    d_model, d_ff = w_in.shape
    hidden = jax.nn.gelu(jnp.matmul(x, w_in) * (1.0 / math.sqrt(d_model)), approximate=True)
    return jnp.matmul(hidden, w_out) * (1.0 / math.sqrt(d_ff))


def _gelu_tanh(x: F64) -> F64:
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    return np.asarray(0.5 * x * (1.0 + np.tanh(inner)), dtype=np.float64)


def gelu_mlp_numpy(x: npt.ArrayLike, w_in: npt.ArrayLike, w_out: npt.ArrayLike) -> F64:
    x64 = np.asarray(x, dtype=np.float64)
    w_in64 = np.asarray(w_in, dtype=np.float64)
    d_model, d_ff = w_in64.shape
    hidden = _gelu_tanh((x64 @ w_in64) / math.sqrt(d_model))
    out = (hidden @ np.asarray(w_out, dtype=np.float64)) / math.sqrt(d_ff)
    return np.asarray(out, dtype=np.float64)


def row_softmax(x: Array) -> Array:
    """Softmax over the last axis: memory-bound, a few FLOPs per element."""
    return jax.nn.softmax(x, axis=-1)


def row_softmax_numpy(x: npt.ArrayLike) -> F64:
    x64 = np.asarray(x, dtype=np.float64)
    shifted = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return np.asarray(shifted / shifted.sum(axis=-1, keepdims=True), dtype=np.float64)
