"""A mixture-of-experts layer with top-k token routing, dispatched by gather (plain jax).

Each token's router picks its ``k`` best experts (``lax.top_k``); assignments are sorted by
expert, each expert keeps at most ``capacity`` tokens (the rest are dropped, as in Switch and
GShard), the kept tokens are gathered into an (experts, capacity, width) buffer, every expert
runs its own GELU MLP as one batched matmul, and the outputs are gathered back, weighted by
the renormalised gates and scatter-added into the tokens they came from. Also returns the
Switch load-balancing loss (Fedus et al., 2021).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def moe(x: jax.Array, w_router: jax.Array, w_in: jax.Array, w_out: jax.Array, *, k: int,
        capacity: int) -> tuple[jax.Array, jax.Array]:
    """``x`` (tokens, width) -> (output (tokens, width), load-balancing loss)."""
    tokens, width = x.shape
    experts = w_router.shape[1]
    probs = jax.nn.softmax(x @ w_router, axis=-1)
    gate, expert = jax.lax.top_k(probs, k)
    gate = gate / jnp.sum(gate, axis=-1, keepdims=True)

    flat_expert = expert.reshape(-1)
    order = jnp.argsort(flat_expert, stable=True)
    sorted_expert = flat_expert[order]
    sorted_token = (jnp.arange(tokens * k, dtype=jnp.int32) // k)[order]
    sorted_gate = gate.reshape(-1)[order]
    counts = jnp.bincount(flat_expert, length=experts)
    starts = jnp.cumsum(counts) - counts
    position = jnp.arange(tokens * k, dtype=jnp.int32) - starts[sorted_expert]
    kept = position < capacity
    slot = jnp.where(kept, sorted_expert * capacity + position, experts * capacity)

    # Slot -> token (``tokens`` marks an empty slot, which reads a row of zeros).
    dispatch = jnp.full((experts * capacity,), tokens, jnp.int32)
    dispatch = dispatch.at[slot].set(sorted_token, mode="drop")
    padded = jnp.concatenate([x, jnp.zeros((1, width), x.dtype)])
    routed = padded[dispatch].reshape(experts, capacity, width)
    hidden = jax.nn.gelu(jnp.einsum("ecd,edh->ech", routed, w_in))
    y = jnp.einsum("ech,ehd->ecd", hidden, w_out).reshape(experts * capacity, width)
    y = jnp.concatenate([y, jnp.zeros((1, width), y.dtype)])
    contribution = y[slot] * jnp.where(kept, sorted_gate, 0.0)[:, None]
    out = jnp.zeros_like(x).at[sorted_token].add(contribution)

    fraction = counts.astype(jnp.float32) / (tokens * k)
    balance = experts * jnp.sum(fraction * jnp.mean(probs, axis=0))
    return out, balance


def setup(tokens: int = 1024, width: int = 128, hidden: int = 256, experts: int = 8,
          k: int = 2) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    capacity = math.ceil(1.25 * tokens * k / experts)
    keys = jax.random.split(jax.random.key(12), 4)
    x = jax.random.normal(keys[0], (tokens, width), jnp.float32)
    w_router = jax.random.normal(keys[1], (width, experts), jnp.float32) / width**0.5
    w_in = jax.random.normal(keys[2], (experts, width, hidden), jnp.float32) / width**0.5
    w_out = jax.random.normal(keys[3], (experts, hidden, width), jnp.float32) / hidden**0.5

    def fn(x: jax.Array, w_router: jax.Array, w_in: jax.Array, w_out: jax.Array
           ) -> tuple[jax.Array, jax.Array]:
        return moe(x, w_router, w_in, w_out, k=k, capacity=capacity)

    return fn, (x, w_router, w_in, w_out)
