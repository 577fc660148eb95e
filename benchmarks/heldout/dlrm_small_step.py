"""DLRM-Small, the click-through model of MLCommons' Criteo 1 TB workload: one SGD training
step, its embedding table's gradient a scatter-add of rows (plain jax).

Reimplemented (no code copied) from mlcommons/algorithmic-efficiency,
``algorithmic_efficiency/workloads/criteo1tb/criteo1tb_jax/models.py`` (``DlrmSmall``,
``dot_interact``) at commit 00da7603d4211f02755fb5f4e6517198178f5974: each example's 13 dense
features through the bottom MLP (dense layers with ReLU, the last as wide as an embedding),
its 26 categorical features looked up (modulo the vocabulary) in one table of
``[vocab, embed]``, the bottom MLP's output stacked with the 26 embeddings, their pairwise
dot products (``x @ x^T`` per example) and the upper triangle of that matrix gathered by
index, concatenated with the bottom MLP's output into the top MLP (dense layers with ReLU
but the last, of width 1), and the sigmoid cross-entropy of that logit against the click
label, averaged over the batch; the step subtracts the learning rate times each gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

DENSE_FEATURES = 13
SPARSE_FEATURES = 26
Dense = tuple[jax.Array, jax.Array]


def mlp(layers: list[Dense], x: jax.Array, last_relu: bool) -> jax.Array:
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if last_relu or i < len(layers) - 1:
            x = jax.nn.relu(x)
    return x


def dot_interact(features: jax.Array, upper: tuple[jax.Array, jax.Array]) -> jax.Array:
    """``features`` (batch, n, embed) -> the upper triangle (diagonal included) of each
    example's ``n x n`` dot products, flattened."""
    products = jnp.matmul(features, jnp.transpose(features, (0, 2, 1)))
    return products[:, upper[0], upper[1]]


def forward(params: dict[str, Any], dense: jax.Array, sparse: jax.Array,
            upper: tuple[jax.Array, jax.Array]) -> jax.Array:
    table = params["embedding"]
    bottom = mlp(params["bottom"], dense, last_relu=True)
    batch, embed = bottom.shape[0], table.shape[1]
    rows = jnp.take(table, sparse.reshape(-1) % table.shape[0], axis=0)
    stacked = jnp.concatenate([bottom.reshape(batch, -1, embed),
                               rows.reshape(batch, -1, embed)], axis=1)
    top_input = jnp.concatenate([bottom, dot_interact(stacked, upper)], axis=-1)
    return mlp(params["top"], top_input, last_relu=False)


def sgd_step(params: dict[str, Any], dense: jax.Array, sparse: jax.Array, clicks: jax.Array,
             upper: tuple[jax.Array, jax.Array], rate: float = 0.01
             ) -> tuple[dict[str, Any], jax.Array]:
    def loss_fn(p: dict[str, Any]) -> jax.Array:
        logits = forward(p, dense, sparse, upper)[:, 0]
        losses = jnp.maximum(logits, 0) - logits * clicks + jnp.log1p(jnp.exp(-jnp.abs(logits)))
        return jnp.mean(losses)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - rate * g, params, grads), loss


def _dense(key: jax.Array, fan_in: int, fan_out: int) -> Dense:
    k_w, k_b = jax.random.split(key)
    return (jax.random.normal(k_w, (fan_in, fan_out)) * (2.0 / (fan_in + fan_out)) ** 0.5,
            jax.random.normal(k_b, (fan_out,)) * fan_out ** -0.5)


def setup(batch: int = 512, vocab: int = 65536, embed: int = 64, bottom: int = 256,
          top: int = 512) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``step(params, dense, sparse, clicks, upper) -> (params, loss)``: bottom MLP
    ``13 -> bottom -> embed``, top MLP ``-> top -> top // 2 -> 1``."""
    key = jax.random.key(13)
    keys = jax.random.split(key, 10)
    n = SPARSE_FEATURES + 1
    upper = tuple(jnp.asarray(i, jnp.int32) for i in np.triu_indices(n))
    top_in = embed + n * (n + 1) // 2
    params = {
        "embedding": jax.random.uniform(keys[0], (vocab, embed)) * vocab ** -0.5,
        "bottom": [_dense(keys[1], DENSE_FEATURES, bottom), _dense(keys[2], bottom, embed)],
        "top": [_dense(keys[3], top_in, top), _dense(keys[4], top, top // 2),
                _dense(keys[5], top // 2, 1)]}
    dense = jax.random.normal(keys[6], (batch, DENSE_FEATURES))
    # Categorical values as the Criteo logs give them: hashed ids, many repeated.
    ranks = jax.random.uniform(keys[7], (batch, SPARSE_FEATURES))
    sparse = ((vocab * 4) ** ranks).astype(jnp.int32)
    clicks = (jax.random.uniform(keys[8], (batch,)) < 0.25).astype(jnp.float32)

    def step(params: dict[str, Any], dense: jax.Array, sparse: jax.Array, clicks: jax.Array,
             upper: tuple[jax.Array, jax.Array]) -> tuple[dict[str, Any], jax.Array]:
        return sgd_step(params, dense, sparse, clicks, upper)

    return step, (params, dense, sparse, clicks, upper)
