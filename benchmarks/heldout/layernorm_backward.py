"""Layer normalisation's backward pass: ``jax.vjp`` of a layer norm (plain jax).

Given activations, scale, offset and the output's cotangent, returns the cotangents of the
activations, the scale and the offset: two row reductions for the input gradient and two
column reductions for the parameters, the memory-bound tail of every transformer's backward
pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def layer_norm(x: jax.Array, gamma: jax.Array, beta: jax.Array, eps: float = 1e-5
               ) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * gamma + beta


def backward(x: jax.Array, gamma: jax.Array, beta: jax.Array, dy: jax.Array
             ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(dx, dgamma, dbeta)`` for the cotangent ``dy`` of ``layer_norm(x, gamma, beta)``."""
    _, vjp = jax.vjp(layer_norm, x, gamma, beta)
    dx, dgamma, dbeta = vjp(dy)
    return dx, dgamma, dbeta


def setup(rows: int = 1024, width: int = 1024) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    keys = jax.random.split(jax.random.key(11), 4)
    x = jax.random.normal(keys[0], (rows, width), jnp.float32)
    gamma = 1.0 + 0.1 * jax.random.normal(keys[1], (width,), jnp.float32)
    beta = 0.1 * jax.random.normal(keys[2], (width,), jnp.float32)
    dy = jax.random.normal(keys[3], (rows, width), jnp.float32)
    return backward, (x, gamma, beta, dy)
