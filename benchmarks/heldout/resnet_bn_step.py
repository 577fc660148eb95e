"""A ResNet basic block with batch normalisation and its SGD training step (Flax NNX, optax).

The block of He et al., "Deep Residual Learning" (2015): 3x3 convolution, batch norm, ReLU,
3x3 convolution, batch norm, identity shortcut, ReLU; then global average pooling and a linear
classifier. Batch norm runs in training mode: it normalises with the batch's statistics and
updates its running averages, which the step returns with the new parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class BasicBlock(nnx.Module):
    def __init__(self, channels: int, *, rngs: nnx.Rngs) -> None:
        self.conv1 = nnx.Conv(channels, channels, (3, 3), padding="SAME", use_bias=False,
                              rngs=rngs)
        self.bn1 = nnx.BatchNorm(channels, use_running_average=False, momentum=0.9, rngs=rngs)
        self.conv2 = nnx.Conv(channels, channels, (3, 3), padding="SAME", use_bias=False,
                              rngs=rngs)
        self.bn2 = nnx.BatchNorm(channels, use_running_average=False, momentum=0.9, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        y = nnx.relu(self.bn1(self.conv1(x)))
        return nnx.relu(x + self.bn2(self.conv2(y)))


class Classifier(nnx.Module):
    def __init__(self, channels: int, classes: int, *, rngs: nnx.Rngs) -> None:
        self.block = BasicBlock(channels, rngs=rngs)
        self.head = nnx.Linear(channels, classes, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.head(jnp.mean(self.block(x), axis=(1, 2)))


def setup(batch: int = 8, size: int = 16, channels: int = 32, classes: int = 10
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``train_step(params, stats, opt_state, images, labels) -> (params, stats, opt_state,
    loss)``; images are NHWC."""
    model = Classifier(channels, classes, rngs=nnx.Rngs(5))
    graphdef, params, stats = nnx.split(model, nnx.Param, nnx.BatchStat)  # type: ignore[misc]
    tx = optax.sgd(0.1, momentum=0.9)
    opt_state = tx.init(params)

    def train_step(params: Any, stats: Any, opt_state: Any, images: jax.Array,
                   labels: jax.Array) -> tuple[Any, Any, Any, jax.Array]:
        def loss_fn(p: Any, s: Any) -> tuple[jax.Array, Any]:
            net = nnx.merge(graphdef, p, s, copy=True)
            logits = net(images)
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
            return loss, nnx.state(net, nnx.BatchStat)

        (loss, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, stats)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), new_stats, opt_state, loss

    keys = jax.random.split(jax.random.key(6), 2)
    images = jax.random.normal(keys[0], (batch, size, size, channels), jnp.float32)
    labels = jax.random.randint(keys[1], (batch,), 0, classes, jnp.int32)
    return train_step, (params, stats, opt_state, images, labels)
