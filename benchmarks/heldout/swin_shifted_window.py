"""Swin Transformer blocks: window attention with a learned relative position bias, every
second block on windows shifted by half a window (``jnp.roll`` and a mask between the
regions the roll brought together), a GELU MLP and pre-norm residuals; inference on a batch
of patch-token images (plain jax).

Reimplemented (no code copied) from DarshanDeshpande/jax-models,
``jax_models/models/swin_transformer.py`` (``window_partition``, ``window_reverse``,
``WindowAttention``, ``SwinBlock``, ``SwinLayer``) at commit
98716a7c5b39f6d87523e214e3992ed740b4bb58: a block layer-norms the ``(batch, H·W, C)`` tokens,
rolls the image by ``-shift`` along both axes when it shifts, cuts it into ``M × M``
windows, attends within each window with queries scaled by ``head_dim^-1/2`` and a bias
gathered from a ``((2M-1)², heads)`` table by the relative position index of every token
pair, adds ``-100`` where a shifted window's tokens came from different regions, merges the
windows back, rolls by ``+shift`` and adds the residual; then a layer norm and a
``Dense(4C) → gelu → Dense(C)`` MLP with its residual. Blocks alternate shift ``0`` and
``M // 2``, as ``SwinLayer`` builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Block = dict[str, jax.Array]
EPSILON = 1e-5


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPSILON) * scale + bias


def to_windows(x: jax.Array, m: int) -> jax.Array:
    """(batch, H, W, C) -> (batch · H/m · W/m, m·m, C)."""
    b, h, w, c = x.shape
    x = x.reshape(b, h // m, m, w // m, m, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, m * m, c)


def from_windows(windows: jax.Array, m: int, h: int, w: int) -> jax.Array:
    c = windows.shape[-1]
    x = windows.reshape(-1, h // m, w // m, m, m, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, h, w, c)


def relative_index(m: int) -> np.ndarray:
    """(m·m, m·m) indices into the ``(2m-1)²`` bias table, one per token pair."""
    coords = np.stack(np.meshgrid(np.arange(m), np.arange(m), indexing="ij")).reshape(2, -1)
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + (m - 1)
    return (rel[..., 0] * (2 * m - 1) + rel[..., 1]).astype(np.int32)


def shift_mask(h: int, w: int, m: int, shift: int) -> np.ndarray:
    """(windows, m·m, m·m): ``-100`` between tokens of different regions, else 0."""
    regions = np.zeros((1, h, w, 1), np.float32)
    cuts = (slice(0, -m), slice(-m, -shift), slice(-shift, None))
    for i, rows in enumerate(cuts):
        for j, cols in enumerate(cuts):
            regions[:, rows, cols, :] = 3 * i + j
    labels = np.asarray(to_windows(jnp.asarray(regions), m))[..., 0]
    return np.where(labels[:, None, :] != labels[:, :, None], -100.0, 0.0).astype(np.float32)


def window_attention(p: Block, x: jax.Array, index: jax.Array, mask: jax.Array | None,
                     heads: int) -> jax.Array:
    n_windows, n, c = x.shape
    qkv = (x @ p["w_qkv"] + p["b_qkv"]).reshape(n_windows, n, 3, heads, c // heads)
    q, k, v = qkv.transpose(2, 0, 3, 1, 4)
    scores = (q * (c // heads) ** -0.5) @ jnp.swapaxes(k, -2, -1)
    bias = p["bias_table"][index.reshape(-1)].reshape(n, n, heads).transpose(2, 0, 1)
    scores = scores + bias[None]
    if mask is not None:
        per_image = mask.shape[0]
        scores = scores.reshape(-1, per_image, heads, n, n) + mask[None, :, None]
        scores = scores.reshape(-1, heads, n, n)
    out = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(n_windows, n, c)
    projected: jax.Array = out @ p["w_proj"] + p["b_proj"]
    return projected


def swin_block(p: Block, x: jax.Array, hw: tuple[int, int], m: int, shift: int,
               index: jax.Array, mask: jax.Array | None, heads: int) -> jax.Array:
    b, length, c = x.shape
    h, w = hw
    y = layer_norm(x, p["norm1_scale"], p["norm1_bias"]).reshape(b, h, w, c)
    if shift:
        y = jnp.roll(y, (-shift, -shift), axis=(1, 2))
    y = from_windows(window_attention(p, to_windows(y, m), index, mask, heads), m, h, w)
    if shift:
        y = jnp.roll(y, (shift, shift), axis=(1, 2))
    x = x + y.reshape(b, length, c)
    hidden = jax.nn.gelu(layer_norm(x, p["norm2_scale"], p["norm2_bias"]) @ p["w1"] + p["b1"])
    return x + hidden @ p["w2"] + p["b2"]


def setup(batch: int = 2, size: int = 28, channels: int = 96, heads: int = 3,
          window: int = 7, blocks: int = 2) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``network(params, index, mask, x) -> y`` on ``x`` (batch, size², channels)."""
    key = jax.random.key(67)
    params = []
    for _ in range(blocks):
        key, *ks = jax.random.split(key, 6)
        params.append({
            "norm1_scale": jnp.ones((channels,)), "norm1_bias": jnp.zeros((channels,)),
            "w_qkv": jax.random.normal(ks[0], (channels, 3 * channels)) * channels ** -0.5,
            "b_qkv": jnp.zeros((3 * channels,)),
            "bias_table": jax.random.normal(ks[1], ((2 * window - 1) ** 2, heads)) * 0.02,
            "w_proj": jax.random.normal(ks[2], (channels, channels)) * channels ** -0.5,
            "b_proj": jnp.zeros((channels,)),
            "norm2_scale": jnp.ones((channels,)), "norm2_bias": jnp.zeros((channels,)),
            "w1": jax.random.normal(ks[3], (channels, 4 * channels)) * channels ** -0.5,
            "b1": jnp.zeros((4 * channels,)),
            "w2": jax.random.normal(ks[4], (4 * channels, channels)) * (4 * channels) ** -0.5,
            "b2": jnp.zeros((channels,))})
    index = jnp.asarray(relative_index(window))
    shift = window // 2
    mask = jnp.asarray(shift_mask(size, size, window, shift))
    x = jax.random.normal(key, (batch, size * size, channels), jnp.float32)

    def network(params: list[Block], index: jax.Array, mask: jax.Array, x: jax.Array
                ) -> jax.Array:
        for i, p in enumerate(params):
            odd = i % 2 == 1
            x = swin_block(p, x, (size, size), window, shift if odd else 0, index,
                           mask if odd else None, heads)
        return x

    return network, (params, index, mask, x)
