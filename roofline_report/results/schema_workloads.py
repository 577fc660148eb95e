"""The workloads of the results document (:mod:`roofline_report.results.schema`): each program's
hand model, lowering, check, XLA's analyses, arguments, compiled facts, counts, timing and
kernels, and the sweeps of programs over sizes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Discriminator, Tag

from roofline_report.results.schema_base import (
    Count,
    NonNeg,
    Pos,
    PosInt,
    Record,
    Timing,
    available_tag,
    maybe,
)
from roofline_report.results.schema_ceilings import LoadReading
from roofline_report.results.schema_kernels import (
    Compiled,
    HloCount,
    JaxRoofline,
    KernelInventory,
    KernelTiming,
)
from roofline_report.results.schema_traces import TracedProgram


class Analytic(Record):
    """A workload's hand model: work and the minimum traffic (every input read, output written
    once)."""

    available: Literal[True] = True
    flops: Count
    minimum_bytes: PosInt
    transcendentals: Count = 0


class Arg(Record):
    shape: list[Count]
    dtype: str


class Lowering(Record):
    available: Literal[True] = True
    reason: str = ""
    lower_s: NonNeg
    compile_s: NonNeg
    ops: dict[str, Count]
    required_ops: list[str]
    stablehlo_text: str
    compiled_text: str


class LoweringFailed(Record):
    available: Literal[False]
    reason: str
    lower_s: NonNeg | None = None
    compile_s: NonNeg | None = None


class Check(Record):
    """The result compared with a NumPy reference at a tolerance."""

    available: Literal[True] = True
    passed: bool
    shape: list[Count]
    expected_shape: list[Count]
    max_abs_error: NonNeg | None
    max_rel_error: NonNeg | None
    rtol: NonNeg
    atol: NonNeg
    note: str = ""
    leaf: str | None = None  # a pytree result: the path of the worst leaf (the one shown)
    leaves: Count | None = None  # a pytree result: how many leaves were compared


class XlaCost(Record):
    """XLA's cost analysis as the backend returned it (keys as XLA names them; -1 kept)."""

    available: bool
    reason: str = ""
    raw: dict[str, float]
    values: dict[str, float]


class MemoryStats(Record):
    available: bool
    reason: str = ""
    values: dict[str, Count]


class ArgumentLeaf(Record):
    """One array in an argument's pytree: its path (``jax.tree_util.keystr``) and size."""

    path: str
    shape: list[Count]
    dtype: str
    bytes: Count


class ArgumentNode(Record):
    """One argument (positional, keyword or the result) as a pytree of arrays."""

    name: str
    keyword: bool = False
    static: bool = False  # held as a Python value, not traced
    type: str
    leaves: list[ArgumentLeaf]
    leaf_count: Count
    bytes: Count
    held_leaves: Count = 0  # leaves held as Python values (functions, numbers), not traced
    omitted: Count = 0  # leaves counted but not listed (very large trees)
    value: str = ""  # a static argument's value, shortened
    donated: bool = False  # donated by the user's jit (and by every timed call)


class AsWritten(Record):
    """How a user's program was compiled and timed against how it was written: the options of
    its own jit kept (jax's names, ``donation`` and ``static_arguments`` for those) and those
    that could not be (the page says it was timed without them), and the donated inputs given
    afresh to every call."""

    kept: list[str] = []
    not_kept: list[str] = []
    donated_leaves: Count = 0
    donated_bytes: Count = 0


class ArgumentTree(Record):
    """A program's arguments and result as pytrees, with counts and total bytes."""

    arguments: list[ArgumentNode]
    leaf_count: Count
    bytes: Count
    result: ArgumentNode | None = None

class HostDispatch(Record):
    """What one call of the program costs the host alone, on an accelerator: the same
    arguments passed to a program that computes nothing and returns scalars in the result's
    structure, its calls enqueued (``seconds`` the fastest sample's per call), and the
    ``buffers`` passed (arguments and results)."""

    available: Literal[True] = True
    seconds: Pos
    buffers: Count
    timing: Timing | None = None


class Workload(Record):
    name: str
    title: str
    description: str
    dtype: str
    dims: dict[str, int]
    user: bool
    analytic: maybe(Analytic)  # type: ignore[valid-type]
    args: list[Arg] = []
    lowering: Annotated[
        Annotated[Lowering, Tag("yes")] | Annotated[LoweringFailed, Tag("no")],
        Discriminator(available_tag),
    ]
    check: maybe(Check) | None = None  # type: ignore[valid-type]
    xla: XlaCost | None = None
    memory: MemoryStats | None = None
    compiled: Compiled | None = None  # facts of the optimized HLO
    hlo_count: maybe(HloCount) | None = None  # type: ignore[valid-type]
    timing: maybe(Timing) | None = None  # type: ignore[valid-type]
    # The machine's load while it was timed (None: not read, or written before it was).
    timing_load: LoadReading | None = None
    # On an accelerator: the host's own cost of a call with these arguments and results.
    host_dispatch: maybe(HostDispatch) | None = None  # type: ignore[valid-type]
    arguments: ArgumentTree | None = None  # a user's program: arguments and result as trees
    as_written: AsWritten | None = None  # a user's program: its jit's options kept or not
    kernels: maybe(KernelInventory) | None = None  # type: ignore[valid-type]
    kernel_timing: maybe(KernelTiming) | None = None  # type: ignore[valid-type]
    jax_roofline: maybe(JaxRoofline) | None = None  # type: ignore[valid-type]
    trace: TracedProgram | None = None  # read from a profiler trace (roofline-report profile)


class SweepPoint(Record):
    dims: dict[str, int]
    analytic: maybe(Analytic) | None = None  # type: ignore[valid-type]
    timing: maybe(Timing) | None = None  # type: ignore[valid-type]
    check: maybe(Check) | None = None  # type: ignore[valid-type]
    hlo_count: maybe(HloCount) | None = None  # type: ignore[valid-type]
    compiled: Compiled | None = None
    xla: XlaCost | None = None
    kernels: maybe(KernelInventory) | None = None  # type: ignore[valid-type]


class Sweep(Record):
    name: str
    title: str
    dtype: str
    parameters: list[str]
    points: list[SweepPoint]
