"""roofline-report: reason about JAX computations with HLO and the roofline model."""

from __future__ import annotations

__version__ = "0.1.0"
