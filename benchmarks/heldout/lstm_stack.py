"""Two stacked LSTM layers run over a sequence with ``lax.scan``, and a classifier on the last
hidden state: inference (plain jax).

Reimplemented (no code copied) from google/flax, ``flax/linen/recurrent.py`` (``LSTMCell``) at
commit 18f8f311c275d57f46d95e41b15aa97b454754c0: four gates, each the sum of a dense layer of
the input (no bias) and a dense layer of the hidden state (with bias), sigmoid input, forget
and output gates and a tanh candidate; ``c' = f·c + i·g``, ``h' = o·tanh(c')``. As in linen,
every gate has its own pair of small matrix products, so a step is eight products per layer
and a handful of elementwise kernels, repeated for every element of the sequence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

GATES = ("i", "f", "g", "o")
Layer = dict[str, jax.Array]


def lstm_step(p: Layer, carry: tuple[jax.Array, jax.Array], x: jax.Array
              ) -> tuple[jax.Array, jax.Array]:
    c, h = carry
    pre = {g: x @ p[f"wi{g}"] + h @ p[f"wh{g}"] + p[f"bh{g}"] for g in GATES}
    i, f, o = jax.nn.sigmoid(pre["i"]), jax.nn.sigmoid(pre["f"]), jax.nn.sigmoid(pre["o"])
    c = f * c + i * jnp.tanh(pre["g"])
    return c, o * jnp.tanh(c)


def classify(params: dict[str, Any], xs: jax.Array) -> jax.Array:
    """``xs`` (time, batch, features) -> logits (batch, classes)."""
    batch = xs.shape[1]
    for layer in params["layers"]:
        hidden = layer["whi"].shape[0]
        zeros = jnp.zeros((batch, hidden), xs.dtype)

        def step(carry: tuple[jax.Array, jax.Array], x: jax.Array, layer: Layer = layer
                 ) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
            carry = lstm_step(layer, carry, x)
            return carry, carry[1]

        _, xs = jax.lax.scan(step, (zeros, zeros), xs)
    logits: jax.Array = xs[-1] @ params["head"]["w"] + params["head"]["b"]
    return logits


def setup(time: int = 64, batch: int = 32, features: int = 64, hidden: int = 128,
          layers: int = 2, classes: int = 10) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``classify(params, xs) -> logits``."""
    key = jax.random.key(7)
    stack = []
    inputs = features
    for _ in range(layers):
        key, *ks = jax.random.split(key, 13)
        layer: Layer = {}
        for n, g in enumerate(GATES):
            layer[f"wi{g}"] = jax.random.normal(ks[3 * n], (inputs, hidden)) * inputs ** -0.5
            layer[f"wh{g}"] = jax.random.normal(ks[3 * n + 1], (hidden, hidden)) * hidden ** -0.5
            layer[f"bh{g}"] = 0.1 * jax.random.normal(ks[3 * n + 2], (hidden,))
        stack.append(layer)
        inputs = hidden
    key, k_head, k_x = jax.random.split(key, 3)
    params = {"layers": stack,
              "head": {"w": jax.random.normal(k_head, (hidden, classes)) * hidden ** -0.5,
                       "b": jnp.zeros((classes,))}}
    xs = jax.random.normal(k_x, (time, batch, features), jnp.float32)
    return classify, (params, xs)
