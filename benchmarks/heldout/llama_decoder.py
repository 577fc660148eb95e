"""LLaMA decoder: token embeddings, pre-norm blocks of RMSNorm, rotary position embeddings
applied as complex products, causal multi-head attention and a SwiGLU feed-forward, then a
final RMSNorm and the vocabulary projection; inference on a batch of sequences (plain jax).

Reimplemented (no code copied) from young-geng/EasyLM, ``EasyLM/models/llama/llama_model.py``
(``RMSNorm``, ``precompute_freqs_cis``, ``apply_rotary_emb``, ``FlaxLLaMAAttention``,
``FlaxLLaMAMLP``, ``FlaxLLaMABlock``) at commit 9e466cfb7b34e436ad32ecee5d45f2b935e24d97:
each block normalises by the root mean square (``x · rsqrt(mean(x²) + ε) · w``), projects
queries, keys and values without biases, rotates each adjacent pair of query and key
features as a complex number multiplied by ``exp(i · position · θ^(-2j/d))``, turns the
causal mask into an additive bias of zero or the dtype's minimum, takes the softmax of the
scaled scores, and adds ``w2(silu(w1 x) · w3 x)`` after a second RMSNorm, with residuals
around both. The rotary table is computed once, outside the program, as the file does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Block = dict[str, jax.Array]
EPSILON = 1e-6


def rms_norm(x: jax.Array, weight: jax.Array) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + EPSILON) * weight


def rotary_table(head_dim: int, length: int, theta: float = 10000.0) -> jax.Array:
    """``exp(i t f_j)`` for positions ``t`` and frequencies ``f_j = θ^(-2j/d)``: complex64."""
    freqs = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim)
    angles = np.outer(np.arange(length, dtype=np.float32), freqs)
    return jnp.asarray((np.cos(angles) + 1j * np.sin(angles)).astype(np.complex64))


def rotate(x: jax.Array, table: jax.Array) -> jax.Array:
    """``x`` (batch, seq, heads, head_dim): its pairs of features turned by ``table``
    (seq, head_dim / 2)."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    turned = jax.lax.complex(pairs[..., 0], pairs[..., 1]) * table[None, :, None, :]
    return jnp.stack([turned.real, turned.imag], axis=-1).reshape(x.shape)


def attention(p: Block, x: jax.Array, table: jax.Array, heads: int) -> jax.Array:
    batch, seq, width = x.shape
    head_dim = width // heads

    def split(v: jax.Array) -> jax.Array:
        return v.reshape(batch, seq, heads, head_dim)

    q = rotate(split(x @ p["wq"]), table)
    k = rotate(split(x @ p["wk"]), table)
    v = split(x @ p["wv"])
    causal = jnp.tril(jnp.ones((seq, seq), bool))
    lowest = float(np.finfo(np.float32).min)
    bias = jax.lax.select(causal, jnp.zeros((seq, seq)), jnp.full((seq, seq), lowest))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q / np.sqrt(head_dim).astype(np.float32), k) + bias
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v).reshape(batch, seq, width)
    return out @ p["wo"]


def decoder(params: dict[str, Any], table: jax.Array, tokens: jax.Array, heads: int
            ) -> jax.Array:
    """``tokens`` (batch, seq) int32 -> logits (batch, seq, vocab)."""
    x = jnp.take(params["embedding"], tokens, axis=0)
    for p in params["blocks"]:
        x = x + attention(p, rms_norm(x, p["attention_norm"]), table, heads)
        h = rms_norm(x, p["ffn_norm"])
        x = x + (jax.nn.silu(h @ p["w1"]) * (h @ p["w3"])) @ p["w2"]
    lm_head: jax.Array = params["lm_head"]
    return rms_norm(x, params["final_norm"]) @ lm_head


def setup(batch: int = 2, seq: int = 128, width: int = 256, heads: int = 4,
          hidden: int = 688, layers: int = 2, vocab: int = 2048
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``network(params, table, tokens) -> logits``."""
    key = jax.random.key(81)
    key, k_emb, k_head, k_tok = jax.random.split(key, 4)
    blocks = []
    for _ in range(layers):
        key, *ks = jax.random.split(key, 8)
        blocks.append({
            "attention_norm": jnp.ones((width,)), "ffn_norm": jnp.ones((width,)),
            "wq": jax.random.normal(ks[0], (width, width)) * 0.02,
            "wk": jax.random.normal(ks[1], (width, width)) * 0.02,
            "wv": jax.random.normal(ks[2], (width, width)) * 0.02,
            "wo": jax.random.normal(ks[3], (width, width)) * 0.02,
            "w1": jax.random.normal(ks[4], (width, hidden)) * 0.02,
            "w3": jax.random.normal(ks[5], (width, hidden)) * 0.02,
            "w2": jax.random.normal(ks[6], (hidden, width)) * 0.02})
    params = {"embedding": jax.random.normal(k_emb, (vocab, width)),
              "blocks": blocks, "final_norm": jnp.ones((width,)),
              "lm_head": jax.random.normal(k_head, (width, vocab)) * 0.02}
    tokens = jax.random.randint(k_tok, (batch, seq), 0, vocab, jnp.int32)
    table = rotary_table(width // heads, seq)

    def network(params: dict[str, Any], table: jax.Array, tokens: jax.Array) -> jax.Array:
        return decoder(params, table, tokens, heads)

    return network, (params, table, tokens)
