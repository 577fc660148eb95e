"""Gemma decoding one token with a key-value cache: the step a sampler repeats for every token
(plain jax).

Reimplemented (no code copied) from google-deepmind/gemma, ``gemma/gm/nn/_modules.py``
(``Embedder``, ``Attention``, ``FeedForward``, ``Block``) at commit
03258cda22988c84733b813f696ac3a83a5a2fd6, with ``RMSNorm`` of ``gemma/gm/nn/_layers.py`` and
``apply_rope`` of ``gemma/gm/math/_positional_embeddings.py``: the token's embedding scaled by
√width; in each block an RMSNorm (``x · rsqrt(mean(x²) + 1e-6) · (1 + scale)``), the query,
key and value projected by one einsum (``BTD,SNDH->SBTNH``, as the file does when the keys have
as many heads as the queries), rotary embeddings on the query and key (the first and second
halves of each head rotated by ``sin`` and ``cos`` of position ÷ 10000^(2j/H)), the query
scaled, the new key and value written into the cache at the step's index
(``dynamic_update_slice`` of a ``[batch, cache, heads, head_dim]`` cache), the logits against
every cached key (``BTNH,BSNH->BTNS``), masked to the filled part of the cache with the file's
``K_MASK``, a softmax, the values weighted (``BTNS,BSNH->BTNH``) and projected back
(``BTNH,NHD->BTD``), a residual, a second RMSNorm and the gated feed-forward (``gelu(x W0) ·
x W1``, then ``W2``) with its residual; a final RMSNorm and the logits against the embedding
table. The caches come in and go out as arguments, donated (a sampler's loop keeps its cache in
place): the program returns the next token's logits and every layer's updated cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Layer = dict[str, jax.Array]
K_MASK = -2.3819763e38  # the file's large negative logit for masked positions
EPSILON = 1e-6


def rms_norm(x: jax.Array, scale: jax.Array) -> jax.Array:
    normed = x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + EPSILON)
    return normed * (1 + scale)


def rope(x: jax.Array, positions: jax.Array, base: float = 10_000.0) -> jax.Array:
    """``x`` (batch, seq, heads, head_dim) rotated at ``positions`` (batch, seq): each head's
    first half against its second."""
    half = x.shape[-1] // 2
    timescale = base ** (2 * jnp.arange(half, dtype=jnp.float32) / x.shape[-1])
    angle = (positions[..., None].astype(jnp.float32) / timescale)[..., None, :]
    sin, cos = jnp.sin(angle), jnp.cos(angle)
    first, second = x[..., :half], x[..., half:]
    return jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def attention(p: Layer, cache: Layer, x: jax.Array, positions: jax.Array, index: jax.Array,
              head_dim: int) -> tuple[Layer, jax.Array]:
    query, key, value = jnp.einsum("BTD,SNDH->SBTNH", x, p["qkv"])
    query = rope(query, positions) * head_dim ** -0.5
    key = rope(key, positions)
    start = (0, index, 0, 0)
    keys = jax.lax.dynamic_update_slice(cache["k"], key, start)
    values = jax.lax.dynamic_update_slice(cache["v"], value, start)
    logits = jnp.einsum("BTNH,BSNH->BTNS", query, keys)
    filled = jnp.arange(keys.shape[1]) <= index  # the cache is filled up to this step
    logits = jnp.where(filled[None, None, None, :], logits, K_MASK)
    probs = jax.nn.softmax(logits, axis=-1)
    encoded = jnp.einsum("BTNS,BSNH->BTNH", probs, values)
    return {"k": keys, "v": values}, jnp.einsum("BTNH,NHD->BTD", encoded, p["attn_vec"])


def feed_forward(p: Layer, x: jax.Array) -> jax.Array:
    gate = jnp.einsum("BTD,NDH->BTNH", x, p["gating"])
    return jnp.einsum("BTH,HD->BTD", jax.nn.gelu(gate[..., 0, :]) * gate[..., 1, :],
                      p["linear"])


def decode_step(params: dict[str, Any], caches: list[Layer], token: jax.Array,
                index: jax.Array, head_dim: int) -> tuple[jax.Array, list[Layer]]:
    """``token`` (batch, 1) int32 at cache position ``index`` -> (logits (batch, 1, vocab),
    the updated caches)."""
    table = params["embedding"]
    x = jnp.take(table, token, axis=0) * jnp.sqrt(jnp.float32(table.shape[1]))
    positions = jnp.full(token.shape, index, jnp.int32)
    updated = []
    for p, cache in zip(params["blocks"], caches, strict=True):
        cache, out = attention(p, cache, rms_norm(x, p["pre_attention_norm"]), positions,
                               index, head_dim)
        updated.append(cache)
        x = x + out
        x = x + feed_forward(p, rms_norm(x, p["pre_ffw_norm"]))
    logits = jnp.dot(rms_norm(x, params["final_norm"]), table.T)
    return logits, updated


def setup(batch: int = 1, cache: int = 4096, heads: int = 8, head_dim: int = 64,
          width: int = 256, hidden: int = 1024, layers: int = 2, vocab: int = 8192
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``step(params, caches, token, index) -> (logits, caches)``, the cache filled to half."""
    key = jax.random.key(7)
    key, k_emb, k_tok = jax.random.split(key, 3)
    blocks, caches = [], []
    for _ in range(layers):
        key, *ks = jax.random.split(key, 7)
        blocks.append({
            "pre_attention_norm": jnp.zeros((width,)), "pre_ffw_norm": jnp.zeros((width,)),
            "qkv": jax.random.normal(ks[0], (3, heads, width, head_dim)) * width ** -0.5,
            "attn_vec": jax.random.normal(ks[1], (heads, head_dim, width))
            * (heads * head_dim) ** -0.5,
            "gating": jax.random.normal(ks[2], (2, width, hidden)) * width ** -0.5,
            "linear": jax.random.normal(ks[3], (hidden, width)) * hidden ** -0.5})
        shape = (batch, cache, heads, head_dim)
        caches.append({"k": jax.random.normal(ks[4], shape),
                       "v": jax.random.normal(ks[5], shape)})
    params = {"embedding": jax.random.normal(k_emb, (vocab, width)) * width ** -0.5,
              "blocks": blocks, "final_norm": jnp.zeros((width,))}
    token = jax.random.randint(k_tok, (batch, 1), 0, vocab, jnp.int32)
    index = jnp.asarray(cache // 2, jnp.int32)

    def step(params: dict[str, Any], caches: list[Layer], token: jax.Array, index: jax.Array
             ) -> tuple[jax.Array, list[Layer]]:
        return decode_step(params, caches, token, index, head_dim)

    return jax.jit(step, donate_argnums=(1,)), (params, caches, token, index)
