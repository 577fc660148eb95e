"""Kernels that read their input more than once, and what that costs past the cache (no jax).

A fusion that reduces its input and then uses the results on the same input reads it once per
reduction and once more for its output: a layer norm in one kernel reads its rows for the mean,
again for the variance, and again to normalise them. Where the input fits the last-level cache
the later passes read the cache; where it does not, and the kernel makes its passes over the
whole input rather than a row at a time (as XLA:CPU's YNNPACK layer norm was timed doing, three
reads and a write of a 16 MiB input at main memory's rate), every pass reads main memory, and
the kernel takes about that many times as long as one pass.

Which of the two a library kernel does is not in the HLO. The model charges the later passes
at the row reduction's roof (a term of its own), and where the kernel's bytes are at least
the last-level cache's capacity it charges its terms one after another rather than letting
the largest hide the rest (:func:`~roofline_report.analysis.past_the_cache.passes_in_series`:
the YNNPACK softmax and layer norm over 16 MiB inputs took about that sum). The reason for a
program's miss (:func:`roofline_report.analysis.explain.program_reason`) names these kernels
where every pass read from main memory at its roof would account for the miss. The passes
are counted from the kernel's record: the elements its reduce ops read (``reduced_elements``,
a fusion reducing its input twice counts it twice) over the elements it reads, and one more
where it writes an output as large as its input from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from roofline_report.analysis.predict import predict_kernel
from roofline_report.analysis.prediction_facts import read_passes
from roofline_report.analysis.roofs import RoofSet
from roofline_report.results import schema

__all__ = ["MultiPass", "multi_pass_kernels", "read_passes"]


@dataclass(frozen=True, slots=True)
class MultiPass:
    """A kernel that reads its input ``passes`` times: its bytes read and written per launch
    and per call of its program (trips included), and its predicted time per call."""

    name: str
    passes: int
    read_per_launch: float
    read: float
    written: float
    predicted: float


def multi_pass_kernels(kernels: Iterable[schema.KernelRecord], dtype: str, roofs: RoofSet,
                       predicted: Mapping[str, float] | None = None) -> tuple[MultiPass, ...]:
    """The kernels of an inventory that read their input more than once, each with its
    prediction: ``predicted``'s, by kernel name, where the caller has them (a program's kernel
    table), else :func:`~roofline_report.analysis.predict.predict_kernel`'s; a kernel the roofs
    cannot price is left out."""
    found = []
    for kernel in kernels:
        passes = read_passes(kernel)
        if passes < 2 or not kernel.charged:
            continue
        seconds = (predicted or {}).get(kernel.name)
        if seconds is None:
            prediction = predict_kernel(kernel, dtype, roofs)
            seconds = prediction.seconds if prediction is not None else None
        if seconds is None:
            continue
        trips = kernel.trips
        read = float(kernel.bytes_read)
        found.append(MultiPass(kernel.name, passes, read, read * trips,
                               float(kernel.bytes_written) * trips, seconds))
    return tuple(found)
