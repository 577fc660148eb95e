"""Whisper's audio front end: a batch of waveforms to log-Mel spectrograms (plain jax).

Reimplemented (no code copied) from openai/whisper, ``whisper/audio.py``
(``log_mel_spectrogram``, ``mel_filters``) at commit 06dc24a5ad0895bc28a6e5f39f776045b3705784:
the waveform (16 kHz) padded by reflection at both ends as ``torch.stft`` centres its frames,
cut into frames of ``N_FFT`` = 400 samples every ``HOP_LENGTH`` = 160 (here by gathering each
frame's samples, the indices made once outside the program), each frame multiplied by a
periodic Hann window, its real FFT of length 400 (201 bins), the squared magnitudes with the
last frame dropped, the Mel filter bank (80 filters, the Slaney-style triangles of
``librosa.filters.mel`` that the file's ``mel_filters.npz`` holds, made here in numpy) applied
as a matrix product, then ``log10`` of the energies clamped at 1e-10, floored at the
spectrogram's maximum less 8 and mapped by ``(x + 4) / 4``. Whisper pads or trims every input
to 30 s; here each clip is ``samples`` long.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

SAMPLE_RATE = 16_000
N_FFT = 400
HOP_LENGTH = 160


def hertz_to_mel(f: np.ndarray | float) -> np.ndarray:
    """The Slaney Mel scale: linear below 1 kHz, logarithmic above."""
    f = np.asarray(f, dtype=np.float64)
    linear = 3.0 * f / 200.0
    log = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(f >= 1000.0, log, linear)


def mel_to_hertz(m: np.ndarray | float) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    linear = 200.0 * m / 3.0
    log = 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0))
    return np.where(m >= 15.0, log, linear)


def mel_filters(n_mels: int, n_fft: int = N_FFT, rate: int = SAMPLE_RATE) -> np.ndarray:
    """``[n_mels, n_fft // 2 + 1]`` triangles between Mel-spaced edges from 0 Hz to the
    Nyquist frequency, each scaled to unit area (Slaney's normalisation)."""
    bins = np.linspace(0.0, rate / 2, n_fft // 2 + 1)
    edges = mel_to_hertz(np.linspace(hertz_to_mel(0.0), hertz_to_mel(rate / 2), n_mels + 2))
    lower = (bins[None, :] - edges[:-2, None]) / (edges[1:-1] - edges[:-2])[:, None]
    upper = (edges[2:, None] - bins[None, :]) / (edges[2:] - edges[1:-1])[:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return np.asarray(weights, dtype=np.float32)


def frame_indices(samples: int) -> np.ndarray:
    """``[frames, N_FFT]`` sample indices of each centred frame of the padded waveform."""
    frames = 1 + samples // HOP_LENGTH  # torch.stft's count with center=True
    return (np.arange(frames)[:, None] * HOP_LENGTH + np.arange(N_FFT)[None, :]).astype(
        np.int32)


def hann_window(length: int = N_FFT) -> np.ndarray:
    """The periodic Hann window (``torch.hann_window``'s default)."""
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)).astype(np.float32)


def log_mel_spectrogram(audio: jax.Array, frames: jax.Array, window: jax.Array,
                        filters: jax.Array) -> jax.Array:
    """``audio`` (batch, samples) -> (batch, n_mels, frames - 1)."""
    pad = N_FFT // 2
    padded = jnp.pad(audio, ((0, 0), (pad, pad)), mode="reflect")
    framed = padded[:, frames] * window  # (batch, frames, N_FFT)
    spectrum = jnp.fft.rfft(framed, n=N_FFT, axis=-1)[:, :-1, :]
    magnitudes = jnp.square(jnp.abs(spectrum))  # (batch, frames - 1, bins)
    mel = jnp.einsum("mf,btf->bmt", filters, magnitudes)
    log_spec = jnp.log10(jnp.maximum(mel, 1e-10))
    log_spec = jnp.maximum(log_spec, jnp.max(log_spec, axis=(1, 2), keepdims=True) - 8.0)
    return (log_spec + 4.0) / 4.0


def setup(batch: int = 8, samples: int = 160_000, mels: int = 80
          ) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``spectrogram(audio, frames, window, filters)`` of ``batch`` clips of ``samples``."""
    t = np.arange(samples, dtype=np.float32) / SAMPLE_RATE
    rng = np.random.default_rng(5)
    tones = rng.uniform(100.0, 4000.0, (batch, 1)).astype(np.float32)
    audio = (0.5 * np.sin(2 * np.pi * tones * t[None, :])
             + 0.05 * rng.standard_normal((batch, samples))).astype(np.float32)
    return log_mel_spectrogram, (jnp.asarray(audio), jnp.asarray(frame_indices(samples)),
                                 jnp.asarray(hann_window()), jnp.asarray(mel_filters(mels)))
