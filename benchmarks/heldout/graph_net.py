"""A graph network's message passing with segment sums, the model of jraph's ``GraphNetwork``
(plain jax).

Reimplemented (no code copied) from google-deepmind/jraph, ``jraph/_src/models.py``
(``GraphNetwork``, after Battaglia et al. 2018, Algorithm 1) at commit
51f5990104f7374492f8f3ea1cbc47feb411c69c: each edge is updated from its own features, its
sender's and receiver's node features (gathers) and its graph's globals (a repeat by edge
counts); each node from its features, the sums of its outgoing and incoming edges
(``segment_sum`` over senders and over receivers) and its graph's globals; each graph's globals
from the sums of its nodes and edges (``segment_sum`` over graph indices). The update functions
are two-layer ReLU MLPs. Several graphs of different sizes are batched into one, as jraph
batches them, and the same parameters are applied for a few rounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Params = dict[str, dict[str, jax.Array]]


def mlp(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def message_passing(params: Params, nodes: jax.Array, edges: jax.Array, globals_: jax.Array,
                    senders: jax.Array, receivers: jax.Array, n_node: jax.Array,
                    n_edge: jax.Array, *, rounds: int
                    ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``nodes`` (N, F), ``edges`` (E, F), ``globals_`` (G, F), ``senders``/``receivers`` int32
    (E,), ``n_node``/``n_edge`` int32 (G,) -> updated (nodes, edges, globals)."""
    total_nodes, total_edges, graphs = nodes.shape[0], edges.shape[0], n_node.shape[0]
    node_graph = jnp.repeat(jnp.arange(graphs), n_node, total_repeat_length=total_nodes)
    edge_graph = jnp.repeat(jnp.arange(graphs), n_edge, total_repeat_length=total_edges)
    for _ in range(rounds):
        edge_in = jnp.concatenate(
            [edges, nodes[senders], nodes[receivers], globals_[edge_graph]], axis=-1)
        edges = mlp(params["edge"], edge_in)
        out_sum = jax.ops.segment_sum(edges, senders, total_nodes)
        in_sum = jax.ops.segment_sum(edges, receivers, total_nodes)
        nodes = mlp(params["node"],
                    jnp.concatenate([nodes, out_sum, in_sum, globals_[node_graph]], axis=-1))
        node_pool = jax.ops.segment_sum(nodes, node_graph, graphs)
        edge_pool = jax.ops.segment_sum(edges, edge_graph, graphs)
        globals_ = mlp(params["global"],
                       jnp.concatenate([node_pool, edge_pool, globals_], axis=-1))
    return nodes, edges, globals_


def _mlp_params(key: jax.Array, inputs: int, width: int) -> dict[str, jax.Array]:
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (inputs, width)) * inputs ** -0.5,
            "b1": jnp.zeros((width,)),
            "w2": jax.random.normal(k2, (width, width)) * width ** -0.5,
            "b2": jnp.zeros((width,))}


def setup(graphs: int = 8, nodes: int = 2048, edges: int = 8192, features: int = 64,
          rounds: int = 2) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``fn(params, nodes, edges, globals, senders, receivers, n_node, n_edge)`` -> (nodes,
    edges, globals); ``nodes`` and ``edges`` are spread unevenly over ``graphs`` graphs, each
    edge joining two nodes of its own graph."""
    keys = jax.random.split(jax.random.key(38), 8)
    params = {"edge": _mlp_params(keys[0], 4 * features, features),
              "node": _mlp_params(keys[1], 4 * features, features),
              "global": _mlp_params(keys[2], 3 * features, features)}
    # Uneven graph sizes that sum to the totals.
    weights = jnp.arange(1, graphs + 1, dtype=jnp.float32)
    n_node = jnp.floor(nodes * weights / weights.sum()).astype(jnp.int32)
    n_node = n_node.at[-1].add(nodes - n_node.sum())
    n_edge = jnp.floor(edges * weights / weights.sum()).astype(jnp.int32)
    n_edge = n_edge.at[-1].add(edges - n_edge.sum())
    first_node = jnp.cumsum(n_node) - n_node
    edge_graph = jnp.repeat(jnp.arange(graphs), n_edge, total_repeat_length=edges)
    offset, size = first_node[edge_graph], n_node[edge_graph]
    senders = offset + jax.random.randint(keys[3], (edges,), 0, 1 << 30) % size
    receivers = offset + jax.random.randint(keys[4], (edges,), 0, 1 << 30) % size
    node_x = jax.random.normal(keys[5], (nodes, features), jnp.float32)
    edge_x = jax.random.normal(keys[6], (edges, features), jnp.float32)
    global_x = jax.random.normal(keys[7], (graphs, features), jnp.float32)

    def fn(params: Params, nodes: jax.Array, edges: jax.Array, globals_: jax.Array,
           senders: jax.Array, receivers: jax.Array, n_node: jax.Array, n_edge: jax.Array
           ) -> tuple[jax.Array, jax.Array, jax.Array]:
        return message_passing(params, nodes, edges, globals_, senders, receivers, n_node,
                               n_edge, rounds=rounds)

    return fn, (params, node_x, edge_x, global_x, senders.astype(jnp.int32),
                receivers.astype(jnp.int32), n_node, n_edge)
