"""A ConvNeXt stage and its SGD training step (plain jax).

Reimplemented (no code copied) from facebookresearch/ConvNeXt, ``models/convnext.py`` at commit
06f7b05f922e21914916406141f50f82b4a15852: a downsampling layer (``LayerNorm`` over the channels,
then a 2x2 convolution of stride 2 into the stage's width, as between the file's stages), then
``Block``s: a 7x7 depthwise convolution padded by 3, a ``LayerNorm`` over the channels (eps
1e-6), the pointwise expansion to four times the width (``pwconv1``, a linear layer), an exact
(erf) GELU, the projection back (``pwconv2``), the layer scale ``gamma`` and the residual; then
the file's global average pooling, final ``LayerNorm`` and linear head. Images are NHWC, so the
file's permutes to channels-last are not needed. The step is cross-entropy against integer
labels and plain SGD on every parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def layer_norm(x: jax.Array, weight: jax.Array, bias: jax.Array) -> jax.Array:
    """``LayerNorm`` over the last (channel) axis, eps 1e-6, as the file's channels-last one."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-6) * weight + bias


def depthwise(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    """The block's 7x7 depthwise convolution, padded by 3 (``groups=dim``); ``w`` is
    [7, 7, 1, channels]."""
    y = jax.lax.conv_general_dilated(x, w, (1, 1), ((3, 3), (3, 3)),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                     feature_group_count=x.shape[-1])
    return y + b


def block(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    y = depthwise(x, p["dw_w"], p["dw_b"])
    y = layer_norm(y, p["ln_w"], p["ln_b"])
    y = jax.nn.gelu(y @ p["pw1_w"] + p["pw1_b"], approximate=False)
    y = y @ p["pw2_w"] + p["pw2_b"]
    return x + p["gamma"] * y


def forward(params: dict[str, Any], images: jax.Array) -> jax.Array:
    down = params["down"]
    x = layer_norm(images, down["ln_w"], down["ln_b"])
    x = jax.lax.conv_general_dilated(x, down["w"], (2, 2), "VALID",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC")) + down["b"]
    for p in params["blocks"]:
        x = block(p, x)
    pooled = layer_norm(x.mean(axis=(1, 2)), params["norm_w"], params["norm_b"])
    logits: jax.Array = pooled @ params["head_w"] + params["head_b"]
    return logits


def setup(batch: int = 2, size: int = 24, channels_in: int = 48, width: int = 96,
          blocks: int = 2, classes: int = 10
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``train_step(params, images, labels) -> (params, loss)``; images are NHWC of
    ``channels_in`` features (the previous stage's width), ``size`` pixels a side."""
    keys = iter(jax.random.split(jax.random.key(11), 8 + 4 * blocks))

    def normal(shape: tuple[int, ...], std: float = 0.02) -> jax.Array:
        return std * jax.random.truncated_normal(next(keys), -2.0, 2.0, shape, jnp.float32)

    params: dict[str, Any] = {
        "down": {"ln_w": jnp.ones(channels_in), "ln_b": jnp.zeros(channels_in),
                 "w": normal((2, 2, channels_in, width)), "b": jnp.zeros(width)},
        "blocks": [{"dw_w": normal((7, 7, 1, width)), "dw_b": jnp.zeros(width),
                    "ln_w": jnp.ones(width), "ln_b": jnp.zeros(width),
                    "pw1_w": normal((width, 4 * width)), "pw1_b": jnp.zeros(4 * width),
                    "pw2_w": normal((4 * width, width)), "pw2_b": jnp.zeros(width),
                    "gamma": jnp.full(width, 1e-6)} for _ in range(blocks)],
        "norm_w": jnp.ones(width), "norm_b": jnp.zeros(width),
        "head_w": normal((width, classes)), "head_b": jnp.zeros(classes),
    }

    def train_step(params: dict[str, Any], images: jax.Array, labels: jax.Array
                   ) -> tuple[dict[str, Any], jax.Array]:
        def loss_fn(p: dict[str, Any]) -> jax.Array:
            logits = forward(p, images)
            picked = jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1)
            return -picked.mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda w, g: w - 0.1 * g, params, grads), loss

    images = jax.random.normal(next(keys), (batch, size, size, channels_in), jnp.float32)
    labels = jax.random.randint(next(keys), (batch,), 0, classes, jnp.int32)
    return train_step, (params, images, labels)
