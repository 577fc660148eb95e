"""The names of the kernel patterns, one definition for the kernel inventory that assigns them
(:mod:`roofline_report.hlo.kernel_patterns`), the results schema that records them and the
analysis that prices them (pure: no jax)."""

from __future__ import annotations

from typing import Literal, get_args

#: A kernel pattern's name (see :mod:`roofline_report.hlo.kernel_patterns` for each).
PatternName = Literal[
    "transpose", "loop-dot", "strided-reduction", "gather", "scatter", "sort",
    "variadic-reduction", "top-k", "fused-transpose", "fft", "interleaved-reduction",
    "broadcast-transpose", "reduce-window-lane", "mat-vec", "vec-mat", "transposed-dot",
    "block-transpose", "update-slice", "reduce-window", "sum-window", "lone-convert",
    "normalization", "lone-op"]

PATTERNS: tuple[str, ...] = get_args(PatternName)

__all__ = ["PATTERNS", "PatternName"]
