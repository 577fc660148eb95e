"""The Perceiver encoder: a small learned latent array cross-attends to a long input array,
then self-attention blocks run on the latents alone, weights shared across repeats;
inference (plain jax).

Reimplemented (no code copied) from google-deepmind/deepmind-research,
``perceiver/perceiver.py`` (``attend``, ``Attention``, ``MLP``, ``CrossAttention``,
``SelfAttention``, ``PerceiverEncoder``) at commit f5de0ede8430809180254ee957abf36ed62579ef:
the cross-attention layer-normalises the latents (queries) and the inputs (keys and values),
projects both to the inputs' channel count (``shape_for_attn='kv'``) with one head, takes
``softmax(q·k / sqrt(d))`` over the input positions and the weighted sum of values, projects
back to the latent width, adds the query residual and a widening-1 GELU MLP under a layer norm;
each self-attention block is pre-norm multi-head attention and a GELU MLP, both with residuals,
and the same blocks are applied ``repeats`` times (``num_blocks`` with shared weights). The
latent array is a learned (index, channels) table broadcast over the batch. GELU is
``jax.nn.gelu``'s default, as the Haiku model calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Block = dict[str, jax.Array]
EPSILON = 1e-5


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPSILON) * scale + bias


def attend(p: Block, inputs_q: jax.Array, inputs_kv: jax.Array, heads: int) -> jax.Array:
    batch, q_len, _ = inputs_q.shape
    kv_len = inputs_kv.shape[1]
    q = (inputs_q @ p["wq"] + p["bq"]).reshape(batch, q_len, heads, -1)
    k = (inputs_kv @ p["wk"] + p["bk"]).reshape(batch, kv_len, heads, -1)
    v = (inputs_kv @ p["wv"] + p["bv"]).reshape(batch, kv_len, heads, -1)
    scores = jnp.einsum("bthd,bThd->bhtT", q, k) / math.sqrt(q.shape[-1])
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhtT,bThd->bthd", weights, v).reshape(batch, q_len, -1)
    return out @ p["wo"] + p["bo"]


def mlp(p: Block, x: jax.Array) -> jax.Array:
    return jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def encoder(params: dict[str, Any], inputs: jax.Array, *, heads: int, repeats: int
            ) -> jax.Array:
    """``inputs`` (batch, positions, channels) -> latents (batch, index, width)."""
    batch = inputs.shape[0]
    latents: jax.Array = params["latents"]
    z: jax.Array = jnp.broadcast_to(latents, (batch, *latents.shape))
    c = params["cross"]
    z = z + attend(c, layer_norm(z, c["q_scale"], c["q_bias"]),
                   layer_norm(inputs, c["kv_scale"], c["kv_bias"]), 1)
    z = z + mlp(c, layer_norm(z, c["mlp_scale"], c["mlp_bias"]))
    for _ in range(repeats):
        for s in params["self"]:
            h = layer_norm(z, s["q_scale"], s["q_bias"])
            z = z + attend(s, h, h, heads)
            z = z + mlp(s, layer_norm(z, s["mlp_scale"], s["mlp_bias"]))
    return z


def _block(key: jax.Array, q_in: int, kv_in: int, qk: int, width: int, widening: int,
           cross: bool) -> Block:
    ks = jax.random.split(key, 6)

    def dense(k: jax.Array, n_in: int, n_out: int) -> jax.Array:
        return jax.random.normal(k, (n_in, n_out)) / math.sqrt(n_in)

    block = {"q_scale": jnp.ones((q_in,)), "q_bias": jnp.zeros((q_in,)),
             "wq": dense(ks[0], q_in, qk), "bq": jnp.zeros((qk,)),
             "wk": dense(ks[1], kv_in, qk), "bk": jnp.zeros((qk,)),
             "wv": dense(ks[2], kv_in, qk), "bv": jnp.zeros((qk,)),
             "wo": dense(ks[3], qk, width), "bo": jnp.zeros((width,)),
             "mlp_scale": jnp.ones((width,)), "mlp_bias": jnp.zeros((width,)),
             "w1": dense(ks[4], width, widening * width), "b1": jnp.zeros((widening * width,)),
             "w2": dense(ks[5], widening * width, width), "b2": jnp.zeros((width,))}
    if cross:  # the inputs have a layer norm of their own
        block["kv_scale"], block["kv_bias"] = jnp.ones((kv_in,)), jnp.zeros((kv_in,))
    return block


def setup(batch: int = 2, positions: int = 4096, channels: int = 64, index: int = 128,
          width: int = 128, heads: int = 4, self_attends: int = 2, repeats: int = 2
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``fn(params, inputs) -> latents``: ``index`` latents of ``width`` channels read
    ``positions`` inputs of ``channels`` channels."""
    keys = jax.random.split(jax.random.key(85), self_attends + 3)
    params = {
        "latents": 0.02 * jax.random.truncated_normal(keys[0], -2.0, 2.0, (index, width)),
        "cross": _block(keys[1], width, channels, channels, width, 1, True),
        "self": [_block(k, width, width, width, width, 1, False) for k in keys[2:-1]]}
    inputs = jax.random.normal(keys[-1], (batch, positions, channels), jnp.float32)

    def fn(params: dict[str, Any], inputs: jax.Array) -> jax.Array:
        return encoder(params, inputs, heads=heads, repeats=repeats)

    return fn, (params, inputs)
