"""An embedding lookup and its gradient: a gather forward, a scatter-add backward (plain jax).

Token ids index a (vocab, width) table; the gathered vectors go through a linear projection
to a regression target. The gradient with respect to the table is the projection's input
gradient scattered and summed back into the rows the ids selected (repeated ids add up), the
pattern of every language model's input embedding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def loss_and_grad(table: jax.Array, projection: jax.Array, ids: jax.Array, target: jax.Array
                  ) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """``(loss, (d table, d projection))``; ``ids`` int32 (batch, seq)."""

    def loss_fn(table: jax.Array, projection: jax.Array) -> jax.Array:
        vectors = jnp.take(table, ids, axis=0)
        return jnp.mean((vectors @ projection - target) ** 2)

    return jax.value_and_grad(loss_fn, argnums=(0, 1))(table, projection)


def setup(vocab: int = 32768, width: int = 128, batch: int = 32, seq: int = 128,
          outputs: int = 64) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    keys = jax.random.split(jax.random.key(9), 4)
    table = 0.02 * jax.random.normal(keys[0], (vocab, width), jnp.float32)
    projection = jax.random.normal(keys[1], (width, outputs), jnp.float32) / width**0.5
    # Zipf-like ids, as text gives: many repeats of the common rows.
    ranks = jax.random.uniform(keys[2], (batch, seq), jnp.float32)
    ids = jnp.minimum((vocab ** ranks).astype(jnp.int32) - 1, vocab - 1)
    target = jax.random.normal(keys[3], (batch, seq, outputs), jnp.float32)
    return loss_and_grad, (table, projection, ids, target)
