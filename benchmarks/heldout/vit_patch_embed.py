"""A Vision Transformer's input: patch embedding, class token and position embeddings (Flax NNX).

As in Dosovitskiy et al., "An Image is Worth 16x16 Words" (2020) and the public ViT code: a
convolution whose kernel and stride are the patch size embeds each non-overlapping patch, the
patches are flattened into a sequence, a learned class token is prepended, learned position
embeddings are added and a layer norm follows. Inference only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx


class PatchEmbed(nnx.Module):
    def __init__(self, image: int, patch: int, colours: int, width: int, *,
                 rngs: nnx.Rngs) -> None:
        self.conv = nnx.Conv(colours, width, (patch, patch), strides=(patch, patch),
                             padding="VALID", rngs=rngs)
        count = (image // patch) ** 2
        self.cls = nnx.Param(jnp.zeros((1, 1, width), jnp.float32))
        self.positions = nnx.Param(
            0.02 * jax.random.normal(rngs.params(), (1, count + 1, width), jnp.float32))
        self.norm = nnx.LayerNorm(width, rngs=rngs)

    def __call__(self, images: jax.Array) -> jax.Array:
        x = self.conv(images)
        batch, height, width, channels = x.shape
        x = x.reshape(batch, height * width, channels)
        cls = jnp.broadcast_to(self.cls[...], (batch, 1, channels))
        tokens: jax.Array = self.norm(jnp.concatenate([cls, x], axis=1) + self.positions[...])
        return tokens


def setup(batch: int = 32, image: int = 64, patch: int = 8, colours: int = 3, width: int = 384
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``embed(params, images) -> tokens`` with images NHWC and tokens (batch, 1 + patches,
    width)."""
    model = PatchEmbed(image, patch, colours, width, rngs=nnx.Rngs(7))
    graphdef, params = nnx.split(model, nnx.Param)

    def embed(params: Any, images: jax.Array) -> jax.Array:
        tokens: jax.Array = nnx.merge(graphdef, params)(images)
        return tokens

    images = jax.random.uniform(jax.random.key(8), (batch, image, image, colours), jnp.float32)
    return embed, (params, images)
