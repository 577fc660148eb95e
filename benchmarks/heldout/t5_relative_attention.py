"""T5 encoder layers: RMS layer norm, self-attention with a bucketed relative position bias
and a padding mask, and a gated-GELU feed-forward layer; inference (plain jax).

Reimplemented (no code copied) from huggingface/transformers,
``src/transformers/models/t5/modeling_flax_t5.py`` (``FlaxT5LayerNorm``, ``FlaxT5Attention``,
``FlaxT5DenseGatedActDense``, ``FlaxT5LayerSelfAttention``, ``FlaxT5LayerFF``) at commit
471cf45abe6cfce955c271d1c16379d7af977e5c: each key-minus-query offset is mapped to one of 32
buckets (half for each direction, exact below 8 and logarithmic up to a distance of 128), the
bias table of the first layer is gathered by bucket into a (heads, query, key) bias that every
layer reuses, together with the padding mask; scores are ``q·k`` without scaling (T5 folds the
scale into its initialisation) plus that bias, then a softmax. The layer norms divide by the
root mean square without subtracting the mean (epsilon 1e-6); the feed-forward layer is
``wo(gelu(wi_0 x) * wi_1 x)`` as in T5 v1.1, GELU its tanh approximation (``gelu_new``).
Projections have no biases; each sublayer is pre-norm with a residual.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Layer = dict[str, jax.Array]
EPSILON = 1e-6
MASKED = -3.4028234663852886e38  # float32's lowest, jnp.finfo(jnp.float32).min as T5 masks


def rms_norm(x: jax.Array, weight: jax.Array) -> jax.Array:
    variance = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    return weight * (x / jnp.sqrt(variance + EPSILON))


def relative_buckets(query: int, key: int, buckets: int, max_distance: int) -> jax.Array:
    """Bidirectional buckets of ``key_position - query_position``, int32 (query, key)."""
    offset = jnp.arange(key)[None, :] - jnp.arange(query)[:, None]
    half = buckets // 2
    bucket = jnp.where(offset > 0, half, 0)
    distance = jnp.abs(offset)
    exact = half // 2
    scaled = exact + (jnp.log(jnp.maximum(distance, 1) / exact) / math.log(max_distance / exact)
                      * (half - exact))
    large = jnp.minimum(scaled.astype(jnp.int32), half - 1)
    return (bucket + jnp.where(distance < exact, distance, large)).astype(jnp.int32)


def attention(p: Layer, x: jax.Array, bias: jax.Array, heads: int) -> jax.Array:
    batch, seq, _ = x.shape
    q = (x @ p["q"]).reshape(batch, seq, heads, -1)
    k = (x @ p["k"]).reshape(batch, seq, heads, -1)
    v = (x @ p["v"]).reshape(batch, seq, heads, -1)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) + bias
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, seq, -1)
    return out @ p["o"]


def encoder(params: dict[str, Any], x: jax.Array, lengths: jax.Array, *, heads: int,
            buckets: int, max_distance: int) -> jax.Array:
    """``x`` (batch, seq, width), ``lengths`` int32 (batch,) -> (batch, seq, width)."""
    seq = x.shape[1]
    table = params["relative_bias"]  # (buckets, heads)
    position = table[relative_buckets(seq, seq, buckets, max_distance)]  # (seq, seq, heads)
    valid = jnp.arange(seq)[None, :] < lengths[:, None]  # (batch, key)
    mask = jnp.where(valid, 0.0, MASKED)[:, None, None, :]
    bias = position.transpose(2, 0, 1)[None] + mask  # (batch, heads, query, key)
    for p in params["layers"]:
        x = x + attention(p, rms_norm(x, p["attn_norm"]), bias, heads)
        h = rms_norm(x, p["ff_norm"])
        x = x + (jax.nn.gelu(h @ p["wi_0"], approximate=True) * (h @ p["wi_1"])) @ p["wo"]
    return rms_norm(x, params["final_norm"])


def setup(batch: int = 2, seq: int = 256, width: int = 192, heads: int = 3, hidden: int = 384,
          layers: int = 2, buckets: int = 32, max_distance: int = 128
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``fn(params, x, lengths) -> y``; the sequences are padded to ``seq`` from lengths
    spread between half and all of it."""
    inner = width  # heads * d_kv
    head = inner // heads
    key = jax.random.key(52)
    key, k_bias, k_x, k_len = jax.random.split(key, 4)
    layer_params = []
    for _ in range(layers):
        key, *ks = jax.random.split(key, 9)
        layer_params.append({
            "attn_norm": 1.0 + 0.1 * jax.random.normal(ks[0], (width,)),
            "q": jax.random.normal(ks[1], (width, inner)) * (inner * head) ** -0.5,
            "k": jax.random.normal(ks[2], (width, inner)) * inner ** -0.5,
            "v": jax.random.normal(ks[3], (width, inner)) * inner ** -0.5,
            "o": jax.random.normal(ks[4], (inner, width)) * inner ** -0.5,
            "ff_norm": jnp.ones((width,)),
            "wi_0": jax.random.normal(ks[5], (width, hidden)) * width ** -0.5,
            "wi_1": jax.random.normal(ks[6], (width, hidden)) * width ** -0.5,
            "wo": jax.random.normal(ks[7], (hidden, width)) * hidden ** -0.5})
    params = {"layers": layer_params,
              "relative_bias": jax.random.normal(k_bias, (buckets, heads)) * inner ** -0.5,
              "final_norm": jnp.ones((width,))}
    x = jax.random.normal(k_x, (batch, seq, width), jnp.float32)
    lengths = jax.random.randint(k_len, (batch,), seq // 2, seq + 1).astype(jnp.int32)

    def fn(params: dict[str, Any], x: jax.Array, lengths: jax.Array) -> jax.Array:
        return encoder(params, x, lengths, heads=heads, buckets=buckets,
                       max_distance=max_distance)

    return fn, (params, x, lengths)
