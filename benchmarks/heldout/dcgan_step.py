"""One DCGAN training iteration: the discriminator's Adam step on real and generated images,
then the generator's (plain jax).

Reimplemented (no code copied) from pytorch/examples, ``dcgan/main.py`` at commit
13caa078cd69d74ffb447a9eda09f0a81b809480, for 32x32 images (the file's networks for 64x64 less
their widest layer): the ``Generator`` of 4x4 transposed convolutions (stride 1 and no padding
from the 1x1 latent, then stride 2 padded by 1), each but the last followed by a batch norm in
training mode (the batch's statistics, eps 1e-5) and a ReLU, the last by ``tanh``; the
``Discriminator`` of 4x4 convolutions of stride 2 padded by 1 with leaky ReLUs (slope 0.2) and
batch norms after all but the first, a last 4x4 convolution to one logit and a sigmoid; the
file's loop body: the discriminator's binary cross-entropy on a real batch (label 1) and on the
generated batch held constant (label 0), its Adam step (lr 2e-4, betas 0.5 and 0.999), then the
generator's cross-entropy against label 1 through the updated discriminator, its gradient
carried back through the generated batch already computed, and its Adam step. Weights are
drawn as the file's ``weights_init`` does (convolutions N(0, 0.02), batch-norm scales
N(1, 0.02)); the batch norms' running averages, which no output of the step reads, are left
out. Images are NHWC; a transposed convolution is the file's (each input pixel adds its
weighted 4x4 patch into the output at twice its position, less the padding), written as a
convolution of the input dilated by its stride with the filter flipped.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def conv_transpose(x: jax.Array, w: jax.Array, stride: int, pad: int) -> jax.Array:
    """``ConvTranspose2d`` of ``w`` [k, k, in, out] with ``stride`` and ``pad``: output pixel
    (stride·i + a - pad, stride·j + b - pad) gets x[i, j] · w[a, b]."""
    k = w.shape[0]
    edge = k - 1 - pad
    return jax.lax.conv_general_dilated(x, w[::-1, ::-1], (1, 1), ((edge, edge), (edge, edge)),
                                        lhs_dilation=(stride, stride),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv(x: jax.Array, w: jax.Array, stride: int, pad: int) -> jax.Array:
    return jax.lax.conv_general_dilated(x, w, (stride, stride), ((pad, pad), (pad, pad)),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def batch_norm(x: jax.Array, scale: jax.Array, bias: jax.Array) -> jax.Array:
    mean = x.mean(axis=(0, 1, 2))
    var = ((x - mean) ** 2).mean(axis=(0, 1, 2))
    return (x - mean) / jnp.sqrt(var + 1e-5) * scale + bias


def generator(p: dict[str, Any], noise: jax.Array) -> jax.Array:
    x = noise
    last = len(p["w"]) - 1
    for i, w in enumerate(p["w"]):
        x = conv_transpose(x, w, 1 if i == 0 else 2, 0 if i == 0 else 1)
        x = jnp.tanh(x) if i == last else jax.nn.relu(batch_norm(x, *p["bn"][i]))
    return x


def discriminator(p: dict[str, Any], images: jax.Array) -> jax.Array:
    x = images
    for i, w in enumerate(p["w"][:-1]):
        x = conv(x, w, 2, 1)
        if i > 0:
            x = batch_norm(x, *p["bn"][i - 1])
        x = jax.nn.leaky_relu(x, 0.2)
    return conv(x, p["w"][-1], 1, 0).reshape(-1)  # the logit, before the file's sigmoid


def bce(logits: jax.Array, label: float) -> jax.Array:
    """``BCELoss`` of ``sigmoid(logits)`` against ``label``, from the logits."""
    return jnp.mean(jax.nn.softplus(-logits) if label else jax.nn.softplus(logits))


def adam(params: Any, grads: Any, state: tuple[Any, Any, jax.Array]
         ) -> tuple[Any, tuple[Any, Any, jax.Array]]:
    m, v, t = state
    t = t + 1
    m = jax.tree.map(lambda m_, g: 0.5 * m_ + 0.5 * g, m, grads)
    v = jax.tree.map(lambda v_, g: 0.999 * v_ + 0.001 * g * g, v, grads)
    first, second = 1 - 0.5 ** t, 1 - 0.999 ** t
    new = jax.tree.map(lambda w, m_, v_: w - 2e-4 * (m_ / first) / (jnp.sqrt(v_ / second) + 1e-8),
                       params, m, v)
    return new, (m, v, t)


def setup(batch: int = 8, latent: int = 64, features: int = 32, colours: int = 3
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``train_step(g, d, g_state, d_state, real, noise) -> (g, d, g_state, d_state, d_loss,
    g_loss)`` for 32x32 NHWC images of ``colours``; ``features`` is the file's ngf and ndf."""
    keys = iter(jax.random.split(jax.random.key(12), 24))

    def normal(shape: tuple[int, ...], mean: float = 0.0) -> jax.Array:
        return mean + 0.02 * jax.random.normal(next(keys), shape, jnp.float32)

    widths = [latent, 4 * features, 2 * features, features, colours]
    g = {"w": [normal((4, 4, a, b)) for a, b in itertools.pairwise(widths)],
         "bn": [(normal((b,), 1.0), jnp.zeros(b)) for b in widths[1:-1]]}
    widths = [colours, features, 2 * features, 4 * features]
    d = {"w": [*(normal((4, 4, a, b)) for a, b in itertools.pairwise(widths)),
               normal((4, 4, widths[-1], 1))],
         "bn": [(normal((b,), 1.0), jnp.zeros(b)) for b in widths[2:]]}

    def zeros(tree: Any) -> tuple[Any, Any, jax.Array]:
        return (jax.tree.map(jnp.zeros_like, tree), jax.tree.map(jnp.zeros_like, tree),
                jnp.zeros((), jnp.float32))

    def train_step(g: Any, d: Any, g_state: Any, d_state: Any, real: jax.Array,
                   noise: jax.Array) -> tuple[Any, ...]:
        fake, pull_back = jax.vjp(lambda gp: generator(gp, noise), g)

        def d_loss(dp: Any) -> jax.Array:
            return bce(discriminator(dp, real), 1.0) \
                + bce(discriminator(dp, jax.lax.stop_gradient(fake)), 0.0)

        err_d, d_grads = jax.value_and_grad(d_loss)(d)
        d, d_state = adam(d, d_grads, d_state)
        err_g, fake_grad = jax.value_and_grad(
            lambda images: bce(discriminator(d, images), 1.0))(fake)
        (g_grads,) = pull_back(fake_grad)
        g, g_state = adam(g, g_grads, g_state)
        return g, d, g_state, d_state, err_d, err_g

    real = jnp.tanh(jax.random.normal(next(keys), (batch, 32, 32, colours), jnp.float32))
    noise = jax.random.normal(next(keys), (batch, 1, 1, latent), jnp.float32)
    return train_step, (g, d, zeros(g), zeros(d), real, noise)
