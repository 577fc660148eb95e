"""An integer and boolean program: hashing, a Bloom-filter lookup, bucket counts, argmax and
compares (plain jax).

Keys are uint32. Each is hashed with MurmurHash3's 32-bit finaliser (xor-shifts and
multiplies) under several seeds; the hashes probe a Bloom filter of packed bits (gathers,
shifts, masks, an all-reduction over probes), the first hash counts keys per bucket (a
scatter-add histogram), and rows of hashes give an argmax and a count of matches against
query bytes: the integer, mask and compare work of data pipelines, deduplication and sampling
code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

SEEDS = (0x9E3779B9, 0x85EBCA6B, 0xC2B2AE35, 0x27D4EB2F)


def fmix32(h: jax.Array) -> jax.Array:
    """MurmurHash3's finaliser on uint32 (wrapping multiplies)."""
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def program(keys: jax.Array, bloom: jax.Array, queries: jax.Array, *, buckets: int
            ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``keys`` uint32 (rows, cols), ``bloom`` uint32 (words,), ``queries`` uint32 (rows, cols)
    -> (in filter: bool (rows, cols), bucket counts: int32 (buckets,), argmax of each row's
    hash: int32 (rows,), matches per row: int32 (rows,))."""
    bits = jnp.uint32(bloom.shape[0] * 32)
    present = jnp.ones(keys.shape, jnp.bool_)
    for seed in SEEDS:
        h = fmix32(keys ^ jnp.uint32(seed))
        bit = h % bits
        word = jnp.take(bloom, (bit >> 5).astype(jnp.int32), axis=0)
        present = present & (((word >> (bit & 31)) & 1) == 1)
    first = fmix32(keys)
    counts = jnp.bincount((first % jnp.uint32(buckets)).astype(jnp.int32).reshape(-1),
                          length=buckets)
    best = jnp.argmax(first, axis=1).astype(jnp.int32)
    matches = jnp.sum(((first ^ queries) & 0xFF) == 0, axis=1, dtype=jnp.int32)
    return present, counts, best, matches


def setup(rows: int = 1024, cols: int = 1024, words: int = 65536, buckets: int = 4096
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    keys_ = jax.random.split(jax.random.key(15), 3)
    keys = jax.random.bits(keys_[0], (rows, cols), jnp.uint32)
    bloom = jax.random.bits(keys_[1], (words,), jnp.uint32)
    queries = jax.random.bits(keys_[2], (rows, cols), jnp.uint32)

    def fn(keys: jax.Array, bloom: jax.Array, queries: jax.Array
           ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        return program(keys, bloom, queries, buckets=buckets)

    return fn, (keys, bloom, queries)
