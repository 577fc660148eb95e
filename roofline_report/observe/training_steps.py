"""Sharded training steps for the catalog: data parallel, FSDP, tensor parallel (Megatron MLP),
and FSDP over layers scanned in a loop, each a whole step (forward, backward, Adam update).

The model is a two-layer MLP ``y = tanh(x @ w1) @ w2`` (``w1[D, F]``, ``w2[F, D]``) with a
squared-error loss averaged over the global batch ``B``; the scanned variant stacks ``L`` layers
``h = tanh(h @ w[l])`` with ``w[L, D, D]``. Each step is written per device with
``jax.shard_map`` over one mesh axis ``d`` of N devices, so its collectives are the ones a
practitioner writes or autodiff derives:

* ``dp-step``: parameters replicated, the batch split. The gradient of a replicated parameter
  is summed over the devices by the transpose of shard_map's implicit broadcast: one
  all-reduce per parameter, ``2 P (N-1)/N`` bytes sent per device for a parameter of P bytes.
* ``fsdp-step``: parameters, Adam moments and the batch split on their first dimension; each
  weight is all-gathered before use (``V (N-1)/N`` sent per device, V the full weight) and its
  gradient reduce-scattered (the transpose of the all-gather, the same bytes).
* ``tp-step``: Megatron MLP: ``w1`` split by columns, ``w2`` by rows, the batch replicated;
  one all-reduce of the output ``[B, D]`` in the forward pass (its transpose costs nothing,
  and ``x`` needs no gradient).
* ``fsdp-scan-step``: FSDP over ``L`` layers in a ``lax.scan``: one all-gather per layer in the
  forward loop and one reduce-scatter per layer in the backward loop, L times each.

:func:`expected_collectives` gives those collectives by hand, :func:`matmul_flops` the matmul
FLOPs per device, and :func:`reference_step` the same step in NumPy (float64) for the check.
Nothing here imports jax at module level; :func:`build_step` does.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline_report.hlo.collectives import collective_bytes

STEP_STRATEGIES: tuple[str, ...] = ("dp-step", "fsdp-step", "tp-step", "fsdp-scan-step")
STEP_NAMES: dict[str, str] = {
    "dp-step": "training step, data parallel",
    "fsdp-step": "training step, FSDP",
    "tp-step": "training step, tensor parallel (Megatron MLP)",
    "fsdp-scan-step": "training step, FSDP over scanned layers",
}
STEP_LABELS: dict[str, str] = {
    "dp-step": "data parallel: parameters replicated, batch split; gradients all-reduced",
    "fsdp-step": "FSDP: parameters and Adam moments split on their first dimension, weights "
    "all-gathered before use, gradients reduce-scattered",
    "tp-step": "tensor parallel (Megatron MLP): w1 split by columns, w2 by rows, batch "
    "replicated; the output all-reduced",
    "fsdp-scan-step": "FSDP over layers in a lax.scan: one all-gather per layer forward, one "
    "reduce-scatter per layer backward, inside the loops",
}
#: Whether a step's collective arrays grow with the batch (activations) or not (weights).
COMM_SCALES_WITH_BATCH: dict[str, bool] = {
    "dp-step": False, "fsdp-step": False, "tp-step": True, "fsdp-scan-step": False,
}  # fmt: skip

LEARNING_RATE = 1e-2
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
PREVIOUS_STEPS = 9  # Adam's step count before this step: moments are mid-training


@dataclass(frozen=True, slots=True)
class StepSizes:
    """Global batch, model width, hidden width and scanned layers."""

    batch: int
    d_model: int
    d_ff: int
    layers: int

    def to_json(self) -> dict[str, int]:
        return {"batch": self.batch, "d_model": self.d_model, "d_ff": self.d_ff,
                "layers": self.layers}


QUICK_STEP_SIZES = StepSizes(batch=64, d_model=128, d_ff=512, layers=4)
FULL_STEP_SIZES = StepSizes(batch=256, d_model=256, d_ff=1024, layers=4)


def step_sizes(quick: bool) -> StepSizes:
    return QUICK_STEP_SIZES if quick else FULL_STEP_SIZES


def _collective(op: str, result_bytes: int, group: int, count: int = 1) -> dict[str, Any]:
    return {"op": op, "result_bytes": result_bytes, "group_size": group, "count": count,
            "bytes_per_device": collective_bytes(op, result_bytes, group)}


def expected_collectives(strategy: str, sizes: StepSizes, devices: int, itemsize: int = 4
                         ) -> list[dict[str, Any]]:
    """The collectives of one step derived by hand (module docstring), each ``{"op",
    "result_bytes", "group_size", "count", "bytes_per_device"}`` (bytes per execution)."""
    b, d, f, n, s = sizes.batch, sizes.d_model, sizes.d_ff, devices, itemsize
    if strategy == "dp-step":
        return [_collective("all-reduce", s * d * f, n), _collective("all-reduce", s * f * d, n)]
    if strategy == "fsdp-step":
        return [
            _collective("all-gather", s * d * f, n), _collective("all-gather", s * f * d, n),
            _collective("reduce-scatter", s * d * f // n, n),
            _collective("reduce-scatter", s * f * d // n, n),
        ]  # fmt: skip
    if strategy == "tp-step":
        return [_collective("all-reduce", s * b * d, n)]
    if strategy == "fsdp-scan-step":
        layers = sizes.layers
        return [_collective("all-gather", s * d * d, n, layers),
                _collective("reduce-scatter", s * d * d // n, n, layers)]
    raise ValueError(f"unknown training step {strategy!r}")


def matmul_flops(strategy: str, sizes: StepSizes, devices: int) -> int:
    """Matmul FLOPs per device of one step: the forward matmuls, and in the backward pass the
    weight gradients and the activation gradients that a weight needs (``x`` needs none).

    MLP: 2 forward + 3 backward matmuls of ``2 b D F`` each, b the rows a device works on
    (``B/N`` split batch; ``B`` with ``F/N`` columns for tensor parallel): ``10 b D F``.
    Scanned: per layer 3 of ``2 b D D`` (the first layer's input gradient is not needed,
    counted anyway as XLA computes it inside the loop): ``6 L b D D``.
    """
    b, d, f, n = sizes.batch, sizes.d_model, sizes.d_ff, devices
    if strategy in ("dp-step", "fsdp-step"):
        return 10 * (b // n) * d * f
    if strategy == "tp-step":
        return 10 * b * d * (f // n)
    if strategy == "fsdp-scan-step":
        return 6 * sizes.layers * (b // n) * d * d
    raise ValueError(f"unknown training step {strategy!r}")


def split_dimensions(args: tuple[Any, ...], in_specs: tuple[Any, ...], axis: str = "d"
                     ) -> list[dict[str, Any]]:
    """The dimensions a step splits over the mesh axis ``axis``: per parameter (``"data":
    False``; the Adam moments follow their parameters) and per data argument ``x``, ``y``
    (``"data": True``), ``{"argument", "dim", "size", "data"}`` with the global size. A
    projection to more devices needs each parameter dimension to split that many ways."""
    params, _, x, y = args
    named = [(name, params[name], in_specs[0][name], False) for name in sorted(params)]
    named += [("x", x, in_specs[2], True), ("y", y, in_specs[3], True)]
    out = []
    for name, value, spec, data in named:
        for dim, entry in enumerate(tuple(spec)):
            axes = entry if isinstance(entry, tuple) else (entry,)
            if axis in axes:
                out.append({"argument": name, "dim": dim, "size": int(np.shape(value)[dim]),
                            "data": data})
    return out


# --------------------------------------------------------------------------------------------
# Inputs and the NumPy reference
# --------------------------------------------------------------------------------------------


def initial_state(strategy: str, sizes: StepSizes, seed: int = 0) -> tuple[Any, ...]:
    """(params, adam state, x, y) as float32 NumPy pytrees; the moments are those of a run
    mid-training (``v`` positive), so the update is well conditioned."""
    rng = np.random.default_rng(seed)
    b, d, f = sizes.batch, sizes.d_model, sizes.d_ff

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray[Any, Any]:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    if strategy == "fsdp-scan-step":
        params: dict[str, Any] = {"w": normal(sizes.layers, d, d, scale=d**-0.5)}
    else:
        params = {"w1": normal(d, f, scale=d**-0.5), "w2": normal(f, d, scale=f**-0.5)}
    m = {k: normal(*v.shape, scale=1e-3) for k, v in params.items()}
    v = {k: (np.abs(normal(*p.shape, scale=1e-3)) + 1e-4).astype(np.float32)
         for k, p in params.items()}
    state = {"t": np.asarray(PREVIOUS_STEPS, dtype=np.int32), "m": m, "v": v}
    return params, state, normal(b, d), normal(b, d)


def _adam_np(params: dict[str, Any], grads: dict[str, Any], state: dict[str, Any]
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    t = int(state["t"]) + 1
    m = {k: BETA1 * state["m"][k] + (1 - BETA1) * g for k, g in grads.items()}
    v = {k: BETA2 * state["v"][k] + (1 - BETA2) * g * g for k, g in grads.items()}
    c1, c2 = 1 - BETA1**t, 1 - BETA2**t
    new = {k: p - LEARNING_RATE * (m[k] / c1) / (np.sqrt(v[k] / c2) + EPS)
           for k, p in params.items()}
    return new, {"t": np.asarray(t, dtype=np.int32), "m": m, "v": v}


def reference_step(params: dict[str, Any], state: dict[str, Any], x: Any, y: Any
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The step in NumPy float64, gradients by hand (the same for every sharding)."""
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    st = {"t": state["t"], "m": {k: np.asarray(v, np.float64) for k, v in state["m"].items()},
          "v": {k: np.asarray(v, np.float64) for k, v in state["v"].items()}}
    x64, y64 = np.asarray(x, np.float64), np.asarray(y, np.float64)
    batch = x64.shape[0]
    if "w" in p:
        hs = [x64]
        for w in p["w"]:
            hs.append(np.tanh(hs[-1] @ w))
        delta = 2 * (hs[-1] - y64) / batch
        grads_w = np.zeros_like(p["w"])
        for layer in reversed(range(p["w"].shape[0])):
            dz = delta * (1 - hs[layer + 1] ** 2)
            grads_w[layer] = hs[layer].T @ dz
            delta = dz @ p["w"][layer].T
        grads = {"w": grads_w}
    else:
        h = np.tanh(x64 @ p["w1"])
        delta = 2 * (h @ p["w2"] - y64) / batch
        dh = delta @ p["w2"].T
        grads = {"w1": x64.T @ (dh * (1 - h**2)), "w2": h.T @ delta}
    return _adam_np(p, grads, st)


# --------------------------------------------------------------------------------------------
# The steps in jax (imported here, in the child process)
# --------------------------------------------------------------------------------------------


def _adam(jax: Any, params: Any, grads: Any, state: Any) -> tuple[Any, Any]:
    jnp = jax.numpy
    t = state["t"] + 1
    m = jax.tree.map(lambda m, g: BETA1 * m + (1 - BETA1) * g, state["m"], grads)
    v = jax.tree.map(lambda v, g: BETA2 * v + (1 - BETA2) * g * g, state["v"], grads)
    c1 = 1 - BETA1 ** t.astype(jnp.float32)
    c2 = 1 - BETA2 ** t.astype(jnp.float32)
    new = jax.tree.map(lambda p, m, v: p - LEARNING_RATE * (m / c1) / (jnp.sqrt(v / c2) + EPS),
                       params, m, v)
    return new, {"t": t, "m": m, "v": v}


def build_step(strategy: str, mesh: Any, sizes: StepSizes, axis: str = "d"
               ) -> tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...], Any]:
    """(the shard_map'ed step, its per-device body, in_specs, out_specs) for ``strategy``.

    The step takes ``(params, state, x, y)`` and returns ``(params, state)``."""
    jax: Any = importlib.import_module("jax")
    jnp = jax.numpy
    pspec = jax.sharding.PartitionSpec
    hi = jax.lax.Precision.HIGHEST
    batch = sizes.batch

    def mlp_loss(p: Any, x: Any, y: Any) -> Any:
        h = jnp.tanh(jnp.matmul(x, p["w1"], precision=hi))
        return jnp.sum((jnp.matmul(h, p["w2"], precision=hi) - y) ** 2) / batch

    def gathered(p: Any) -> Any:
        return jax.tree.map(lambda w: jax.lax.all_gather(w, axis, tiled=True), p)

    if strategy == "dp-step":
        param_spec: Any = {"w1": pspec(), "w2": pspec()}
        data_spec = pspec(axis)

        def body(p: Any, s: Any, x: Any, y: Any) -> Any:
            return _adam(jax, p, jax.grad(mlp_loss)(p, x, y), s)
    elif strategy == "fsdp-step":
        param_spec = {"w1": pspec(axis), "w2": pspec(axis)}
        data_spec = pspec(axis)

        def body(p: Any, s: Any, x: Any, y: Any) -> Any:
            grads = jax.grad(lambda q: mlp_loss(gathered(q), x, y))(p)
            return _adam(jax, p, grads, s)
    elif strategy == "tp-step":
        param_spec = {"w1": pspec(None, axis), "w2": pspec(axis)}
        data_spec = pspec()

        def tp_loss(p: Any, x: Any, y: Any) -> Any:
            h = jnp.tanh(jnp.matmul(x, p["w1"], precision=hi))
            out = jax.lax.psum(jnp.matmul(h, p["w2"], precision=hi), axis)
            return jnp.sum((out - y) ** 2) / batch

        def body(p: Any, s: Any, x: Any, y: Any) -> Any:
            return _adam(jax, p, jax.grad(tp_loss)(p, x, y), s)
    elif strategy == "fsdp-scan-step":
        param_spec = {"w": pspec(None, axis)}
        data_spec = pspec(axis)

        def scan_loss(p: Any, x: Any, y: Any) -> Any:
            def layer(h: Any, w: Any) -> tuple[Any, None]:
                full = jax.lax.all_gather(w, axis, tiled=True)
                return jnp.tanh(jnp.matmul(h, full, precision=hi)), None

            out, _ = jax.lax.scan(layer, x, p["w"])
            return jnp.sum((out - y) ** 2) / batch

        def body(p: Any, s: Any, x: Any, y: Any) -> Any:
            return _adam(jax, p, jax.grad(scan_loss)(p, x, y), s)
    else:
        raise ValueError(f"unknown training step {strategy!r}")
    state_spec = {"t": pspec(), "m": param_spec, "v": param_spec}
    in_specs = (param_spec, state_spec, data_spec, data_spec)
    out_specs = (param_spec, state_spec)
    step = jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
    return step, body, in_specs, out_specs
