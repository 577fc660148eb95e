"""F-Net encoder blocks: token mixing by a two-dimensional discrete Fourier transform, then a
feed-forward layer, each with a residual and a post-norm layer norm; inference (plain jax).

Reimplemented (no code copied) from google-research/google-research, ``f_net/layers.py``
(``FourierTransform``, ``FeedForwardLayer``, ``EncoderBlock``) at commit
1d4d2f1aa6f2883a790d2ae46a6ee8ab150d8f31: the mixing sublayer is the real part of the FFT of
each example over its sequence and hidden dimensions (``jnp.fft.fftn`` per example);
``x = LayerNorm(inputs + mixing)``, then
``LayerNorm(x + Dense(gelu(Dense(x))))``, with epsilon 1e-12 as F-Net's layer norms. The
choice of ``jnp.fft.fftn`` on CPUs and GPUs is in ``f_net/models.py``
(``EncoderModel._init_fourier_transform``) at commit 05e1d1c257a86adc03e6ac814354c3ce6b14ead2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

EPSILON = 1e-12


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPSILON) * scale + bias


def encoder(params: list[dict[str, jax.Array]], x: jax.Array) -> jax.Array:
    """``x`` (batch, seq, width) -> (batch, seq, width), through every block of ``params``."""
    for p in params:
        mixed = jax.vmap(jnp.fft.fftn)(x).real
        x = layer_norm(x + mixed, p["mix_scale"], p["mix_bias"])
        ff = jax.nn.gelu(x @ p["w_in"] + p["b_in"]) @ p["w_out"] + p["b_out"]
        x = layer_norm(x + ff, p["out_scale"], p["out_bias"])
    return x


def setup(batch: int = 8, seq: int = 128, width: int = 256, hidden: int = 512,
          blocks: int = 2) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``encoder(params, x) -> y``."""
    keys = jax.random.split(jax.random.key(11), 2 * blocks + 1)
    params = []
    for b in range(blocks):
        params.append({
            "mix_scale": jnp.ones((width,)), "mix_bias": jnp.zeros((width,)),
            "w_in": 0.02 * jax.random.normal(keys[2 * b], (width, hidden)),
            "b_in": jnp.zeros((hidden,)),
            "w_out": 0.02 * jax.random.normal(keys[2 * b + 1], (hidden, width)),
            "b_out": jnp.zeros((width,)),
            "out_scale": jnp.ones((width,)), "out_bias": jnp.zeros((width,))})
    x = jax.random.normal(keys[-1], (batch, seq, width), jnp.float32)
    return encoder, (params, x)
