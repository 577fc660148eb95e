"""A small transformer block and its training step, written with Flax NNX and optax.

The block: pre-layer-norm causal self-attention (4 heads) and an MLP (4x wider, GELU), each
with a residual connection, at d_model = 128 on a batch of 8 sequences of 64 tokens. The
training step computes a mean squared error against a target, its gradients, and an AdamW
update of every parameter: the kind of program a real model runs, with parameters and optimizer
state as pytrees.

Analyse it from the repository root (needs ``pip install .[examples]``)::

    python generate.py --config examples/transformer.toml --only-config

or from Python::

    import roofline_report
    from examples.transformer import setup

    fn, args = setup()
    roofline_report.analyze(fn, *args, name="transformer training step", out="transformer")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Block(nnx.Module):
    """One pre-norm transformer block: causal self-attention, then an MLP."""

    def __init__(self, d_model: int, heads: int, *, rngs: nnx.Rngs) -> None:
        self.norm_attention = nnx.LayerNorm(d_model, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(num_heads=heads, in_features=d_model,
                                                decode=False, rngs=rngs)
        self.norm_mlp = nnx.LayerNorm(d_model, rngs=rngs)
        self.up = nnx.Linear(d_model, 4 * d_model, rngs=rngs)
        self.down = nnx.Linear(4 * d_model, d_model, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        mask = nnx.make_causal_mask(x[..., 0])
        x = x + self.attention(self.norm_attention(x), mask=mask)
        return x + self.down(nnx.gelu(self.up(self.norm_mlp(x))))


def make_train_step(graphdef: Any, tx: optax.GradientTransformation
                    ) -> Callable[..., tuple[Any, Any, jax.Array]]:
    """A pure training step of (parameters, optimizer state, inputs, targets)."""

    def train_step(params: Any, opt_state: Any, x: jax.Array, y: jax.Array
                   ) -> tuple[Any, Any, jax.Array]:
        def loss_fn(p: Any) -> jax.Array:
            model = nnx.merge(graphdef, p)
            return jnp.mean((model(x) - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step


def setup(d_model: int = 128, heads: int = 4, batch: int = 8, seq: int = 64
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The training step and its example arguments: (train_step, (params, opt_state, x, y))."""
    block = Block(d_model, heads, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(block, nnx.Param)
    tx = optax.adamw(learning_rate=1e-3, weight_decay=1e-2)
    opt_state = tx.init(params)
    keys = jax.random.split(jax.random.key(1), 2)
    x = jax.random.normal(keys[0], (batch, seq, d_model), jnp.float32)
    y = jax.random.normal(keys[1], (batch, seq, d_model), jnp.float32)
    return make_train_step(graphdef, tx), (params, opt_state, x, y)
