"""NeRF: rays sampled at stratified depths, positional encodings of points and view
directions, the NeRF MLP (a skip connection, a density head and a view-conditioned colour
head), volume rendering by an exclusive cumulative product of transmittances, then a fine
pass whose depths are drawn by inverting the coarse weights' CDF and sorted in with the
coarse ones; the photometric loss of both passes and its gradient (plain jax).

Reimplemented (no code copied) from google-research/google-research,
``jaxnerf/nerf/model_utils.py`` (``MLP``, ``sample_along_rays``, ``posenc``,
``volumetric_rendering``, ``piecewise_constant_pdf``, ``sample_pdf``) at commit
010489fde45657adae64a7daf8b5bc7709b274ef: depths ``z`` spaced evenly from near to far
(deterministic, ``randomized=False``), points ``o + z d``, the encoding
``[x, sin(2^i x), sin(2^i x + π/2)]`` over ``deg`` octaves, ``net_depth`` ReLU layers with
the input concatenated after the fifth, ``σ`` and ``rgb`` through ``relu`` and ``sigmoid``,
``α = 1 - exp(-σ δ)`` with ``δ`` the gaps (the last ``1e10``) scaled by ``|d|``, weights
``α · cumprod(1 - α + ε)`` shifted by one, the colour ``Σ w · rgb`` on a white background;
the fine depths take evenly spaced ``u`` through the piecewise-constant CDF of the coarse
weights (the bracketing bins found by masked max and min over all bin edges, the samples
held out of the gradient), and both passes are scored by mean squared error against the
target colours. Both passes share one MLP here, where the file has one per pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Layer = dict[str, jax.Array]
SKIP = 4


def posenc(x: jax.Array, deg: int) -> jax.Array:
    scaled = [s for i in range(deg) for s in (2.0 ** i * x, 2.0 ** i * x + jnp.pi / 2)]
    return jnp.concatenate([x, jnp.sin(jnp.concatenate(scaled, axis=-1))], axis=-1)


def mlp(params: dict[str, Any], points: jax.Array, viewdirs: jax.Array
        ) -> tuple[jax.Array, jax.Array]:
    """``points`` (rays, samples, p), ``viewdirs`` (rays, v) -> rgb (rays, samples, 3),
    sigma (rays, samples)."""
    rays, samples, _ = points.shape
    inputs = points.reshape(rays * samples, -1)
    x = inputs
    for i, layer in enumerate(params["trunk"]):
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
        if i % SKIP == 0 and i > 0:
            x = jnp.concatenate([x, inputs], axis=-1)
    sigma = x @ params["sigma"]["w"] + params["sigma"]["b"]
    bottleneck = x @ params["bottleneck"]["w"] + params["bottleneck"]["b"]
    views = jnp.broadcast_to(viewdirs[:, None], (rays, samples, viewdirs.shape[-1]))
    x = jnp.concatenate([bottleneck, views.reshape(rays * samples, -1)], axis=-1)
    x = jax.nn.relu(x @ params["view"]["w"] + params["view"]["b"])
    rgb = x @ params["rgb"]["w"] + params["rgb"]["b"]
    return rgb.reshape(rays, samples, 3), sigma.reshape(rays, samples)


def render(rgb: jax.Array, sigma: jax.Array, z: jax.Array, directions: jax.Array
           ) -> tuple[jax.Array, jax.Array]:
    """Colour (rays, 3) on a white background and weights (rays, samples)."""
    gaps = jnp.concatenate([z[:, 1:] - z[:, :-1], jnp.full_like(z[:, :1], 1e10)], axis=-1)
    gaps = gaps * jnp.linalg.norm(directions[:, None, :], axis=-1)
    alpha = 1.0 - jnp.exp(-sigma * gaps)
    through = jnp.concatenate([jnp.ones_like(alpha[:, :1]),
                               jnp.cumprod(1.0 - alpha[:, :-1] + 1e-10, axis=-1)], axis=-1)
    weights = alpha * through
    colour = jnp.sum(weights[..., None] * rgb, axis=-2)
    return colour + (1.0 - jnp.sum(weights, axis=-1, keepdims=True)), weights


def inverse_cdf(bins: jax.Array, weights: jax.Array, samples: int) -> jax.Array:
    """Depths (rays, samples) at evenly spaced quantiles of the piecewise-constant pdf."""
    eps = 1e-5
    weights = weights + eps
    cdf = jnp.cumsum(weights / jnp.sum(weights, axis=-1, keepdims=True), axis=-1)
    cdf = jnp.concatenate([jnp.zeros_like(cdf[:, :1]), cdf], axis=-1)
    u = jnp.broadcast_to(jnp.linspace(0.0, 1.0, samples), (cdf.shape[0], samples))
    below = u[:, None, :] >= cdf[:, :, None]  # (rays, bins + 1, samples)

    def bracket(v: jax.Array) -> tuple[jax.Array, jax.Array]:
        lo = jnp.max(jnp.where(below, v[:, :, None], v[:, :1, None]), axis=-2)
        hi = jnp.min(jnp.where(~below, v[:, :, None], v[:, -1:, None]), axis=-2)
        return jnp.minimum(lo, v[:, -2:-1]), jnp.maximum(hi, v[:, 1:2])

    bin_lo, bin_hi = bracket(bins)
    cdf_lo, cdf_hi = bracket(cdf)
    span = cdf_hi - cdf_lo
    t = (u - cdf_lo) / jnp.where(span < eps, 1.0, span)
    return jax.lax.stop_gradient(bin_lo + t * (bin_hi - bin_lo))


def loss(params: dict[str, Any], rays: jax.Array, target: jax.Array, near: float,
         far: float, coarse: int, fine: int, deg_point: int, deg_view: int) -> jax.Array:
    origins, directions = rays[:, :3], rays[:, 3:6]
    viewdirs = posenc(directions / jnp.linalg.norm(directions, axis=-1, keepdims=True),
                      deg_view)
    t = jnp.linspace(0.0, 1.0, coarse)
    z = jnp.broadcast_to(near * (1.0 - t) + far * t, (rays.shape[0], coarse))

    def one_pass(z: jax.Array) -> tuple[jax.Array, jax.Array]:
        points = posenc(origins[:, None, :] + z[..., None] * directions[:, None, :],
                        deg_point)
        raw_rgb, raw_sigma = mlp(params, points, viewdirs)
        colour, weights = render(jax.nn.sigmoid(raw_rgb), jax.nn.relu(raw_sigma), z,
                                 directions)
        return jnp.mean(jnp.square(colour - target)), weights

    coarse_loss, weights = one_pass(z)
    mids = 0.5 * (z[:, 1:] + z[:, :-1])
    z = jnp.sort(jnp.concatenate([z, inverse_cdf(mids, weights[:, 1:-1], fine)], axis=-1),
                 axis=-1)
    fine_loss, _ = one_pass(z)
    return coarse_loss + fine_loss


def setup(rays: int = 64, coarse: int = 24, fine: int = 24, width: int = 64,
          depth: int = 8, view_width: int = 32, deg_point: int = 6, deg_view: int = 2
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``loss_and_grad(params, rays, target) -> (loss, grads)``; near 2, far 6."""
    key = jax.random.key(59)
    point_dim, view_dim = 3 + 6 * deg_point, 3 + 6 * deg_view

    def dense(k: jax.Array, n_in: int, n_out: int) -> Layer:
        limit = (6.0 / (n_in + n_out)) ** 0.5  # glorot uniform, as the file initialises
        return {"w": jax.random.uniform(k, (n_in, n_out), minval=-limit, maxval=limit),
                "b": jnp.zeros((n_out,))}

    key, *ks = jax.random.split(key, depth + 6)
    trunk = []
    n_in = point_dim
    for i in range(depth):
        trunk.append(dense(ks[i], n_in, width))
        n_in = width + point_dim if i % SKIP == 0 and i > 0 else width
    params = {"trunk": trunk, "sigma": dense(ks[depth], n_in, 1),
              "bottleneck": dense(ks[depth + 1], n_in, width),
              "view": dense(ks[depth + 2], width + view_dim, view_width),
              "rgb": dense(ks[depth + 3], view_width, 3)}
    k_o, k_d, k_t = jax.random.split(key, 3)
    origins = jax.random.normal(k_o, (rays, 3)) * 0.1
    directions = jax.random.normal(k_d, (rays, 3))
    ray_array = jnp.concatenate([origins, directions], axis=-1)
    target = jax.random.uniform(k_t, (rays, 3))

    def loss_and_grad(params: dict[str, Any], rays: jax.Array, target: jax.Array
                      ) -> tuple[jax.Array, Any]:
        return jax.value_and_grad(loss)(params, rays, target, 2.0, 6.0, coarse, fine,
                                        deg_point, deg_view)

    return loss_and_grad, (params, ray_array, target)
