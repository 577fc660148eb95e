"""A latent-diffusion VAE decoder's up block and output head: group norms, swish, 3×3
convolutions, a 1×1 shortcut and nearest-neighbour upsampling; inference (plain jax).

Reimplemented (no code copied) from huggingface/diffusers,
``src/diffusers/models/autoencoders/vae_flax.py`` (``FlaxResnetBlock2D``, ``FlaxUpsample2D``,
``FlaxUpDecoderBlock2D``, ``FlaxDecoder``) at commit fb33e6ce9417fda5ba882008de00995d2eee50a7:
each ResNet block is group norm (32 groups, epsilon 1e-6), swish, a 3×3 convolution, group
norm, swish and a 3×3 convolution, plus the input through a 1×1 convolution where the channel
count changes; the up block runs its ResNet blocks, then doubles the height and width by
``jax.image.resize`` with ``method="nearest"`` and smooths with a 3×3 convolution; the
decoder's head is group norm, swish and a 3×3 convolution to the image's colours. Flax's group
norm takes the variance as the mean of squares less the squared mean. Images are NHWC as in
the Flax model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Params = dict[str, Any]
DIMENSIONS = ("NHWC", "HWIO", "NHWC")
EPSILON = 1e-6


def conv(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    pad = w.shape[0] // 2
    y = jax.lax.conv_general_dilated(x, w, (1, 1), ((pad, pad), (pad, pad)),
                                     dimension_numbers=DIMENSIONS)
    return y + b


def group_norm(x: jax.Array, scale: jax.Array, bias: jax.Array, groups: int) -> jax.Array:
    batch, height, width, channels = x.shape
    g = x.reshape(batch, height, width, groups, channels // groups)
    mean = jnp.mean(g, axis=(1, 2, 4), keepdims=True)
    mean_sq = jnp.mean(jnp.square(g), axis=(1, 2, 4), keepdims=True)
    var = jnp.maximum(mean_sq - jnp.square(mean), 0.0)
    g = (g - mean) * jax.lax.rsqrt(var + EPSILON)
    return g.reshape(x.shape) * scale + bias


def resnet_block(p: Params, x: jax.Array, groups: int) -> jax.Array:
    h = jax.nn.swish(group_norm(x, p["n1_scale"], p["n1_bias"], groups))
    h = conv(h, p["w1"], p["b1"])
    h = jax.nn.swish(group_norm(h, p["n2_scale"], p["n2_bias"], groups))
    h = conv(h, p["w2"], p["b2"])
    shortcut = conv(x, p["w_short"], p["b_short"]) if "w_short" in p else x
    return h + shortcut


def decode(params: Params, x: jax.Array, *, groups: int) -> jax.Array:
    """``x`` (batch, size, size, channels) -> (batch, 2 size, 2 size, colours)."""
    for p in params["resnets"]:
        x = resnet_block(p, x, groups)
    batch, height, width, channels = x.shape
    x = jax.image.resize(x, (batch, 2 * height, 2 * width, channels), method="nearest")
    x = conv(x, params["w_up"], params["b_up"])
    x = jax.nn.swish(group_norm(x, params["out_scale"], params["out_bias"], groups))
    return conv(x, params["w_out"], params["b_out"])


def _conv_params(key: jax.Array, size: int, inputs: int, outputs: int
                 ) -> tuple[jax.Array, jax.Array]:
    w = jax.random.normal(key, (size, size, inputs, outputs)) * (size * size * inputs) ** -0.5
    return w, jnp.zeros((outputs,))


def _norm_params(key: jax.Array, channels: int) -> tuple[jax.Array, jax.Array]:
    k1, k2 = jax.random.split(key)
    return (1.0 + 0.1 * jax.random.normal(k1, (channels,)),
            0.1 * jax.random.normal(k2, (channels,)))


def setup(batch: int = 4, size: int = 16, channels: int = 128, out_channels: int = 64,
          layers: int = 2, groups: int = 32, colours: int = 3
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``fn(params, x) -> image``; the first ResNet block narrows ``channels`` to
    ``out_channels`` (so it has the 1×1 shortcut), the others keep ``out_channels``."""
    key = jax.random.key(41)
    resnets = []
    for i in range(layers):
        key, *ks = jax.random.split(key, 6)
        inputs = channels if i == 0 else out_channels
        p: Params = {}
        p["n1_scale"], p["n1_bias"] = _norm_params(ks[0], inputs)
        p["w1"], p["b1"] = _conv_params(ks[1], 3, inputs, out_channels)
        p["n2_scale"], p["n2_bias"] = _norm_params(ks[2], out_channels)
        p["w2"], p["b2"] = _conv_params(ks[3], 3, out_channels, out_channels)
        if inputs != out_channels:
            p["w_short"], p["b_short"] = _conv_params(ks[4], 1, inputs, out_channels)
        resnets.append(p)
    key, k_up, k_norm, k_out, k_x = jax.random.split(key, 5)
    params: Params = {"resnets": resnets}
    params["w_up"], params["b_up"] = _conv_params(k_up, 3, out_channels, out_channels)
    params["out_scale"], params["out_bias"] = _norm_params(k_norm, out_channels)
    params["w_out"], params["b_out"] = _conv_params(k_out, 3, out_channels, colours)
    x = jax.random.normal(k_x, (batch, size, size, channels), jnp.float32)

    def fn(params: Params, x: jax.Array) -> jax.Array:
        return decode(params, x, groups=groups)

    return fn, (params, x)
