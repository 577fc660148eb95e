"""An MLP-Mixer block with a classifier head and its AdamW training step (Flax NNX, optax).

Tokens are image patches already embedded: a batch of ``batch`` images, ``tokens`` patches of
``channels`` features. The block mixes across tokens (an MLP on the transposed activations),
then across channels, each after a layer norm and with a residual connection, as in
Tolstikhin et al., "MLP-Mixer" (2021); the head averages the tokens and classifies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MixerBlock(nnx.Module):
    """Token mixing, then channel mixing, each pre-normed and residual."""

    def __init__(self, tokens: int, channels: int, token_hidden: int, channel_hidden: int,
                 *, rngs: nnx.Rngs) -> None:
        self.norm_tokens = nnx.LayerNorm(channels, rngs=rngs)
        self.token_in = nnx.Linear(tokens, token_hidden, rngs=rngs)
        self.token_out = nnx.Linear(token_hidden, tokens, rngs=rngs)
        self.norm_channels = nnx.LayerNorm(channels, rngs=rngs)
        self.channel_in = nnx.Linear(channels, channel_hidden, rngs=rngs)
        self.channel_out = nnx.Linear(channel_hidden, channels, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        y = jnp.swapaxes(self.norm_tokens(x), 1, 2)
        y = self.token_out(nnx.gelu(self.token_in(y)))
        x = x + jnp.swapaxes(y, 1, 2)
        return x + self.channel_out(nnx.gelu(self.channel_in(self.norm_channels(x))))


class Mixer(nnx.Module):
    """One Mixer block, a final layer norm, mean pooling over tokens and a linear head."""

    def __init__(self, tokens: int, channels: int, classes: int, *, rngs: nnx.Rngs) -> None:
        self.block = MixerBlock(tokens, channels, tokens, 4 * channels, rngs=rngs)
        self.norm = nnx.LayerNorm(channels, rngs=rngs)
        self.head = nnx.Linear(channels, classes, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.head(jnp.mean(self.norm(self.block(x)), axis=1))


def setup(batch: int = 8, tokens: int = 64, channels: int = 128, classes: int = 100
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``train_step(params, opt_state, x, labels) -> (params, opt_state, loss)``."""
    model = Mixer(tokens, channels, classes, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model, nnx.Param)
    tx = optax.adamw(1e-3, weight_decay=1e-4)
    opt_state = tx.init(params)

    def train_step(params: Any, opt_state: Any, x: jax.Array, labels: jax.Array
                   ) -> tuple[Any, Any, jax.Array]:
        def loss_fn(p: Any) -> jax.Array:
            logits = nnx.merge(graphdef, p)(x)
            loss: jax.Array = optax.softmax_cross_entropy_with_integer_labels(logits, labels)
            return loss.mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    keys = jax.random.split(jax.random.key(2), 2)
    x = jax.random.normal(keys[0], (batch, tokens, channels), jnp.float32)
    labels = jax.random.randint(keys[1], (batch,), 0, classes, jnp.int32)
    return train_step, (params, opt_state, x, labels)
