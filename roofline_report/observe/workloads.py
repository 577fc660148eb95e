"""Workloads: a JAX function, deterministic inputs, a NumPy reference and an analytic model.

The analytic model of a workload is its exact work (flops, transcendentals) and its minimum
traffic (every argument read once, every result written once), counted from shapes and dtypes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from roofline_report import tolerances
from roofline_report.observe import host_arrays

if TYPE_CHECKING:
    from roofline_report.observe.program import Program

Dims = Mapping[str, int]
Analytic = dict[str, int]

class NoAnalyticModel(Exception):
    """Raised by a workload's ``analytic`` when it has no hand-written model (a user's
    function): the report says so instead of copying a count of the program."""


def no_analytic_model(_d: Dims, _itemsize: int) -> Analytic:
    raise NoAnalyticModel("no analytic model")


#: A tolerance left out: the workload's dtype gives it (see roofline_report.tolerances).
FROM_DTYPE = math.nan


@dataclass(frozen=True)
class Workload:
    """One computation the report lowers, checks, accounts and times.

    ``build`` returns NumPy float64 inputs for the given dims (deterministic); the inputs are cast
    to ``dtype`` for JAX, and the reference sees the same rounded values in float64.

    ``rtol``/``atol`` are the check's tolerances; left out, they are ``dtype``'s defaults
    (:mod:`roofline_report.tolerances`).
    """

    name: str
    title: str
    fn: Callable[..., Any]
    build: Callable[[Dims], tuple[np.ndarray[Any, Any], ...]]
    reference: Callable[..., np.ndarray[Any, Any]] | None
    analytic: Callable[[Dims, int], Analytic]
    dims: Mapping[str, int]
    dtype: str = "float32"
    required_ops: tuple[str, ...] = ()
    description: str = ""
    rtol: float = FROM_DTYPE
    atol: float = FROM_DTYPE
    sweep: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    user: bool = False
    arg_dtypes: tuple[str, ...] | None = None  # per-argument dtypes when they differ
    program: Program | None = None  # a user's program at its own (pytree) arguments
    # The dims and sweep on an accelerator (:meth:`on_backend`): at the CPU's sizes a call
    # takes microseconds on a GPU or TPU and measures nothing but dispatch.
    accelerator_dims: Mapping[str, int] = field(default_factory=dict)
    accelerator_sweep: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        default = tolerances.for_dtype(self.dtype)
        for key in ("rtol", "atol"):
            value = getattr(self, key)
            if math.isnan(value):
                object.__setattr__(self, key, getattr(default, key))
            elif tolerances.problem(value) is not None:
                raise ValueError(f"workload {self.name}: {key} {tolerances.problem(value)}")

    @property
    def itemsize(self) -> int:
        return int(jnp.dtype(self.dtype).itemsize)

    def with_dims(self, dims: Mapping[str, int], *, dtype: str | None = None) -> Workload:
        """The same workload at other dims (and dtype). Tolerances that were the old dtype's
        defaults become the new dtype's; tolerances set explicitly are kept."""
        merged = {**self.dims, **dims}
        default = tolerances.for_dtype(self.dtype)
        rtol = FROM_DTYPE if dtype and self.rtol == default.rtol else self.rtol
        atol = FROM_DTYPE if dtype and self.atol == default.atol else self.atol
        return Workload(
            self.name, self.title, self.fn, self.build, self.reference, self.analytic, merged,
            dtype or self.dtype, self.required_ops, self.description, rtol, atol,
            self.sweep, self.user, self.arg_dtypes, self.program,
        )

    def on_backend(self, backend: str) -> Workload:
        """The workload at its sizes for ``backend`` (a jax platform name): its accelerator
        dims and sweep on a GPU or TPU where it has them, itself otherwise."""
        from roofline_report.backends import describe

        if not describe(backend).accelerator or not self.accelerator_dims:
            return self
        return replace(self, dims={**self.dims, **self.accelerator_dims},
                       sweep=dict(self.accelerator_sweep) if self.sweep else {})

    def inputs(self) -> tuple[tuple[Any, ...], tuple[np.ndarray[Any, Any], ...]]:
        """(JAX arguments in ``dtype``, the same values as float64 (complex128 for complex
        arguments) NumPy arrays)."""
        host = self.build(self.dims)
        dtypes = self.arg_dtypes or (self.dtype,) * len(host)
        # Cast on the host (ml_dtypes gives NumPy bfloat16), then transfer: casting with jnp
        # would compile a conversion kernel for every shape.
        # An accelerator's large arrays in blocks on every core (host_arrays).
        cast = tuple(host_arrays.astype(x, jnp.dtype(t)) for x, t in zip(host, dtypes, strict=True))
        device = tuple(jax.device_put(x) for x in cast)
        rounded = tuple(host_arrays.astype(x, np.complex128 if np.iscomplexobj(x) else np.float64)
                        for x in cast)
        return device, rounded

    def model(self) -> Analytic:
        return self.analytic(self.dims, self.itemsize)


# --- the seed: tanh(a @ b) -------------------------------------------------------------------

def seed_fn(a: Any, b: Any) -> Any:
    return jnp.tanh(a @ b)


def _seed_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    m, k, n = d["m"], d["k"], d["n"]
    # The seed's inputs, generalised: arange / (m*k) and arange / (k*n) reproduce /512 and /128.
    a = np.arange(m * k, dtype=np.float64).reshape(m, k) / (m * k)
    b = np.arange(k * n, dtype=np.float64).reshape(k, n) / (k * n)
    return a, b


def _seed_reference(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.asarray(np.tanh(a @ b))


def matmul_analytic(d: Dims, s: int) -> Analytic:
    m, k, n = d["m"], d["k"], d["n"]
    return {"flops": 2 * m * k * n, "transcendentals": 0,
            "minimum_bytes": s * (m * k + k * n + m * n)}


def _seed_analytic(d: Dims, s: int) -> Analytic:
    out = matmul_analytic(d, s)
    out["transcendentals"] = d["m"] * d["n"]  # tanh, counted apart as XLA does
    return out


SEED = Workload(
    name="seed_tanh_matmul",
    title="tanh(a @ b)",
    fn=seed_fn,
    build=_seed_build,
    reference=_seed_reference,
    analytic=_seed_analytic,
    dims={"m": 32, "k": 16, "n": 8},
    required_ops=("stablehlo.dot_general", "stablehlo.tanh"),
    description="The seed workload: a f32[32,16] @ b f32[16,8], then tanh.",
)


def catalog(backend: str = "cpu") -> list[Workload]:
    """The built-in workloads at their sizes for ``backend``: the seed first, then each catalog
    workload in float32 and in bfloat16 (the bfloat16 variants are checked at bfloat16's
    precision and not swept). On a GPU or TPU the catalog runs at sizes where a call takes a
    millisecond or more on a TPU v5e (the seed stays the seed's)."""
    return [w.on_backend(backend) for w in (SEED, *_CATALOG, *(_bf16(w) for w in _CATALOG))]


def _bf16(w: Workload) -> Workload:
    # bfloat16 keeps 8 significant bits: checked at its default tolerances, whatever the float32
    # workload set.
    return replace(w, name=f"{w.name}_bf16", title=f"{w.title} [bf16]", dtype="bfloat16",
                   rtol=FROM_DTYPE, atol=FROM_DTYPE, sweep={}, accelerator_sweep={})


def by_name(name: str) -> Workload:
    for w in catalog():
        if w.name == name:
            return w
    raise KeyError(name)


# --- the catalog ---------------------------------------------------------------------------

def _rand(seed: int, *shape: int) -> np.ndarray[Any, Any]:
    return host_arrays.standard_normal(seed, shape)


def _matmul_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    return _rand(1, d["m"], d["k"]) / math.sqrt(d["k"]), _rand(2, d["k"], d["n"])


def _matmul(a: Any, b: Any) -> Any:
    return a @ b


def _bmm(a: Any, b: Any) -> Any:
    return jnp.einsum("bij,bjk->bik", a, b)


def _bmm_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    return (_rand(3, d["b"], d["m"], d["k"]) / math.sqrt(d["k"]), _rand(4, d["b"], d["k"], d["n"]))


def _bmm_ref(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    # np.matmul, not np.einsum: einsum's own loop (no BLAS) took about a minute of a TPU
    # host's build for the accelerator's 128 products of 1024 x 1024 x 1024; matmul's batched
    # BLAS calls compute the same sums.
    return np.matmul(a, b)  # type: ignore[no-any-return]


def _bmm_analytic(d: Dims, s: int) -> Analytic:
    b, m, k, n = d["b"], d["m"], d["k"], d["n"]
    return {"flops": 2 * b * m * k * n, "transcendentals": 0,
            "minimum_bytes": s * b * (m * k + k * n + m * n)}


def _scale(x: Any) -> Any:
    return x * 2.0


def _vec_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    return (_rand(5, d["n"]),)


@host_arrays.by_rows
def _scale_ref(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return 2.0 * x


def _scale_analytic(d: Dims, s: int) -> Analytic:
    return {"flops": d["n"], "transcendentals": 0, "minimum_bytes": 2 * s * d["n"]}


def _axpy(x: Any, y: Any) -> Any:
    return 3.0 * x + y


def _axpy_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    return _rand(6, d["n"]), _rand(7, d["n"])


@host_arrays.by_rows
def _axpy_ref(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return 3.0 * x + y  # type: ignore[no-any-return]


def _axpy_analytic(d: Dims, s: int) -> Analytic:
    return {"flops": 2 * d["n"], "transcendentals": 0, "minimum_bytes": 3 * s * d["n"]}


def _sum(x: Any) -> Any:
    return jnp.sum(x, axis=-1)


def _rows_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    return (_rand(8, d["m"], d["n"]),)


@host_arrays.by_rows
def _sum_ref(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return x.sum(axis=-1)  # type: ignore[no-any-return]


def _sum_analytic(d: Dims, s: int) -> Analytic:
    m, n = d["m"], d["n"]
    return {"flops": m * (n - 1), "transcendentals": 0, "minimum_bytes": s * (m * n + m)}


def _softmax(x: Any) -> Any:
    return jax.nn.softmax(x, axis=-1)


@host_arrays.by_rows
def _softmax_ref(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def _softmax_analytic(d: Dims, s: int) -> Analytic:
    m, n = d["m"], d["n"]
    # max (n-1), subtract (n), sum (n-1), divide (n) per row; exp counted apart.
    return {"flops": m * (4 * n - 2), "transcendentals": m * n, "minimum_bytes": 2 * s * m * n}


def _layernorm(x: Any) -> Any:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5)


@host_arrays.by_rows
def _layernorm_ref(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)  # type: ignore[no-any-return]


def _layernorm_analytic(d: Dims, s: int) -> Analytic:
    m, n = d["m"], d["n"]
    # mean: n adds + 1 divide; centre: n; square: n; var: n adds + 1 divide; +eps: 1;
    # subtract again: n; scale: n  -> 6n + 3 per row; rsqrt counted apart (one per row).
    return {"flops": m * (6 * n + 3), "transcendentals": m, "minimum_bytes": 2 * s * m * n}


def _attention(q: Any, k: Any, v: Any) -> Any:
    scores = q @ k.T / math.sqrt(q.shape[-1])
    return jax.nn.softmax(scores, axis=-1) @ v


def _attention_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    s_, h = d["s"], d["h"]
    return _rand(9, s_, h), _rand(10, s_, h), _rand(11, s_, h)


def _attention_ref(q: np.ndarray[Any, Any], k: np.ndarray[Any, Any],
                   v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return _softmax_ref(q @ k.T / math.sqrt(q.shape[-1])) @ v  # type: ignore[no-any-return]


def _attention_analytic(d: Dims, s: int) -> Analytic:
    n, h = d["s"], d["h"]
    matmuls = 2 * (2 * n * n * h)
    scale = n * n
    softmax = n * (4 * n - 2)
    return {"flops": matmuls + scale + softmax, "transcendentals": n * n,
            "minimum_bytes": s * 4 * n * h}


def _conv(x: Any, w: Any) -> Any:
    return jax.lax.conv_general_dilated(
        x, w, window_strides=(1, 1), padding="VALID",
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )


def _conv_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    return (_rand(12, d["b"], d["h"], d["h"], d["c"]),
            _rand(13, d["r"], d["r"], d["c"], d["f"]) / math.sqrt(d["r"] * d["r"] * d["c"]))


def _conv_taps(x: np.ndarray[Any, Any], w: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    # A sum over the window's taps of [b, oh, ow, c] @ [c, f] products: matrix products (no
    # copy of every window, no loop over outputs), fast at an accelerator's sizes too.
    r = w.shape[0]
    oh, ow = x.shape[1] - r + 1, x.shape[2] - r + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(r):
        for j in range(w.shape[1]):
            out += x[:, i:i + oh, j:j + ow, :] @ w[i, j]
    return out


# Each image apart, a large batch's images in blocks at once (host_arrays).
_conv_ref = host_arrays.by_rows(_conv_taps, split=1)


def _conv_analytic(d: Dims, s: int) -> Analytic:
    b, h, c, r, f = d["b"], d["h"], d["c"], d["r"], d["f"]
    oh = h - r + 1
    return {"flops": 2 * b * oh * oh * f * r * r * c, "transcendentals": 0,
            "minimum_bytes": s * (b * h * h * c + r * r * c * f + b * oh * oh * f)}


SCAN_STEPS = 10


def _scan(c: Any, x: Any) -> Any:
    def step(carry: Any, _: Any) -> tuple[Any, None]:
        return jnp.tanh(carry @ x), None

    return jax.lax.scan(step, c, None, length=SCAN_STEPS)[0]


def _scan_build(d: Dims) -> tuple[np.ndarray[Any, Any], ...]:
    n = d["n"]
    return _rand(14, n, n), _rand(15, n, n) / math.sqrt(n)


def _scan_ref(c: np.ndarray[Any, Any], x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    for _ in range(SCAN_STEPS):
        c = np.tanh(c @ x)
    return c


def _scan_analytic(d: Dims, s: int) -> Analytic:
    n = d["n"]
    # Every step is a full matmul and tanh; the carry stays on chip at best, so the minimum
    # traffic is the two arguments read once and the result written once.
    return {"flops": SCAN_STEPS * 2 * n**3, "transcendentals": SCAN_STEPS * n * n,
            "minimum_bytes": 3 * s * n * n}


_CATALOG: list[Workload] = [
    Workload("matmul", "a @ b", _matmul, _matmul_build, np.matmul, matmul_analytic,
             {"m": 256, "k": 256, "n": 256}, required_ops=("stablehlo.dot_general",),
             description="A plain matrix product.", rtol=1e-4, atol=1e-4,
             sweep={"m": (16, 64, 256, 1024), "k": (16, 64, 256, 1024), "n": (16, 64, 256, 1024)},
             accelerator_dims={"m": 8192, "k": 4096, "n": 4096},
             accelerator_sweep={"m": (256, 1024, 2048, 4096), "k": (256, 1024, 2048, 4096),
                                "n": (256, 1024, 2048, 4096)}),
    Workload("batched_matmul", "einsum('bij,bjk->bik')", _bmm, _bmm_build,
             _bmm_ref, _bmm_analytic,
             {"b": 8, "m": 128, "k": 128, "n": 128}, required_ops=("stablehlo.dot_general",),
             description="A batch of matrix products.", rtol=1e-4, atol=1e-4,
             sweep={"m": (16, 64, 128, 256), "k": (16, 64, 128, 256), "n": (16, 64, 128, 256)},
             accelerator_dims={"b": 128, "m": 1024, "k": 1024, "n": 1024},
             accelerator_sweep={"m": (128, 256, 512, 1024), "k": (128, 256, 512, 1024),
                                "n": (128, 256, 512, 1024)}),
    Workload("scale", "2 x", _scale, _vec_build, _scale_ref, _scale_analytic,
             {"n": 1 << 20}, required_ops=("stablehlo.multiply",),
             description="Elementwise scale: one flop per element, read once, written once.",
             sweep={"n": (1 << 10, 1 << 14, 1 << 18, 1 << 22)},
             accelerator_dims={"n": 1 << 27},
             accelerator_sweep={"n": (1 << 16, 1 << 20, 1 << 24, 1 << 28)}),
    Workload("axpy", "3 x + y", _axpy, _axpy_build, _axpy_ref, _axpy_analytic,
             {"n": 1 << 20}, required_ops=("stablehlo.multiply", "stablehlo.add"),
             description="a·x + y: two flops per element, two reads and one write.",
             sweep={"n": (1 << 10, 1 << 14, 1 << 18, 1 << 22)},
             accelerator_dims={"n": 1 << 27},
             accelerator_sweep={"n": (1 << 16, 1 << 20, 1 << 24, 1 << 28)}),
    Workload("row_sum", "sum(x, axis=-1)", _sum, _rows_build, _sum_ref,
             _sum_analytic, {"m": 1024, "n": 1024}, required_ops=("stablehlo.reduce",),
             description="A reduction over rows.", rtol=1e-4, atol=1e-3,
             sweep={"m": (32, 256, 1024, 4096)},
             accelerator_dims={"m": 16384, "n": 16384},
             accelerator_sweep={"m": (256, 2048, 8192, 16384)}),
    Workload("softmax", "softmax(x, axis=-1)", _softmax, _rows_build, _softmax_ref,
             _softmax_analytic, {"m": 1024, "n": 1024},
             required_ops=("stablehlo.exponential", "stablehlo.reduce"),
             description="Row softmax: max, subtract, exp, sum, divide.", rtol=1e-4, atol=1e-6,
             sweep={"m": (32, 256, 1024, 4096)},
             accelerator_dims={"m": 16384, "n": 16384},
             accelerator_sweep={"m": (256, 2048, 8192, 16384)}),
    Workload("layer_norm", "layer_norm(x)", _layernorm, _rows_build, _layernorm_ref,
             _layernorm_analytic, {"m": 1024, "n": 1024},
             required_ops=("stablehlo.rsqrt", "stablehlo.reduce"),
             description="Layer normalisation without affine parameters.", rtol=1e-4, atol=1e-4,
             sweep={"m": (32, 256, 1024, 4096)},
             accelerator_dims={"m": 16384, "n": 16384},
             accelerator_sweep={"m": (256, 2048, 8192, 16384)}),
    Workload("attention", "softmax(q kᵀ / √h) v", _attention, _attention_build, _attention_ref,
             _attention_analytic, {"s": 256, "h": 64},
             required_ops=("stablehlo.dot_general", "stablehlo.exponential"),
             description="Single-head attention without masking.", rtol=1e-4, atol=1e-4,
             sweep={"s": (32, 128, 512, 1024)},
             accelerator_dims={"s": 8192, "h": 128},
             accelerator_sweep={"s": (1024, 2048, 4096, 8192)}),
    Workload("scan", f"lax.scan of tanh(c @ x), {SCAN_STEPS} steps", _scan, _scan_build,
             _scan_ref, _scan_analytic, {"n": 256},
             required_ops=("stablehlo.while", "stablehlo.dot_general", "stablehlo.tanh"),
             description="A loop: XLA's cost analysis counts its body once.", rtol=1e-4,
             atol=1e-4, accelerator_dims={"n": 3072}),
    Workload("conv2d", "conv2d(x, w) NHWC", _conv, _conv_build, _conv_ref, _conv_analytic,
             {"b": 4, "h": 32, "c": 32, "r": 3, "f": 32},
             required_ops=("stablehlo.convolution",),
             description="A 3×3 valid convolution, NHWC / HWIO.", rtol=1e-4, atol=1e-4,
             sweep={"h": (8, 16, 32, 64)},
             accelerator_dims={"b": 32, "h": 128, "c": 128, "f": 128},
             accelerator_sweep={"h": (32, 64, 128, 192)}),
]
