"""Top-k temperature sampling in a ``lax.while_loop`` that stops when every sequence has
emitted end-of-sequence: a loop whose trip count depends on the data (plain jax).

Reimplemented (no code copied) from google/flax, ``examples/lm1b/temperature_sampler.py``
(``temperature_sample``) at commit 18f8f311c275d57f46d95e41b15aa97b454754c0: the loop runs
while the position is below the last one and not every sequence has ended; each trip calls
the decoder on the current tokens and its cache, keeps the top-k logits (``lax.top_k``),
samples among them at a temperature, maps the choice back to a token
(``take_along_axis``), keeps prompt tokens where the prompt has them, emits padding after a
sequence's end marker, and writes the tokens in with ``dynamic_update_slice``.

Two departures keep it small and checkable: the decoder is a one-layer recurrent cell (its
hidden state is the cache) rather than lm1b's Transformer, and the sampling noise is an
argument (Gumbel noise, one row per position) rather than drawn from a key: adding Gumbel
noise and taking the argmax is a draw from the categorical distribution
(``jax.random.categorical`` draws that way). A bias on the end marker's logit makes
sequences end after a few tens of tokens, so the loop stops well before ``length`` on most
inputs: how many trips it runs is known only once it has run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

EOS = 2


def decoder_step(p: dict[str, jax.Array], token: jax.Array, h: jax.Array
                 ) -> tuple[jax.Array, jax.Array]:
    """``token`` int32 (batch,), ``h`` (batch, hidden) -> (logits (batch, vocab), new h)."""
    h = jnp.tanh(p["embed"][token] + h @ p["w_h"] + p["b_h"])
    return h @ p["w_out"] + p["b_out"], h


def sample(params: dict[str, jax.Array], prompts: jax.Array, noise: jax.Array,
           temperature: jax.Array) -> jax.Array:
    """``prompts`` int32 (batch, length), zero past each prompt; ``noise`` (length, batch, k)
    Gumbel noise -> the sequences, int32 (batch, length)."""
    batch, length = prompts.shape
    hidden = params["w_h"].shape[0]
    k = noise.shape[-1]

    State = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]

    def cond(state: State) -> jax.Array:
        i, _, _, _, ended = state
        return (i < length - 1) & ~jnp.all(ended)

    def body(state: State) -> State:
        i, sequences, h, token, ended = state
        logits, h = decoder_step(params, token, h)
        top_logits, top_index = jax.lax.top_k(logits, k)
        choice = jnp.argmax(top_logits / temperature + noise[i + 1], axis=-1)
        sampled = jnp.take_along_axis(top_index, choice[:, None], axis=-1)[:, 0]
        prompt = jax.lax.dynamic_index_in_dim(sequences, i + 1, axis=1, keepdims=False)
        token = jnp.where(prompt == 0, sampled, prompt).astype(jnp.int32)
        token = jnp.where(ended, 0, token)
        ended = ended | (token == EOS)
        sequences = jax.lax.dynamic_update_slice(sequences, token[:, None], (0, i + 1))
        return i + 1, sequences, h, token, ended

    state: State = (jnp.array(-1, jnp.int32), prompts, jnp.zeros((batch, hidden), jnp.float32),
             jnp.zeros((batch,), jnp.int32), jnp.zeros((batch,), jnp.bool_))
    return jax.lax.while_loop(cond, body, state)[1]


def setup(batch: int = 16, length: int = 96, prompt: int = 4, vocab: int = 1024,
          hidden: int = 256, k: int = 20, eos_bias: float = 1.5
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``sample(params, prompts, noise, temperature) -> sequences``."""
    keys = jax.random.split(jax.random.key(5), 5)
    b_out = jnp.zeros((vocab,)).at[EOS].set(eos_bias)
    params = {"embed": jax.random.normal(keys[0], (vocab, hidden)),
              "w_h": jax.random.normal(keys[1], (hidden, hidden)) * hidden ** -0.5,
              "b_h": jnp.zeros((hidden,)),
              "w_out": jax.random.normal(keys[2], (hidden, vocab)) * hidden ** -0.5,
              "b_out": b_out}
    tokens = jax.random.randint(keys[3], (batch, length), 3, vocab, jnp.int32)
    prompts = jnp.where(jnp.arange(length) < prompt, tokens, 0)
    noise = jax.random.gumbel(keys[4], (length, batch, k), jnp.float32)
    return sample, (params, prompts, noise, jnp.float32(1.0))
