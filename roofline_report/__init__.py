"""roofline-report: reason about JAX computations with HLO and the roofline model."""

from __future__ import annotations

__version__ = "0.1.0"

from typing import Any


def analyze(fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Analyse ``fn`` at example ``args``; see :func:`roofline_report.user.analyze`.

    Imports jax only when called, so ``import roofline_report`` stays light.
    """
    from roofline_report.user import analyze as _analyze

    return _analyze(fn, *args, **kwargs)


__all__ = ["__version__", "analyze"]
