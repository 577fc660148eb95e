"""S5 layers: a diagonal complex state-space model discretised by zero-order hold and run over
the sequence by ``jax.lax.associative_scan``, with a pre-norm, a gated GELU output and a
residual; inference on a batch of sequences (plain jax).

Reimplemented (no code copied) from lindermanlab/S5, ``s5/ssm.py`` (``discretize_zoh``,
``binary_operator``, ``apply_ssm``, ``S5SSM``), ``s5/layers.py`` (``SequenceLayer``) and
``s5/ssm_init.py`` (``make_DPLR_HiPPO``) at commit 3c18fdb6b06414da35e77b94b9cd855f6a95ef17:
each call discretises the continuous parameters (``Λ̄ = exp(ΛΔ)``,
``B̄ = (Λ̄ - 1)/Λ · B̃`` with ``Δ = exp(log_step)``), projects every input step to the state
(``B̄ u_k``, complex), runs the linear recurrence ``x_k = Λ̄ x_{k-1} + B̄ u_k`` as a parallel
scan whose operator combines ``(a_i, b_i), (a_j, b_j)`` into ``(a_j a_i, a_j b_i + b_j)``,
reads out ``y_k = 2 Re(C̃ x_k) + D u_k`` (conjugate symmetry, so half the state is kept),
then ``gelu`` and the ``half_glu1`` gate ``x · sigmoid(W x + b)``, with a layer norm before
the SSM and the residual after. The eigenvalues Λ are those of the HiPPO-LegS normal part,
as S5 initialises them; B̃ and C̃ are drawn at random here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Layer = dict[str, jax.Array]
EPSILON = 1e-6


def layer_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPSILON) * scale + bias


def combine(earlier: tuple[jax.Array, jax.Array], later: tuple[jax.Array, jax.Array]
            ) -> tuple[jax.Array, jax.Array]:
    a_i, b_i = earlier
    a_j, b_j = later
    return a_j * a_i, a_j * b_i + b_j


def ssm(p: Layer, u: jax.Array) -> jax.Array:
    """``u`` (batch, length, features) real -> (batch, length, features) real."""
    lam = p["lambda_re"] + 1j * p["lambda_im"]  # (state,)
    b_tilde = p["b_re"] + 1j * p["b_im"]  # (state, features)
    c_tilde = p["c_re"] + 1j * p["c_im"]  # (features, state)
    step = jnp.exp(p["log_step"])
    lam_bar = jnp.exp(lam * step)
    b_bar = ((lam_bar - 1.0) / lam)[:, None] * b_tilde
    bu = jnp.einsum("blh,ph->blp", u.astype(b_bar.dtype), b_bar)
    decay = jnp.broadcast_to(lam_bar, bu.shape)
    _, states = jax.lax.associative_scan(combine, (decay, bu), axis=1)
    y = 2.0 * jnp.einsum("blp,hp->blh", states, c_tilde).real
    return y + p["d"] * u


def network(params: list[Layer], x: jax.Array) -> jax.Array:
    """``x`` (batch, length, features) -> the same shape, through every S5 layer."""
    for p in params:
        skip = x
        h = jax.nn.gelu(ssm(p, layer_norm(x, p["norm_scale"], p["norm_bias"])),
                        approximate=False)
        h = h * jax.nn.sigmoid(h @ p["w_gate"] + p["b_gate"])
        x = skip + h
    return x


def hippo_eigenvalues(state: int) -> tuple[jax.Array, jax.Array]:
    """Real and imaginary parts of the eigenvalues of HiPPO-LegS's normal part (size
    ``2 state``), the half with negative imaginary parts kept (conjugate symmetry)."""
    n = 2 * state
    p = jnp.sqrt(1.0 + 2.0 * jnp.arange(n))
    legs = -(jnp.tril(p[:, None] * p[None, :]) - jnp.diag(jnp.arange(n, dtype=jnp.float32)))
    rank_one = jnp.sqrt(jnp.arange(n) + 0.5)
    normal = legs + rank_one[:, None] * rank_one[None, :]
    real = jnp.mean(jnp.diagonal(normal)) * jnp.ones((state,))
    imag = jnp.linalg.eigvalsh(normal * -1j)[:state]
    return real, imag


def setup(batch: int = 8, length: int = 512, features: int = 64, state: int = 32,
          layers: int = 2) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``network(params, x) -> y``: ``state`` complex state channels per layer (the
    conjugate half of ``2 state``)."""
    key = jax.random.key(74)
    lam_re, lam_im = hippo_eigenvalues(state)
    params = []
    for _ in range(layers):
        key, *ks = jax.random.split(key, 9)
        params.append({
            "norm_scale": jnp.ones((features,)), "norm_bias": jnp.zeros((features,)),
            "lambda_re": lam_re, "lambda_im": lam_im,
            "b_re": jax.random.normal(ks[0], (state, features)) * (2 * features) ** -0.5,
            "b_im": jax.random.normal(ks[1], (state, features)) * (2 * features) ** -0.5,
            "c_re": jax.random.normal(ks[2], (features, state)) * (2 * state) ** -0.5,
            "c_im": jax.random.normal(ks[3], (features, state)) * (2 * state) ** -0.5,
            "d": jax.random.normal(ks[4], (features,)),
            "log_step": jax.random.uniform(ks[5], (state,), minval=jnp.log(0.001),
                                           maxval=jnp.log(0.1)),
            "w_gate": jax.random.normal(ks[6], (features, features)) * features ** -0.5,
            "b_gate": jnp.zeros((features,))})
    x = jax.random.normal(key, (batch, length, features), jnp.float32)
    return network, (params, x)
