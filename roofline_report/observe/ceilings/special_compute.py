"""Compute roofs of the products and convolutions that run far from the float matmul roof:
integer matrix products per integer type and grouped (depthwise) convolutions, by size (imports
jax when run).

* ``matmul int8`` (and ``int4``): ``lax.dot`` of two square integer operands summed in int32
  (``preferred_element_type=int32``, what a quantized layer runs), 2n³ operations per call, by n.
  On XLA:CPU (jax 0.10) ``s8 x s8 -> s32`` goes to its matmul library (``__ynn_fusion``) at a
  rate of its own; an ``s8 x s8 -> s8`` dot is a loop dot (a pattern of its own). A backend
  without the type (XLA:CPU refuses int4 dots) leaves the entry unavailable with its reason.
* ``grouped convolution``: depthwise convolutions (``feature_group_count`` = channels, NHWC,
  HWIO filters of one input feature, "valid" padding) of :func:`depthwise_shape`'s batch and
  channels, by image side, one roof per window (3x3 and 7x7), and a 3x3 one over groups of 16
  input features (:data:`GROUPED_ROOFS`). Each
  group is a tiny convolution of its own: on a 2-core CPU a 7x7 depthwise convolution ran 34
  to 61 times slower than its flops at the dense convolution roof, and a 3x3 one at about a
  quarter of the 7x7 one's FLOP/s (its time goes with its outputs more than with its
  multiply-adds), so the model reads a kernel's rate at its own window between the two.

* ``convolution (generic)``: a convolution XLA:CPU hands to no library, run by generic code of
  its own: the filter gradient of a 4x4 transposed convolution of stride 2 (what a GAN's
  generator or a decoder's upsampling trains), of :func:`depthwise_shape`'s batch and 32
  features in and out, by the side n of its output (its input n/2): XLA writes it with its
  batch and features swapped and its window dilated and reversed, a form no library takes.
  On a 2-core CPU it ran at 3.3 to 8 GFLOP/s, against 150 to 230 for the convolution roofs.

Each size is timed roughly (the sweep's few short samples) and timed once more in the second
round; the roof is the fastest size's rate, and every size stays in ``by_size`` (a prediction
reads the rate near its kernel's size). No size gets the compute ceilings' long final timing:
these roofs bound kernels that are rare beside the float ones, and the ceilings pass must stay
short. Every point's compiled program is checked to hold the operation (an integer dot, a
grouped convolution); a size without it is left out with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roofline_report.observe.ceilings.compute import Rough, _compute_entry, _rough, _rough_again
from roofline_report.observe.ceilings.plan import Plan
from roofline_report.observe.ceilings.sampling import (
    Again,
    Progress,
    failure_reason,
    fastest_rate,
)

# The grouped convolution roofs: (window side, input features per group). Depthwise at 3x3
# and 7x7 (9 and 49 taps an output), and 3x3 over groups of 16 features (144 taps), where the
# groups' features fill the vector lanes and the rate is an order of magnitude higher.
GROUPED_ROOFS = ((3, 1), (7, 1), (3, 16))
# The 1-D depthwise roof: a causal convolution of this many taps along the sequence of
# [batch, length, channels] (a state-space model's token mixing). On a TPU v5e such a 4-tap
# convolution ran 25 times below the 3x3 depthwise roof's FLOP/s: its taps are not an
# image's. On a 2-core CPU it ran at 0.39 GFLOP/s (20 ns an output), where the line through
# the 3x3 and 7x7 depthwise roofs read 0.45 at 4 taps.
CAUSAL_TAPS = 4
INTEGER_SUM = "int32"  # what the integer products accumulate in


def depthwise_shape(backend: str) -> tuple[int, int]:
    """(batch, channels) of the grouped convolution roof's kernels on ``backend``."""
    return (4, 64) if backend == "cpu" else (8, 256)


def depthwise_flops(n: int, batch: int, channels: int, window: int, group: int = 1) -> int:
    """2 · batch · (n - window + 1)² · channels · window² · group: the multiply-adds of a
    valid grouped convolution with ``group`` input features per group (1: depthwise) on an
    n x n image."""
    side = n - window + 1
    return 2 * batch * side * side * channels * window * window * group


def _holds(text: str, check: Callable[[Any], bool]) -> bool:
    """Whether the optimized HLO ``text`` has an instruction ``check`` accepts. Pure."""
    from roofline_report.hlo.ir import parse_module

    return any(check(instr) for _comp, instr in parse_module(text).instructions())


def _library_call(instr: Any, prefix: str) -> bool:
    """A custom call to a library whose target starts with ``prefix`` (XLA's GPU backend runs
    products and convolutions as cuBLAS and cuDNN calls: ``__cublas$gemm``,
    ``__cudnn$convForward``)."""
    return bool(instr.opcode == "custom-call"
                and str(instr.custom_call_target or "").startswith(prefix))


def integer_dot(instr: Any, dtype: str) -> bool:
    """An HLO dot, a cuBLAS call, or a TPU's convolution computing a matrix product (the TPU
    writes every dot so), whose left operand is of the integer type ``dtype`` (jax's name)."""
    from roofline_report.hlo.product_facts import INTEGER_TYPES
    from roofline_report.hlo.tpu import product_convolution

    operand = instr.operand_shapes[0] if instr.operand_shapes else None
    return bool((instr.opcode == "dot" or _library_call(instr, "__cublas")
                 or product_convolution(instr))
                and operand is not None and operand.array is not None
                and INTEGER_TYPES.get(operand.array.dtype) == dtype)


def grouped_convolution(instr: Any) -> bool:
    """An HLO convolution, or a cuDNN convolution call, of more than one feature group."""
    return bool((instr.opcode == "convolution" or _library_call(instr, "__cudnn$conv"))
                and instr.attributes.get("feature_group_count", "1") != "1")


def _sized(entry: dict[str, Any], fn: Callable[..., Any], sizes: tuple[int, ...],
           operands: Callable[[int], tuple[Any, ...]], flops_of: Callable[[int, str], int],
           check: Callable[[Any], bool], plan: Plan, say: Progress,
           again: Again | None) -> dict[str, Any]:
    """Fill ``entry`` with the rough rate of ``fn`` at each size whose compiled program
    ``check`` accepts, at the flops ``flops_of`` gives the size and that program's optimized
    HLO text; the roof is the fastest size's. A size that fails stops the sweep (the
    larger ones would fail too), with its reason; with no size left the entry is
    unavailable."""
    import jax

    why: list[str] = []
    timed: list[Rough] = []
    for n in sizes:
        try:
            args = operands(n)
            compiled = jax.jit(fn).lower(*args).compile()
            text = str(compiled.as_text())
            if not _holds(text, check):
                why.append(f"n={n}: the compiled program has no {entry['name']} kernel")
                continue
            rough = _rough(compiled, args, plan)
        except Exception as exc:  # a type the backend lacks, or memory: larger sizes fail too
            why.append(f"n={n} failed ({failure_reason(exc)})")
            break
        flops = flops_of(n, text)
        point = {"n": n, "flops": flops, "value": fastest_rate(flops, rough)}
        say(f"{entry['name']} n={n}: about {point['value'] / 1e9:.3g} GFLOP/s")
        timed.append((point, compiled, args))
    entry["by_size"] = [p for p, _, _ in timed]
    if not timed:
        entry["reason"] = f"{entry['name']} unavailable: " + "; ".join(why or ["no size"])
        return entry
    entry["reason"] = "; ".join(why)
    _best(entry)
    if again is not None:
        def second() -> None:
            _rough_again(timed, plan)
            _best(entry)

        again.append(second)
    return entry


def _best(entry: dict[str, Any]) -> None:
    top = max(entry["by_size"], key=lambda p: p["value"])
    entry.update(value=top["value"], available=True, size=top["n"],
                 flops_per_call=top["flops"])


def integer_matmul_entry(dtype: str, plan: Plan, say: Progress,
                         again: Again | None = None) -> dict[str, Any]:
    """The matmul roof of the integer type ``dtype`` (``int8``, ``int4``) summed in int32, at
    the plan's integer sizes."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    kind = jnp.dtype(dtype)

    def product(a: Any, b: Any) -> Any:
        return jax.lax.dot(a, b, preferred_element_type=jnp.dtype(INTEGER_SUM))

    def operands(n: int) -> tuple[Any, Any]:
        rng = np.random.default_rng(2)
        return tuple(jax.device_put(rng.integers(-8, 8, (n, n), dtype=np.int8).astype(kind))
                     for _ in range(2))  # type: ignore[return-value]

    entry = _compute_entry(f"matmul {dtype} ({INTEGER_SUM} sums)", "matmul", dtype, "default")
    return _sized(entry, product, plan.integer_sizes, operands, lambda n, _text: 2 * n**3,
                  lambda i: integer_dot(i, dtype), plan, say, again)


def grouped_conv_entry(dtype: str, backend: str, plan: Plan, say: Progress,
                       again: Again | None = None, window: int = 7,
                       group: int = 1) -> dict[str, Any]:
    """The grouped convolution roof of ``dtype`` with a ``window`` x ``window`` filter and
    ``group`` input features per group (1: depthwise) at the plan's image sides (see the
    module docstring)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    batch, channels = depthwise_shape(backend)
    kind = jnp.dtype(dtype)

    def convolution(x: Any, w: Any) -> Any:
        return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="VALID",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                            feature_group_count=channels // group)

    def operands(n: int) -> tuple[Any, Any]:
        rng = np.random.default_rng(3)
        x = rng.standard_normal((batch, n, n, channels), dtype=np.float32)
        w = rng.standard_normal((window, window, group, channels), dtype=np.float32) / window
        return jax.device_put(x.astype(kind)), jax.device_put(w.astype(kind))

    kind_name = "depthwise" if group == 1 else f"groups of {group}"
    entry = _compute_entry(f"grouped convolution {dtype} ({window}x{window} {kind_name})",
                           "grouped-convolution", dtype, "default")
    entry["window"] = window
    if group > 1:
        entry["group"] = group
    return _sized(entry, convolution, plan.grouped_conv_sizes, operands,
                  lambda n, _text: depthwise_flops(n, batch, channels, window, group),
                  grouped_convolution, plan, say, again)


def causal_conv_entry(dtype: str, backend: str, plan: Plan, say: Progress,
                      again: Again | None = None, taps: int = CAUSAL_TAPS) -> dict[str, Any]:
    """The 1-D depthwise roof of ``dtype``: a causal convolution of ``taps`` along the
    sequence of ``[batch, n², channels]`` (one group per channel, padded on the left, the
    output as long as the input: ``NWC``, ``WIO``), at the plan's image sides n (the 2-D
    roofs' elements). Its ``window`` is its taps and its ``rank`` 1: the model reads a
    grouped convolution's rate by its taps."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    batch, channels = depthwise_shape(backend)
    kind = jnp.dtype(dtype)

    def convolution(x: Any, w: Any) -> Any:
        return jax.lax.conv_general_dilated(x, w, window_strides=(1,),
                                            padding=[(taps - 1, 0)],
                                            dimension_numbers=("NWC", "WIO", "NWC"),
                                            feature_group_count=channels)

    def operands(n: int) -> tuple[Any, Any]:
        rng = np.random.default_rng(4)
        x = rng.standard_normal((batch, n * n, channels), dtype=np.float32)
        w = rng.standard_normal((taps, 1, channels), dtype=np.float32) / taps
        return jax.device_put(x.astype(kind)), jax.device_put(w.astype(kind))

    entry = _compute_entry(f"grouped convolution {dtype} (1-D causal, {taps} taps, depthwise)",
                           "grouped-convolution", dtype, "default")
    entry["window"] = taps
    entry["rank"] = 1
    return _sized(entry, convolution, plan.grouped_conv_sizes, operands,
                  lambda n, _text: 2 * batch * n * n * channels * taps, grouped_convolution, plan,
                  say, again)


#: The features in and out of the generic convolution roof's transposed convolutions.
GENERIC_FEATURES = 32


def generic_convolution(instr: Any) -> bool:
    """A bare convolution XLA:CPU hands to no library
    (:func:`~roofline_report.hlo.product_facts.generic_conv_flops`)."""
    from roofline_report.hlo.product_facts import generic_conv_flops

    return generic_conv_flops(instr) > 0


def generic_conv_entry(dtype: str, backend: str, plan: Plan, say: Progress,
                       again: Again | None = None) -> dict[str, Any]:
    """The generic convolution roof of ``dtype`` (see the module docstring), at the plan's
    convolution sides up to 64, each its flops as the HLO count gives them."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from roofline_report.hlo.kernels import kernel_inventory

    batch, _ = depthwise_shape(backend)
    features = GENERIC_FEATURES
    kind = jnp.dtype(dtype)

    def transposed(x: Any, w: Any) -> Any:  # 4x4, stride 2, padding 1: twice the input's side
        return jax.lax.conv_general_dilated(x, w, (1, 1), ((2, 2), (2, 2)), lhs_dilation=(2, 2),
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def filter_gradient(x: Any, g: Any) -> Any:
        w = jnp.zeros((4, 4, features, features), x.dtype)
        return jax.grad(lambda w_: jnp.vdot(transposed(x, w_), g))(w)

    def operands(n: int) -> tuple[Any, Any]:
        rng = np.random.default_rng(5)
        x = rng.standard_normal((batch, n // 2, n // 2, features), dtype=np.float32)
        g = rng.standard_normal((batch, n, n, features), dtype=np.float32)
        return jax.device_put(x.astype(kind)), jax.device_put(g.astype(kind))

    def flops_of(_n: int, text: str) -> int:  # as the count gives the compiled kernel
        return sum(k["generic_conv_flops"] for k in kernel_inventory(text)["kernels"])

    entry = _compute_entry(f"convolution {dtype} (generic)", "convolution-generic", dtype,
                           "default")
    entry["channels"] = features
    return _sized(entry, filter_gradient, tuple(n for n in plan.conv_sizes if n <= 64),
                  operands, flops_of, generic_convolution, plan, say, again)

