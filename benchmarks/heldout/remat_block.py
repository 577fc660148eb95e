"""Residual MLP blocks under ``jax.checkpoint`` (rematerialisation), loss and gradient (Equinox).

Each pre-norm residual block is wrapped in ``eqx.filter_checkpoint``: its activations are not
kept for the backward pass but recomputed there, trading compute for memory as large models
do. The program returns the mean squared error of the stack's output and the gradient with
respect to every parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp


class Block(eqx.Module):
    norm: eqx.nn.LayerNorm
    up: eqx.nn.Linear
    down: eqx.nn.Linear

    def __init__(self, width: int, hidden: int, *, key: jax.Array) -> None:
        k_up, k_down = jax.random.split(key)
        self.norm = eqx.nn.LayerNorm(width)
        self.up = eqx.nn.Linear(width, hidden, key=k_up)
        self.down = eqx.nn.Linear(hidden, width, key=k_down)

    def __call__(self, x: jax.Array) -> jax.Array:
        """One example: (width,) -> (width,)."""
        return x + self.down(jax.nn.gelu(self.up(self.norm(x))))


def _apply(block: Block, x: jax.Array) -> jax.Array:
    return jax.vmap(block)(x)


class Stack(eqx.Module):
    blocks: list[Block]

    def __init__(self, depth: int, width: int, hidden: int, *, key: jax.Array) -> None:
        self.blocks = [Block(width, hidden, key=k) for k in jax.random.split(key, depth)]

    def __call__(self, x: jax.Array) -> jax.Array:
        """A batch: (batch, width) -> (batch, width), each block rematerialised."""
        for block in self.blocks:
            x = eqx.filter_checkpoint(_apply)(block, x)
        return x


def setup(batch: int = 128, width: int = 256, hidden: int = 512, depth: int = 4
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``loss_and_grad(params, x, target) -> (loss, grads)``."""
    model = Stack(depth, width, hidden, key=jax.random.key(13))
    params, static = eqx.partition(model, eqx.is_array)

    def loss_and_grad(params: Any, x: jax.Array, target: jax.Array) -> tuple[jax.Array, Any]:
        def loss_fn(p: Any) -> jax.Array:
            return jnp.mean((eqx.combine(p, static)(x) - target) ** 2)

        return jax.value_and_grad(loss_fn)(params)

    keys = jax.random.split(jax.random.key(14), 2)
    x = jax.random.normal(keys[0], (batch, width), jnp.float32)
    target = jax.random.normal(keys[1], (batch, width), jnp.float32)
    return loss_and_grad, (params, x, target)
