"""Each kernel of a compiled program timed from a profiler trace of repeated calls (imports
jax).

:func:`trace_kernels` runs the executable a few times untraced, then under
``jax.profiler.trace`` into a temporary directory, reads the trace back with
``jax.profiler.ProfileData`` and turns its events into per-kernel times with
:func:`roofline_report.traces.events.kernel_times`.
"""

from __future__ import annotations

import glob
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from roofline_report.ingest.tpu_timing import has_tpu_ops, tpu_kernel_times
from roofline_report.observe import timer as timing
from roofline_report.traces.events import kernel_times
from roofline_report.traces.xspace import TraceFormatError, XSpace, read_xspace_bytes

__all__ = ["TraceUnavailable", "capture", "cores", "profile_options", "read_trace",
           "trace_kernels", "wants"]


def cores() -> int:
    """The cores this process may run on: the size of XLA:CPU's worker pool."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def wants(kernels: Iterable[Mapping[str, Any]], cores: int) -> dict[str, int]:
    """The worker threads each kernel record of an inventory keeps busy alone
    (:func:`roofline_report.hlo.kernels.threads_wanted`)."""
    from roofline_report.hlo.kernels import threads_wanted

    return {str(k["name"]): threads_wanted(k, cores) for k in kernels}


def profile_options() -> Any:
    """The profiler's options for a kernel trace: Python function calls not traced (jax traces
    them by default). Nothing here reads them, and tracing them slows the Python thread, which on
    a machine with few cores shares them with the kernels' worker threads while a call's
    outputs are handled. None where this jax has no ``ProfileOptions`` (its defaults then)."""
    import jax

    options_type = getattr(jax.profiler, "ProfileOptions", None)
    if options_type is None:
        return None
    options = options_type()
    options.python_tracer_level = 0
    return options


class TraceUnavailable(RuntimeError):
    """The profiler did not run, or wrote no trace."""


def capture(call: Callable[[], Any], calls: int, *, warmup: int = 1,
            prepare: Callable[[int], object] | None = None
            ) -> tuple[Any, list[float], list[float]]:
    """``warmup`` calls of ``call``, ``calls`` calls timed untraced, then ``calls`` traced:
    the trace (:func:`read_trace`) and both lists of call times (seconds).
    ``prepare(n)``, when given, runs before each of the three runs of n calls, before the
    profiler starts (fresh donated inputs: :func:`roofline_report.observe.donation.pool`). Raises
    :class:`TraceUnavailable` when the profiler does not run (another already running, or none
    in this build) or writes no trace."""
    import jax

    from roofline_report.errors import reason

    def ready(n: int) -> None:
        if prepare is not None:
            prepare(n)

    ready(warmup)
    for _ in range(warmup):
        timing.block(call())
    ready(calls)
    untraced: list[float] = []
    for _ in range(calls):
        t0 = time.perf_counter()
        timing.block(call())
        untraced.append(time.perf_counter() - t0)
    traced: list[float] = []
    ready(calls)
    with tempfile.TemporaryDirectory(prefix="roofline-trace-") as tmp:
        try:
            with jax.profiler.trace(tmp, profiler_options=profile_options()):
                for _ in range(calls):
                    t0 = time.perf_counter()
                    timing.block(call())
                    traced.append(time.perf_counter() - t0)
        except Exception as exc:
            raise TraceUnavailable(f"the profiler did not run: {reason(exc)}") from exc
        files = sorted(glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True))
        if not files:
            raise TraceUnavailable("the profiler wrote no trace")
        return read_trace(files[-1]), untraced, traced


# A TPU's device plane is named so in the trace's bytes (a plane's name is a plain string).
_TPU_PLANE = b"/device:TPU:"


def read_trace(path: str | Path) -> Any:
    """The trace the profiler wrote at ``path``: a TPU's as the project's reader decodes it
    (an :class:`~roofline_report.traces.xspace.XSpace`), any other as
    ``jax.profiler.ProfileData`` reads it. Raises :class:`TraceUnavailable` for a TPU trace the
    reader cannot read."""
    data = Path(path).read_bytes()
    if _TPU_PLANE in data:
        try:
            return read_xspace_bytes(data, Path(path).name)
        except TraceFormatError as exc:
            raise TraceUnavailable(f"the profiler's trace cannot be read ({exc})") from None
    from jax.profiler import ProfileData

    return ProfileData.from_file(str(path))


def trace_kernels(
    compiled: Callable[..., Any],
    args: Sequence[Any],
    *,
    module: str | None,
    kernels: Iterable[str] | None = None,
    calls: int = 5,
    wants: Mapping[str, int] | None = None,
    cores: int | None = None,
    pool: tuple[Callable[[int], object], Callable[[], Any]] | None = None,
    launches: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Trace ``calls`` calls of ``compiled(*args)`` and time each kernel (:func:`kernel_times`).

    The same number of calls is timed untraced first (:func:`capture`): the record keeps both
    sets of call times (``untraced_s``, ``traced_s``), whose ratio is the trace's overhead.
    ``wants`` and ``cores`` weight the shares of kernels that ran side by side
    (:func:`kernel_times`). Never raises for a trace problem: a profiler that cannot start or a
    trace without kernel events gives ``{"available": false, ...}``. ``pool``: (prepare, call)
    for a program that donates inputs, as :func:`roofline_report.observe.timer.time_jitted`
    takes it (``compiled`` and ``args`` are then not used). ``launches``: each kernel's
    launches per call (its trips), for kernels run in a command buffer (:func:`kernel_times`).
    """
    try:
        if pool is not None:
            profile, untraced, traced = capture(pool[1], calls, prepare=pool[0])
        else:
            profile, untraced, traced = capture(lambda: compiled(*args), calls)
    except TraceUnavailable as exc:
        return {"available": False, "reason": str(exc)}
    if isinstance(profile, XSpace) and has_tpu_ops(profile):
        record = tpu_kernel_times(profile, module=module, kernels=kernels, calls=calls,
                                  wants=wants, cores=cores, launches=launches)
    else:
        record = kernel_times(profile, module=module, kernels=kernels, calls=calls,
                              wants=wants, cores=cores, launches=launches)
    if record.get("available"):
        record["untraced_s"] = [max(s, 1e-12) for s in untraced]
        record["traced_s"] = [max(s, 1e-12) for s in traced]
    return record
