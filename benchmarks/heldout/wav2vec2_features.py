"""wav2vec 2.0's feature encoder on raw audio: seven strided 1-D convolutions, each with a
layer norm and GELU, a feature projection, and the convolutional position embedding (a
weight-normalised grouped convolution with a wide kernel); inference (plain jax).

Reimplemented (no code copied) from huggingface/transformers,
``src/transformers/models/wav2vec2/modeling_flax_wav2vec2.py``
(``FlaxWav2Vec2LayerNormConvLayer``, ``FlaxWav2Vec2FeatureEncoder``,
``FlaxWav2Vec2FeatureProjection``, ``FlaxConvWithWeightNorm``,
``FlaxWav2Vec2PositionalConvEmbedding``, the start of ``FlaxWav2Vec2StableLayerNormEncoder``)
at commit 0223842989de8c1d7cc588d5c7bc9a88a597bdb9: the waveform (batch, samples) becomes
(batch, samples, 1) and goes through convolutions of kernels 10, 3, 3, 3, 3, 2, 2 and strides
5, 2, 2, 2, 2, 2, 2 (``VALID`` padding, with biases as the layer-norm models have), each
followed by a layer norm over channels (epsilon 1e-5) and exact GELU; the projection is a
layer norm and a dense layer to the hidden width; the position embedding normalises its kernel
per tap (the norm of each tap's weights over output and input channels, times a learned
gain), pads half the kernel on both sides, convolves with ``feature_group_count`` groups,
drops the last frame when the kernel is even, applies GELU and is added to the projected
features. Sequences are NWC as in the Flax model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Params = dict[str, Any]
KERNELS = (10, 3, 3, 3, 3, 2, 2)
STRIDES = (5, 2, 2, 2, 2, 2, 2)
DIMENSIONS = ("NWC", "WIO", "NWC")
EPSILON = 1e-5


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPSILON) * scale + bias


def conv1d(x: jax.Array, w: jax.Array, stride: int = 1, groups: int = 1) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (stride,), "VALID", dimension_numbers=DIMENSIONS,
                                        feature_group_count=groups)


def features(params: Params, audio: jax.Array, *, groups: int) -> jax.Array:
    """``audio`` (batch, samples) -> (batch, frames, hidden)."""
    x: jax.Array = audio[:, :, None]
    for p, stride in zip(params["convs"], STRIDES, strict=True):
        x = conv1d(x, p["w"], stride) + p["b"]
        x = jax.nn.gelu(layer_norm(x, p["scale"], p["bias"]), approximate=False)
    x = layer_norm(x, params["proj_scale"], params["proj_bias"])
    x = jnp.matmul(x, params["proj_w"]) + params["proj_b"]
    # Weight norm: v (out, in / groups, taps) scaled per tap to the gain g.
    v, g = params["pos_v"], params["pos_g"]
    kernel = (v / jnp.linalg.norm(v, axis=(0, 1), keepdims=True) * g).T  # (taps, in, out)
    taps = kernel.shape[0]
    padded = jnp.pad(x, ((0, 0), (taps // 2, taps // 2), (0, 0)))
    pos = conv1d(padded, kernel, groups=groups) + params["pos_b"]
    if taps % 2 == 0:
        pos = pos[:, :-1]
    return x + jax.nn.gelu(pos, approximate=False)


def setup(batch: int = 2, samples: int = 16000, conv_dim: int = 128, hidden: int = 256,
          pos_kernel: int = 128, groups: int = 16
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``fn(params, audio) -> features``: about ``samples / 320`` frames per example."""
    key = jax.random.key(63)
    convs = []
    inputs = 1
    for kernel in KERNELS:
        key, k_w, k_s, k_b = jax.random.split(key, 4)
        convs.append({
            "w": jax.random.normal(k_w, (kernel, inputs, conv_dim))
            * (2.0 / (kernel * inputs)) ** 0.5,
            "b": jnp.zeros((conv_dim,)),
            "scale": 1.0 + 0.1 * jax.random.normal(k_s, (conv_dim,)),
            "bias": 0.1 * jax.random.normal(k_b, (conv_dim,))})
        inputs = conv_dim
    key, k_proj, k_v, k_g, k_audio = jax.random.split(key, 5)
    per_group = hidden // groups
    pos_v = (jax.random.normal(k_v, (hidden, per_group, pos_kernel))
             * (2.0 / (pos_kernel * per_group)) ** 0.5)
    params: Params = {
        "convs": convs,
        "proj_scale": jnp.ones((conv_dim,)), "proj_bias": jnp.zeros((conv_dim,)),
        "proj_w": 0.02 * jax.random.normal(k_proj, (conv_dim, hidden)),
        "proj_b": jnp.zeros((hidden,)),
        "pos_v": pos_v,
        "pos_g": jnp.linalg.norm(pos_v, axis=(0, 1), keepdims=True)
        * (1.0 + 0.1 * jax.random.normal(k_g, (1, 1, pos_kernel))),
        "pos_b": jnp.zeros((hidden,))}
    audio = jax.random.normal(k_audio, (batch, samples), jnp.float32)

    def fn(params: Params, audio: jax.Array) -> jax.Array:
        return features(params, audio, groups=groups)

    return fn, (params, audio)
