"""roofline-report: reason about JAX computations with HLO and the roofline model."""

from __future__ import annotations

from roofline_report.version import __version__

# The entry points import the package first to install their SIGINT handler: nothing but the
# version is imported here before it (not typing), so that no interrupt meets Python's own
# handler then.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roofline_report.api import AnalyzeResult


def analyze(fn: Any, *args: Any, **kwargs: Any) -> AnalyzeResult:
    """Analyse ``fn`` at example ``args`` and return an
    :class:`~roofline_report.api.AnalyzeResult` (the program's time, prediction, share of roof,
    binding and kernels); see :func:`roofline_report.observe.user.analyze`.

    Imports jax only when called, so ``import roofline_report`` stays light.
    """
    from roofline_report.observe.user import analyze as _analyze

    return _analyze(fn, *args, **kwargs)


__all__ = ["__version__", "analyze", "analyze_sharded", "compare", "profile"]


def profile(path: Any, out: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Read a ``jax.profiler`` trace captured anywhere and return its results document; with
    ``out``, write its per-kernel roofline report; see :func:`roofline_report.profile_cli.profile`.

    Needs jaxlib installed (to print the trace's HLO), not the trace's backend; imports it only
    when called.
    """
    from roofline_report.profile_cli import profile as _profile

    return _profile(path, out, **kwargs)


def compare(runs: Any, out: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Set two or more saved runs (results.json files) side by side and return the comparison's
    document (each workload's numbers per run, the verdicts, the workloads only some runs hold;
    with ``fail_if=["time>10%", ...]`` the gate's regressions of the second run against the
    first); with ``out``, write the comparison report; see
    :func:`roofline_report.compare_cli.compare`. Needs no jax.
    """
    from roofline_report.compare_cli import compare as _compare

    return _compare(runs, out, **kwargs)


def analyze_sharded(fn: Any, args: Any, in_shardings: Any, out_shardings: Any,
                    **kwargs: Any) -> dict[str, Any]:
    """Analyse a sharded ``fn`` (collectives and bytes per device from the compiled HLO,
    per-device flops and XLA's estimate, a NumPy check and a timing); see
    :func:`roofline_report.observe.sharded_analysis.analyze_sharded`. Needs the devices to exist
    already: on CPU set ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` before importing jax.
    """
    from roofline_report.observe.sharded_analysis import analyze_sharded as _analyze_sharded

    return _analyze_sharded(fn, args, in_shardings, out_shardings, **kwargs)
