"""Reading XLA programs: the optimized HLO as an IR, what the compiled program runs, and our own
count of the StableHLO.

* :mod:`roofline_report.hlo.ir`: the one reader of optimized HLO text (:func:`parse_module`).
* :mod:`roofline_report.hlo.shapes` and :mod:`roofline_report.hlo.replica_groups`: the
  element types, shapes and replica groups it reads.
* :mod:`roofline_report.hlo.walk`: the one walk of the compiled call graph (loops, branches,
  calls, async wrappers, fusions) that the compiled facts and the kernel inventory read.
* :mod:`roofline_report.hlo.compiled`: :func:`inspect_compiled`, :func:`collective_records`,
  :func:`while_loops` and :func:`strip_metadata`, all on top of the IR.
* :mod:`roofline_report.hlo.kernels`: the kernel inventory, from
  :mod:`~roofline_report.hlo.kernel_cost` (each instruction's flops),
  :mod:`~roofline_report.hlo.kernel_bytes` (the bytes a launch touches) and
  :mod:`~roofline_report.hlo.kernel_patterns` (the kinds of kernel, each a
  :class:`~roofline_report.hlo.pattern.Pattern`; the transposing ones found by
  :mod:`~roofline_report.hlo.transpose_patterns`).
* :mod:`roofline_report.hlo.tpu`: what a TPU's compiler writes that the CPU's and GPU's do not
  (memory spaces, products as convolutions, whole-row reduce-windows, loop trip counts), and
  how a module compiled for a TPU is recognised.
* :mod:`roofline_report.hlo.taps`: convolution taps in closed form.
* :mod:`roofline_report.hlo.stablehlo_count`: :func:`count_stablehlo` (the MLIR walk);
  :mod:`roofline_report.hlo.stablehlo_loops`: :func:`match_loops`. Lowering a workload to count
  it (:func:`roofline_report.observe.lower.count_workload`) is measuring, and lives in observe/.

Importing this package does not import jax.
"""

from __future__ import annotations

from roofline_report.hlo.compiled import (
    collective_records,
    inspect_compiled,
    strip_metadata,
    while_loops,
)
from roofline_report.hlo.ir import Module, parse_module
from roofline_report.hlo.stablehlo_count import count_stablehlo
from roofline_report.hlo.stablehlo_loops import match_loops

__all__ = [
    "Module",
    "collective_records",
    "count_stablehlo",
    "inspect_compiled",
    "match_loops",
    "parse_module",
    "strip_metadata",
    "while_loops",
]
