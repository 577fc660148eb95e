"""Reading XLA programs: the optimized HLO as an IR (:mod:`roofline_report.hlo.ir`).

Importing this package does not import jax.
"""

from __future__ import annotations

from roofline_report.hlo.ir import Module, parse_module

__all__ = ["Module", "parse_module"]
