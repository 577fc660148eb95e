"""Causal multi-head self-attention in bfloat16 (plain jax), as decoder-only models run it.

Inputs and weights are bfloat16; the query, key and value projections, the scores and the
weighted sum are bfloat16 matmuls; the softmax is computed in float32 and cast back, as
mixed-precision model code does. A lower-triangular mask hides future positions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def attention(x: jax.Array, w_qkv: jax.Array, w_out: jax.Array, *, heads: int) -> jax.Array:
    """``x`` (batch, seq, width) bfloat16 -> (batch, seq, width) bfloat16."""
    batch, seq, width = x.shape
    head = width // heads
    qkv = (x @ w_qkv).reshape(batch, seq, 3, heads, head)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * jnp.asarray(head**-0.5, x.dtype)
    causal = jnp.tril(jnp.ones((seq, seq), jnp.bool_))
    scores = jnp.where(causal, scores, jnp.asarray(-jnp.inf, scores.dtype))
    weights = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(x.dtype)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, seq, width)
    return out @ w_out


def setup(batch: int = 2, seq: int = 256, width: int = 256, heads: int = 4
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    keys = jax.random.split(jax.random.key(10), 3)
    dtype = jnp.bfloat16
    x = jax.random.normal(keys[0], (batch, seq, width), dtype)
    w_qkv = (jax.random.normal(keys[1], (width, 3 * width), jnp.float32) / width**0.5
             ).astype(dtype)
    w_out = (jax.random.normal(keys[2], (width, width), jnp.float32) / width**0.5
             ).astype(dtype)

    def fn(x: jax.Array, w_qkv: jax.Array, w_out: jax.Array) -> jax.Array:
        return attention(x, w_qkv, w_out, heads=heads)

    return fn, (x, w_qkv, w_out)
