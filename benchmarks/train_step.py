"""A small transformer-style training step in plain JAX, for the per-kernel benchmark.

Two blocks of pre-norm attention (4 heads) and a GELU MLP on a batch of 8 sequences of 64
tokens, width 128, a mean-squared loss, and a hand-written AdamW update of every parameter.
:func:`setup` returns ``(step, args)`` in the form ``benchmarks/kernels.py --setup`` takes.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

WIDTH, HEADS, BLOCKS, BATCH, TOKENS = 128, 4, 2, 8, 64
Params = dict[str, Any]


def _init(rng: np.random.Generator) -> Params:
    def w(*shape: int) -> np.ndarray[Any, Any]:
        out: np.ndarray[Any, Any] = (rng.standard_normal(shape) / np.sqrt(shape[0]))
        return out.astype(np.float32)

    blocks = []
    for _ in range(BLOCKS):
        blocks.append({
            "ln1": np.ones(WIDTH, np.float32), "ln2": np.ones(WIDTH, np.float32),
            "qkv": w(WIDTH, 3 * WIDTH), "out": w(WIDTH, WIDTH),
            "up": w(WIDTH, 4 * WIDTH), "up_b": np.zeros(4 * WIDTH, np.float32),
            "down": w(4 * WIDTH, WIDTH), "down_b": np.zeros(WIDTH, np.float32),
        })
    return {"blocks": blocks, "head": w(WIDTH, WIDTH)}


def _norm(x: Any, scale: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale


def _attention(x: Any, p: Params) -> Any:
    b, t, d = x.shape
    q, k, v = jnp.split(x @ p["qkv"], 3, axis=-1)

    def heads(a: Any) -> Any:
        return a.reshape(b, t, HEADS, d // HEADS).transpose(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // HEADS)
    mask = jnp.tril(jnp.ones((t, t), bool))
    scores = jnp.where(mask, scores, -1e9)
    out = jax.nn.softmax(scores, axis=-1) @ v
    return out.transpose(0, 2, 1, 3).reshape(b, t, d) @ p["out"]


def _model(params: Params, x: Any) -> Any:
    for p in params["blocks"]:
        x = x + _attention(_norm(x, p["ln1"]), p)
        h = jax.nn.gelu(_norm(x, p["ln2"]) @ p["up"] + p["up_b"])
        x = x + h @ p["down"] + p["down_b"]
    return x @ params["head"]


def _loss(params: Params, x: Any, y: Any) -> Any:
    return jnp.mean((_model(params, x) - y) ** 2)


def train_step(params: Params, m: Params, v: Params, count: Any, x: Any,
               y: Any) -> tuple[Params, Params, Params, Any, Any]:
    """One AdamW step (lr 1e-3, betas 0.9/0.999, weight decay 0.01)."""
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    count = count + 1
    b1, b2, lr, eps, wd = 0.9, 0.999, 1e-3, 1e-8, 0.01
    m = jax.tree.map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)
    c1 = 1 - b1 ** count
    c2 = 1 - b2 ** count

    def update(p: Any, mm: Any, vv: Any) -> Any:
        return p - lr * ((mm / c1) / (jnp.sqrt(vv / c2) + eps) + wd * p)

    params = jax.tree.map(update, params, m, v)
    return params, m, v, count, loss


def setup() -> tuple[Any, tuple[Any, ...]]:
    rng = np.random.default_rng(0)
    params = jax.tree.map(jnp.asarray, _init(rng))
    zeros = jax.tree.map(jnp.zeros_like, params)
    x = jnp.asarray(rng.standard_normal((BATCH, TOKENS, WIDTH)).astype(np.float32))
    y = jnp.asarray(rng.standard_normal((BATCH, TOKENS, WIDTH)).astype(np.float32))
    return train_step, (params, zeros, zeros, jnp.asarray(0.0, jnp.float32), x, y)
