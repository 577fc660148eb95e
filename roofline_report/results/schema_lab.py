"""The lab's raw measurements in the results document (:mod:`roofline_report.results.schema`):
each experiment's timings and programs, and the plan the lab ran with.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from roofline_report.results.schema_base import (
    AtLeastOne,
    Count,
    Pos,
    PosInt,
    Record,
    Timing,
    maybe,
)
from roofline_report.results.schema_kernels import KernelInventory

Inventory = maybe(KernelInventory)
MaybeTiming = maybe(Timing)


class DoubledTraffic(Record):
    """sum(2x) against sum(w x): the same flops over one and two streamed arrays."""

    available: Literal[True] = True
    elements: PosInt
    itemsize: PosInt
    one_array: Timing
    two_arrays: Timing
    programs: dict[Literal["one_array", "two_arrays"], Inventory]  # type: ignore[valid-type]


class Fusion(Record):
    """tanh(a @ b) fused, against the same with an optimization barrier between its parts."""

    available: Literal[True] = True
    m: PosInt
    k: PosInt
    n: PosInt
    itemsize: PosInt
    kernels: dict[Literal["fused", "unfused"], Count | None]
    fused: Timing
    unfused: Timing
    programs: dict[Literal["fused", "unfused"], Inventory]  # type: ignore[valid-type]


class Bf16Pair(Record):
    """One program in float32 and in bfloat16 (an in-place scale, or a square matmul)."""

    available: Literal[True] = True
    elements: PosInt | None = None  # the in-place scale's size
    size: PosInt | None = None  # the matmul's n
    converts: dict[str, Count | None]
    programs: dict[str, Inventory]  # type: ignore[valid-type]
    dtypes: dict[str, str]
    float32: Timing
    bfloat16: Timing


class Sweep1D(Record):
    """Programs timed at growing sizes (batch columns, or elements), aligned lists."""

    available: Literal[True] = True
    itemsize: PosInt
    d: PosInt | None = None  # batching: W is d x d
    batches: list[PosInt] | None = None
    sizes: list[PosInt] | None = None
    times: list[Timing]
    programs: list[Inventory]  # type: ignore[valid-type]


class Scan(Record):
    """A scan of ``steps`` tanh(c @ x) steps against one step."""

    available: Literal[True] = True
    size: PosInt
    steps: PosInt
    xla_flops: dict[Literal["body", "scan"], float | None]
    our_flops: dict[Literal["body", "scan"], Count | None]
    kernels: dict[Literal["body", "scan"], Count | None]
    programs: dict[Literal["body", "scan"], Inventory]  # type: ignore[valid-type]
    body: Timing
    scan: Timing


def _lab(model: type[BaseModel]) -> Any:
    return maybe(model) | None


class LabExperiments(Record):
    """Each experiment's raw measurements, or why it could not run."""

    doubled_traffic: _lab(DoubledTraffic) = None  # type: ignore[valid-type]
    fusion: _lab(Fusion) = None  # type: ignore[valid-type]
    bf16_memory: _lab(Bf16Pair) = None  # type: ignore[valid-type]
    bf16_compute: _lab(Bf16Pair) = None  # type: ignore[valid-type]
    batching: _lab(Sweep1D) = None  # type: ignore[valid-type]
    dispatch: _lab(Sweep1D) = None  # type: ignore[valid-type]
    scan: _lab(Scan) = None  # type: ignore[valid-type]


class LabPlan(Record):
    """The sizes and sampling the lab ran with."""

    samples: AtLeastOne
    min_sample_s: Pos
    stream_elements: PosInt
    fusion_shape: list[PosInt]
    bf16_elements: PosInt
    bf16_matmul: PosInt
    batch_d: PosInt
    batches: list[PosInt]
    dispatch_sizes: list[PosInt]
    scan_size: PosInt
    scan_steps: PosInt


class Lab(Record):
    available: Literal[True] = True
    backend: str
    device_kind: str
    quick: bool
    cache_bytes: Count | None
    plan: LabPlan
    experiments: LabExperiments
