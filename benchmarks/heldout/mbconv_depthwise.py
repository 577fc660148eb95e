"""MobileNet-V2 / EfficientNet inverted residual blocks with depthwise convolutions:
inference with batch norm folded into scales and shifts (plain jax).

Reimplemented (no code copied) from rwightman/efficientnet-jax,
``jeffnet/linen/blocks_linen.py`` (``InvertedResidual``, ``SqueezeExcite``) at commit
06d7ed6cdb252d191d262e0f50464451ee952200: a 1×1 expansion convolution, batch norm and swish;
a k×k depthwise convolution (``feature_group_count`` equal to the channels), batch norm and
swish; squeeze-and-excitation (a spatial mean, a 1×1 reduction, swish, a 1×1 expansion and a
sigmoid gate); a 1×1 projection and batch norm; the residual where the shape allows. Images
are NHWC as in efficientnet-jax's linen models.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Block = dict[str, jax.Array]
DIMENSIONS = ("NHWC", "HWIO", "NHWC")


def conv(x: jax.Array, w: jax.Array, groups: int = 1) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DIMENSIONS,
                                        feature_group_count=groups)


def inverted_residual(p: Block, x: jax.Array) -> jax.Array:
    shortcut = x
    x = jax.nn.swish(conv(x, p["w_exp"]) * p["s_exp"] + p["t_exp"])
    channels = x.shape[-1]
    x = jax.nn.swish(conv(x, p["w_dw"], groups=channels) * p["s_dw"] + p["t_dw"])
    se = jnp.mean(x, axis=(1, 2), keepdims=True)
    se = jax.nn.swish(se @ p["w_red"] + p["b_red"]) @ p["w_se"] + p["b_se"]
    x = x * jax.nn.sigmoid(se)
    x = conv(x, p["w_pwl"]) * p["s_pwl"] + p["t_pwl"]
    return x + shortcut


def network(params: list[Block], x: jax.Array) -> jax.Array:
    """``x`` (batch, size, size, channels) -> the same shape, through every block."""
    for p in params:
        x = inverted_residual(p, x)
    return x


def setup(batch: int = 4, size: int = 24, channels: int = 32, expand: int = 6,
          kernel: int = 3, blocks: int = 2) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``network(params, x) -> y``."""
    wide = channels * expand
    reduced = max(1, channels // 4)  # se_ratio 0.25 of the block's input features
    key = jax.random.key(21)
    params = []
    for _ in range(blocks):
        key, *ks = jax.random.split(key, 12)
        params.append({
            "w_exp": jax.random.normal(ks[0], (1, 1, channels, wide)) * channels ** -0.5,
            "s_exp": 1.0 + 0.1 * jax.random.normal(ks[1], (wide,)),
            "t_exp": 0.1 * jax.random.normal(ks[2], (wide,)),
            "w_dw": jax.random.normal(ks[3], (kernel, kernel, 1, wide)) / kernel,
            "s_dw": 1.0 + 0.1 * jax.random.normal(ks[4], (wide,)),
            "t_dw": 0.1 * jax.random.normal(ks[5], (wide,)),
            "w_red": jax.random.normal(ks[6], (wide, reduced)) * wide ** -0.5,
            "b_red": jnp.zeros((reduced,)),
            "w_se": jax.random.normal(ks[7], (reduced, wide)) * reduced ** -0.5,
            "b_se": jnp.zeros((wide,)),
            "w_pwl": jax.random.normal(ks[8], (1, 1, wide, channels)) * wide ** -0.5,
            "s_pwl": 1.0 + 0.1 * jax.random.normal(ks[9], (channels,)),
            "t_pwl": 0.1 * jax.random.normal(ks[10], (channels,))})
    x = jax.random.normal(key, (batch, size, size, channels), jnp.float32)
    return network, (params, x)
