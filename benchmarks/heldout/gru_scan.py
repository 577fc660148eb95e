"""A GRU run over a sequence with ``lax.scan``, a regression loss and its gradient (Equinox).

The cell is Equinox's ``GRUCell`` (one sequence element, one example), batched with
``jax.vmap`` and stepped through time with ``jax.lax.scan``; the loss is the mean squared
error of a linear read-out of the last hidden state. The program returns the loss and the
gradient with respect to every parameter, so its compiled form holds the forward scan and the
reverse scan of the backward pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp


class GRURegressor(eqx.Module):
    cell: eqx.nn.GRUCell
    readout: eqx.nn.Linear

    def __init__(self, features: int, hidden: int, outputs: int, *, key: jax.Array) -> None:
        k_cell, k_out = jax.random.split(key)
        self.cell = eqx.nn.GRUCell(features, hidden, key=k_cell)
        self.readout = eqx.nn.Linear(hidden, outputs, key=k_out)

    def __call__(self, xs: jax.Array) -> jax.Array:
        """``xs``: (time, batch, features) -> (batch, outputs)."""
        batch = xs.shape[1]
        step_cell = jax.vmap(self.cell)

        def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, None]:
            return step_cell(x, h), None

        h0 = jnp.zeros((batch, self.cell.hidden_size), xs.dtype)
        h, _ = jax.lax.scan(step, h0, xs)
        return jax.vmap(self.readout)(h)


def setup(time: int = 64, batch: int = 16, features: int = 64, hidden: int = 128,
          outputs: int = 16) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``loss_and_grad(params, xs, target) -> (loss, grads)``; params are the model's arrays."""
    model = GRURegressor(features, hidden, outputs, key=jax.random.key(3))
    params, static = eqx.partition(model, eqx.is_array)

    def loss_and_grad(params: Any, xs: jax.Array, target: jax.Array) -> tuple[jax.Array, Any]:
        def loss_fn(p: Any) -> jax.Array:
            prediction = eqx.combine(p, static)(xs)
            return jnp.mean((prediction - target) ** 2)

        return jax.value_and_grad(loss_fn)(params)

    keys = jax.random.split(jax.random.key(4), 2)
    xs = jax.random.normal(keys[0], (time, batch, features), jnp.float32)
    target = jax.random.normal(keys[1], (batch, outputs), jnp.float32)
    return loss_and_grad, (params, xs, target)
