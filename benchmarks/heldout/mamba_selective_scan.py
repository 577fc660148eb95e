"""Mamba language model: token embeddings, residual blocks of RMSNorm and a Mamba mixer (an
input projection split into a branch and a gate, a causal depthwise 1-D convolution, SiLU,
the input-dependent selective state-space scan, the SiLU gate and an output projection),
then a final RMSNorm and logits read against the tied embedding; inference (plain jax).

Reimplemented (no code copied) from radarFudan/mamba-minimal-jax, ``model.py`` (``Mamba``,
``ResidualBlock``, ``MambaBlock.__call__``, ``MambaBlock.ssm``,
``MambaBlock.selective_scan``, ``RMSNorm``) at commit
5ecfcf64cc61b5e630bc182efb5324324c511c9a: the mixer projects ``x`` to ``2 d_inner``
features, runs a ``d_conv``-tap convolution with one group per channel, padded on the left
so that it is causal, projects the result to ``Δ`` (rank ``dt_rank``), ``B`` and ``C``
(``d_state`` each), sets ``Δ = softplus(dt_proj(Δ))`` and ``A = -exp(A_log)`` with
``A_log = log(1 … d_state)``, discretises ``Ā = exp(Δ A)`` and ``B̄u = Δ B u`` per step, runs
``h_t = Ā_t h_{t-1} + B̄_t u_t``, ``y_t = C_t · h_t + D u_t`` over the sequence (the file
unrolls a Python loop; here it is one ``lax.scan``), gates with ``silu(res)`` and projects
back to ``d_model``. The blocks are ``x + mixer(rms_norm(x))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Block = dict[str, jax.Array]
EPSILON = 1e-5


def rms_norm(x: jax.Array, weight: jax.Array) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + EPSILON) * weight


def causal_depthwise_conv(x: jax.Array, kernel: jax.Array, bias: jax.Array) -> jax.Array:
    """``x`` (batch, length, channels), ``kernel`` (taps, 1, channels): one group per channel."""
    taps = kernel.shape[0]
    out = jax.lax.conv_general_dilated(
        x, kernel, window_strides=(1,), padding=[(taps - 1, taps - 1)],
        dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=x.shape[-1])
    return out[:, :x.shape[1]] + bias


def selective_scan(u: jax.Array, delta: jax.Array, a: jax.Array, b: jax.Array, c: jax.Array,
                   d: jax.Array) -> jax.Array:
    """``u``, ``delta`` (batch, length, d_inner); ``a`` (d_inner, d_state); ``b``, ``c``
    (batch, length, d_state); ``d`` (d_inner,) -> (batch, length, d_inner)."""
    decay = jnp.exp(jnp.einsum("bld,dn->bldn", delta, a))
    drive = jnp.einsum("bld,bln,bld->bldn", delta, b, u)

    def step(h: jax.Array, inputs: tuple[jax.Array, jax.Array, jax.Array]
             ) -> tuple[jax.Array, jax.Array]:
        decay_t, drive_t, c_t = inputs
        h = decay_t * h + drive_t
        return h, jnp.einsum("bdn,bn->bd", h, c_t)

    h0 = jnp.zeros((u.shape[0], a.shape[0], a.shape[1]), u.dtype)
    _, ys = jax.lax.scan(step, h0, (jnp.moveaxis(decay, 1, 0), jnp.moveaxis(drive, 1, 0),
                                    jnp.moveaxis(c, 1, 0)))
    return jnp.moveaxis(ys, 0, 1) + u * d


def mixer(p: Block, x: jax.Array) -> jax.Array:
    d_inner, d_state = p["a_log"].shape
    dt_rank = p["dt_proj"].shape[0]
    branch, res = jnp.split(x @ p["in_proj"], [d_inner], axis=-1)
    branch = jax.nn.silu(causal_depthwise_conv(branch, p["conv_kernel"], p["conv_bias"]))
    delta, b, c = jnp.split(branch @ p["x_proj"], [dt_rank, dt_rank + d_state], axis=-1)
    delta = jax.nn.softplus(delta @ p["dt_proj"] + p["dt_bias"])
    y = selective_scan(branch, delta, -jnp.exp(p["a_log"]), b, c, p["d"])
    return (y * jax.nn.silu(res)) @ p["out_proj"]


def language_model(params: dict[str, Any], tokens: jax.Array) -> jax.Array:
    """``tokens`` (batch, length) int32 -> logits (batch, length, vocab)."""
    embedding: jax.Array = params["embedding"]
    x = jnp.take(embedding, tokens, axis=0)
    for p in params["blocks"]:
        x = x + mixer(p, rms_norm(x, p["norm"]))
    return rms_norm(x, params["final_norm"]) @ embedding.T


def setup(batch: int = 2, length: int = 128, width: int = 128, expand: int = 2,
          state: int = 16, conv: int = 4, layers: int = 2, vocab: int = 1024
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``language_model(params, tokens) -> logits``; ``dt_rank = ceil(width / 16)``."""
    d_inner = expand * width
    dt_rank = -(-width // 16)
    key = jax.random.key(93)
    key, k_emb, k_tok = jax.random.split(key, 3)
    blocks = []
    for _ in range(layers):
        key, *ks = jax.random.split(key, 7)
        log_step = jax.random.uniform(ks[4], (d_inner,), minval=jnp.log(0.001),
                                      maxval=jnp.log(0.1))
        blocks.append({
            "norm": jnp.ones((width,)),
            "in_proj": jax.random.normal(ks[0], (width, 2 * d_inner)) * width ** -0.5,
            "conv_kernel": jax.random.normal(ks[1], (conv, 1, d_inner)) * conv ** -0.5,
            "conv_bias": jnp.zeros((d_inner,)),
            "x_proj": jax.random.normal(ks[2], (d_inner, dt_rank + 2 * state))
            * d_inner ** -0.5,
            "dt_proj": jax.random.uniform(ks[3], (dt_rank, d_inner), minval=-1.0, maxval=1.0)
            * dt_rank ** -0.5,
            "dt_bias": jnp.log(jnp.expm1(jnp.exp(log_step))),  # softplus⁻¹ of the step
            "a_log": jnp.log(jnp.tile(jnp.arange(1, state + 1, dtype=jnp.float32),
                                      (d_inner, 1))),
            "d": jnp.ones((d_inner,)),
            "out_proj": jax.random.normal(ks[5], (d_inner, width)) * d_inner ** -0.5})
    params = {"embedding": jax.random.normal(k_emb, (vocab, width)) * 0.02,
              "blocks": blocks, "final_norm": jnp.ones((width,))}
    tokens = jax.random.randint(k_tok, (batch, length), 0, vocab, jnp.int32)
    return language_model, (params, tokens)
