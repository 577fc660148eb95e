"""Int8 quantized inference of a two-layer MLP: weights quantized ahead of serving, activations
quantized on the fly, ``s8 × s8 → s32`` products, and rescaling (plain jax).

Reimplemented (no code copied) from google/aqt at commit
9d1667ebde057f474cf8d2c80d4e52c5670d6c8a: ``aqt/jax/v2/aqt_dot_general.py`` (int8 operands
multiplied with an int32 accumulator, ``preferred_element_type=jnp.int32``, the result scaled
back by both operands' scales), ``aqt/jax/v2/calibration.py`` (absolute-max calibration over
the contracting axis) and ``aqt/jax/v2/numerics/int_numerics.py`` (symmetric int8 preserving
the maximum: scale = absmax ÷ 127, clip, round to nearest even). Weights are frozen int8 with
one scale per output channel, as for serving after post-training quantization
(``aqt/jax/v2/examples/cnn/serve_ptq.py``); activations get one scale per row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

BOUND = 127.0  # int8's largest magnitude, preserved


def quantize(x: jax.Array, axis: int) -> tuple[jax.Array, jax.Array]:
    """``x`` float -> (int8 values, float32 scales) with absmax over ``axis`` kept."""
    absmax = jnp.max(jnp.abs(x), axis=axis, keepdims=True)
    scale = jnp.where(absmax == 0.0, 1.0, absmax) / BOUND
    q = jnp.round(jnp.clip(x / scale, -BOUND, BOUND))
    return q.astype(jnp.int8), scale


def int8_dense(x: jax.Array, w: jax.Array, w_scale: jax.Array, b: jax.Array) -> jax.Array:
    """``x`` float32 (rows, k) times int8 ``w`` (k, n) with scales ``w_scale`` (1, n)."""
    qx, x_scale = quantize(x, axis=1)
    acc = jax.lax.dot_general(qx, w, (((1,), (0,)), ((), ())),
                              preferred_element_type=jnp.int32)
    return acc.astype(jnp.float32) * x_scale * w_scale + b


def serve(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    """``x`` (tokens, width) -> (tokens, outputs)."""
    h = jax.nn.relu(int8_dense(x, params["w1"], params["s1"], params["b1"]))
    return int8_dense(h, params["w2"], params["s2"], params["b2"])


def setup(tokens: int = 256, width: int = 512, hidden: int = 2048, outputs: int = 512
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``serve(params, x) -> y``; params hold int8 weights and their float32 scales."""
    keys = jax.random.split(jax.random.key(8), 3)
    w1, s1 = quantize(jax.random.normal(keys[0], (width, hidden)) * width ** -0.5, axis=0)
    w2, s2 = quantize(jax.random.normal(keys[1], (hidden, outputs)) * hidden ** -0.5, axis=0)
    params = {"w1": w1, "s1": s1, "b1": jnp.zeros((hidden,)),
              "w2": w2, "s2": s2, "b2": jnp.zeros((outputs,))}
    x = jax.random.normal(keys[2], (tokens, width), jnp.float32)
    return serve, (params, x)
