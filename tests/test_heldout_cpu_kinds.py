"""The held-out programs of the kinds a CPU runs below its streaming roofs (a decode step with a
key-value cache, an audio front end, an embedding-heavy training step, a plain MLP training
step): each compiles to the kernels of its kind and computes what a NumPy reference of the same
model computes, at small sizes. Each compiles and runs a whole program: marked slow."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from roofline_report.hlo.kernels import kernel_inventory

pytestmark = pytest.mark.slow


def _run(module: str, **dims: Any) -> tuple[Any, Any, list[dict[str, Any]]]:
    """The program's outputs and inputs as NumPy arrays and its kernel inventory (the inputs
    taken before the call: a program may donate them), run on jax's CPU device whatever the
    default backend: the kinds and tolerances here are XLA:CPU's (a TPU runs a float32 matmul
    at default precision in bfloat16, and its kernels are its own)."""
    import jax

    with jax.default_device(jax.devices("cpu")[0]):
        fn, args = importlib.import_module(f"benchmarks.heldout.{module}").setup(**dims)
        compiled = jax.jit(fn).lower(*args).compile()
        inputs = jax.tree.map(np.asarray, args)
        out = jax.tree.map(np.asarray, compiled(*args))
    return out, inputs, kernel_inventory(compiled.as_text())["kernels"]


def _close(got: Any, want: Any, tol: float = 2e-4) -> None:
    scale = max(1.0, float(np.max(np.abs(want))))
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


def _rms_norm(x: Any, scale: Any) -> Any:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * (1 + scale)


def _gelu(x: Any) -> Any:  # jax.nn.gelu's default, the tanh approximation
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_gemma_decode_step_matches_numpy_and_writes_its_cache_in_place_of_the_step() -> None:
    dims = {"batch": 2, "cache": 16, "heads": 2, "head_dim": 4, "width": 8, "hidden": 12,
            "layers": 2, "vocab": 20}
    (logits, caches), (params, old, token, index), kernels = _run("gemma_kv_decode", **dims)
    index = int(index)
    half = dims["head_dim"] // 2
    angle = index / 10_000.0 ** (2 * np.arange(half) / dims["head_dim"])

    def rope(v: Any) -> Any:
        first, second = v[..., :half], v[..., half:]
        return np.concatenate([first * np.cos(angle) - second * np.sin(angle),
                               second * np.cos(angle) + first * np.sin(angle)], axis=-1)

    table = params["embedding"].astype(np.float64)
    x = table[token] * np.sqrt(dims["width"])  # (batch, 1, width)
    for p, cache, new in zip(params["blocks"], old, caches, strict=True):
        h = _rms_norm(x, p["pre_attention_norm"])
        q, k, v = np.einsum("btd,sndh->sbtnh", h, p["qkv"])
        q, k = rope(q) * dims["head_dim"] ** -0.5, rope(k)
        keys, values = cache["k"].copy(), cache["v"].copy()
        keys[:, index], values[:, index] = k[:, 0], v[:, 0]
        _close(new["k"], keys)  # the step's key and value written at its index, the rest kept
        _close(new["v"], values)
        scores = np.einsum("btnh,bsnh->btns", q, keys[:, : index + 1])
        encoded = np.einsum("btns,bsnh->btnh", _softmax(scores), values[:, : index + 1])
        x = x + np.einsum("btnh,nhd->btd", encoded, p["attn_vec"])
        h = _rms_norm(x, p["pre_ffw_norm"])
        gate = np.einsum("btd,ndh->btnh", h, p["gating"])
        x = x + (_gelu(gate[..., 0, :]) * gate[..., 1, :]) @ p["linear"]
    _close(logits, _rms_norm(x, params["final_norm"]) @ table.T, 1e-3)
    found = {k["pattern"] for k in kernels}
    # a cache re-laid out by whole heads' features (its products are too small to be
    # matrix-vector products: the next test sizes them so)
    assert "block-transpose" in found


def test_gemma_decode_on_one_sequence_runs_its_projections_as_matrix_vector_products() -> None:
    _, _, kernels = _run("gemma_kv_decode", batch=1, cache=64, heads=2, head_dim=16, width=64,
                         hidden=128, layers=1, vocab=256)
    vectors = [k for k in kernels if k["pattern"] == "mat-vec"]
    assert vectors and all(k["pattern_row"] == 1 for k in vectors)
    # the attention against the cache and the output projection, at least
    assert len(vectors) >= 3


def test_whisper_log_mel_matches_numpy_framing_window_rfft_and_mel() -> None:
    from benchmarks.heldout import whisper_log_mel as whisper

    out, (audio, frames, window, filters), kernels = _run("whisper_log_mel", batch=2,
                                                           samples=1600, mels=16)
    pad = whisper.N_FFT // 2
    padded = np.pad(audio.astype(np.float64), ((0, 0), (pad, pad)), mode="reflect")
    count = 1 + 1600 // whisper.HOP_LENGTH
    framed = np.stack([padded[:, i * whisper.HOP_LENGTH: i * whisper.HOP_LENGTH
                              + whisper.N_FFT] for i in range(count)], axis=1)
    assert frames.shape == (count, whisper.N_FFT)
    spectrum = np.fft.rfft(framed * window, axis=-1)[:, :-1]
    mel = np.einsum("mf,btf->bmt", filters, np.abs(spectrum) ** 2)
    log_spec = np.log10(np.maximum(mel, 1e-10))
    log_spec = np.maximum(log_spec, log_spec.max(axis=(1, 2), keepdims=True) - 8.0)
    _close(out, (log_spec + 4.0) / 4.0, 1e-3)
    # the periodic Hann window and Slaney's unit-area triangles
    np.testing.assert_allclose(window, 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400),
                               atol=1e-6)
    assert filters.shape == (16, whisper.N_FFT // 2 + 1) and (filters >= 0).all()
    spacing = whisper.SAMPLE_RATE / whisper.N_FFT
    areas = filters.sum(axis=1) * spacing
    np.testing.assert_allclose(areas[2:-2], 1.0, rtol=0.1)
    [fft] = [k for k in kernels if k["pattern"] == "fft"]
    assert fft["pattern_row"] == whisper.N_FFT


def test_dlrm_step_matches_numpy_forward_and_updates_only_the_rows_it_looked_up() -> None:
    dims = {"batch": 4, "vocab": 50, "embed": 4, "bottom": 6, "top": 8}
    (params, loss), (old, dense, sparse, clicks, upper), kernels = _run("dlrm_small_step",
                                                                        **dims)
    table = old["embedding"].astype(np.float64)

    def mlp(layers: Any, x: Any, last_relu: bool) -> Any:
        for i, (w, b) in enumerate(layers):
            x = x @ w + b
            if last_relu or i < len(layers) - 1:
                x = np.maximum(x, 0)
        return x

    bottom = mlp(old["bottom"], dense, True)
    rows = table[sparse % dims["vocab"]]  # (batch, 26, embed)
    stacked = np.concatenate([bottom[:, None, :], rows], axis=1)
    products = stacked @ stacked.transpose(0, 2, 1)
    n = stacked.shape[1]
    assert len(upper[0]) == n * (n + 1) // 2
    top_in = np.concatenate([bottom, products[:, upper[0], upper[1]]], axis=1)
    logits = mlp(old["top"], top_in, False)[:, 0]
    want = np.mean(np.maximum(logits, 0) - logits * clicks + np.log1p(np.exp(-np.abs(logits))))
    assert float(loss) == pytest.approx(want, rel=1e-4)
    used = np.zeros(dims["vocab"], bool)
    used[np.unique(sparse % dims["vocab"])] = True
    np.testing.assert_array_equal(params["embedding"][~used], old["embedding"][~used])
    assert not np.allclose(params["embedding"][used], old["embedding"][used])
    scatters = [k for k in kernels if k["pattern"] == "scatter"]
    assert any(k["pattern_row"] == dims["embed"] for k in scatters)


def test_mnist_mlp_step_matches_numpy_backpropagation() -> None:
    from benchmarks.heldout import mnist_mlp_step as mnist

    dims = {"batch": 16, "inputs": 96, "hidden": 128, "layers": 2, "classes": 10}
    out, (params, images, targets), kernels = _run("mnist_mlp_step", **dims)
    acts = [images.astype(np.float64)]
    for w, b in params[:-1]:
        acts.append(np.tanh(acts[-1] @ w + b))
    logits = acts[-1] @ params[-1][0] + params[-1][1]
    # d loss / d logits of -mean(sum(log_softmax * targets)): (softmax * sum(t) - t) / batch
    delta = (_softmax(logits) * targets.sum(axis=1, keepdims=True) - targets) / dims["batch"]
    grads = []
    for i in range(len(params) - 1, -1, -1):
        w, _ = params[i]
        grads.append((acts[i].T @ delta, delta.sum(axis=0)))
        if i:
            delta = (delta @ w.T) * (1 - acts[i] ** 2)
    grads.reverse()
    for (w, b), (dw, db), (new_w, new_b) in zip(params, grads, out, strict=True):
        _close(new_w, w - mnist.STEP_SIZE * dw, 1e-5)
        _close(new_b, b - mnist.STEP_SIZE * db, 1e-5)
    found = [k["pattern"] for k in kernels]
    # the hidden layers' weight gradients, x.T @ dy; the classes' layer is narrow
    assert found.count("transposed-dot") >= 1 and "mat-vec" in found
