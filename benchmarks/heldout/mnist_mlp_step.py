"""A plain MLP classifier's SGD training step, as JAX's own MNIST example from scratch writes it
(plain jax).

Reimplemented (no code copied) from jax-ml/jax, ``examples/mnist_classifier_fromscratch.py``
(``init_random_params``, ``predict``, ``loss``, ``update``) at commit
6aa8f2461cd68cd93d3f29a3b53149ce626b6900: dense layers with ``tanh`` between them (784 ->
1024 -> 1024 -> 10 in the example), the logits normalised by ``logsumexp`` into
log-probabilities, the loss the negative mean over the batch of the log-probabilities summed
against one-hot targets, and the update ``w - step_size · dw`` of every weight and bias. Its
weight gradients are products of a layer's input, transposed, by the gradient of its output
(``x^T @ dy``): each contracts both operands along the batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Layer = tuple[jax.Array, jax.Array]
STEP_SIZE = 0.001


def predict(params: list[Layer], inputs: jax.Array) -> jax.Array:
    activations = inputs
    for w, b in params[:-1]:
        activations = jnp.tanh(jnp.dot(activations, w) + b)
    final_w, final_b = params[-1]
    logits = jnp.dot(activations, final_w) + final_b
    return logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)


def loss(params: list[Layer], inputs: jax.Array, targets: jax.Array) -> jax.Array:
    return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))


def update(params: list[Layer], inputs: jax.Array, targets: jax.Array) -> list[Layer]:
    grads = jax.grad(loss)(params, inputs, targets)
    return [(w - STEP_SIZE * dw, b - STEP_SIZE * db)
            for (w, b), (dw, db) in zip(params, grads, strict=True)]


def setup(batch: int = 128, inputs: int = 784, hidden: int = 1024, layers: int = 2,
          classes: int = 10) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``update(params, images, targets) -> params``: ``layers`` hidden layers of ``hidden``."""
    rng = np.random.RandomState(0)
    sizes = [inputs, *([hidden] * layers), classes]
    params = [(jnp.asarray(0.1 * rng.randn(m, n), jnp.float32),
               jnp.asarray(0.1 * rng.randn(n), jnp.float32))
              for m, n in itertools.pairwise(sizes)]
    images = jnp.asarray(rng.rand(batch, inputs), jnp.float32)
    targets = jnp.asarray(np.eye(classes, dtype=np.float32)[rng.randint(0, classes, batch)])
    return update, (params, images, targets)
