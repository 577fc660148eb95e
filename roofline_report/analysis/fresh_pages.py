"""Which kernels of a CPU program write pages the operating system maps afresh on each call.

XLA:CPU holds a program's temporary buffers in an allocation of ``temp_size_in_bytes`` (its
compiled memory analysis) taken from the C allocator on every call. glibc maps an allocation
past its mmap threshold on its own and unmaps it when freed; the threshold grows with the
blocks freed, up to 32 MiB on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``, ``man mallopt``).
So a program whose temporaries reach that size gets fresh pages on every call, and the first
write to each page in the call faults. Measured on the 2-core CPU this was built on (jax
0.10.2): programs of cumulative sums with 25.6 MiB of temporaries faulted no page a call, with
34.1, 42.7 and 68.3 MiB exactly their temporaries' pages; a Flax ViT step with 66 MiB faulted
18,114 pages a call (70.8 MiB), a transformer step with 6.8 MiB faulted 15. With glibc's mmap
turned off (``MALLOC_MMAP_MAX_=0``) the 34.1 MiB program faulted 220 pages a call and ran in
54 ms instead of 75 to 80.

Where the program's own timing counted its page faults (``page_faults_per_call``, read from the
operating system while it was timed), that count is the pages a call faults, in place of the
rule above, when it reaches :data:`COUNTED_PAGES`: the allocator's choice depends on what the
process allocated and freed before, not on the program alone. A log-Mel front end with
24.5 MiB of temporaries and a 2.4 MiB output, under the threshold, took 0.1, 628 and 1,148
page faults a call in three processes on the 2-core CPU (7.4, 11.5 and 9.0 ms a call; 1.1 µs
a fault), and 7,693 (17.4 ms) with glibc's trimming of its heap turned off. Fewer counted
faults are the runtime's own small allocations, not its kernels'.

Which kernel first writes each page is set by the buffer assignment's offsets, which the
inventory does not keep. The rule here: the kernels' fresh writes, in program order, fault until
they have covered the temporaries' pages (buffers are placed as the live set grows, and a
forward pass grows it); a kernel writing in place over an argument's buffer writes no fresh
page, and a kernel in a loop body writes its buffers' pages once a call, not on every trip.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from roofline_report.results import schema

MiB = 1 << 20
FRESH_ABOVE_BYTES = 32 * MiB  # glibc's largest mmap threshold on 64-bit systems
PAGE_BYTES = 4096
COUNTED_PAGES = 64  # counted faults a call from which they are the kernels' (256 KiB)


def _memory_values(memory: schema.MemoryStats | None) -> Mapping[str, int]:
    """The values of a program's compiled memory analysis; {} where it has none."""
    if memory is None or not memory.available:
        return {}
    return memory.values


def temp_bytes(memory: schema.MemoryStats | None) -> int | None:
    """The program's temporaries from its compiled memory analysis (``memory``, a workload's
    record of it), None where unknown."""
    value = _memory_values(memory).get("temp_size_in_bytes")
    return value if value is not None and value > 0 else None


def footprint_bytes(memory: schema.MemoryStats | None) -> int | None:
    """The program's data at its peak from its compiled memory analysis (``memory``, a
    workload's record of it): the peak memory where the compiler gives one, else its
    arguments, outputs and temporaries together; None where unknown."""
    values = _memory_values(memory)
    peak = values.get("peak_memory_in_bytes")
    if peak is not None and peak > 0:
        return peak
    parts = [values.get(k) for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                     "temp_size_in_bytes")]
    total = sum(v for v in parts if v is not None and v > 0)
    return total or None


def counted_pages(timing: schema.Timing | None) -> float | None:
    """The page faults a call of the program took while it was timed, where counted and at
    least :data:`COUNTED_PAGES`; None otherwise (see the module docstring)."""
    counted = timing.page_faults_per_call if timing is not None else None
    return float(counted) if counted is not None and counted >= COUNTED_PAGES else None


def fresh_pages(kernels: Sequence[schema.KernelRecord], temp: int | None,
                page: int = PAGE_BYTES, counted: float | None = None) -> list[float]:
    """Pages each of ``kernels`` (the inventory, in program order) faults per call: the
    kernels' fresh writes in order until they cover the ``counted`` pages
    (:func:`counted_pages`) where given, else ``temp`` bytes where those reach
    :data:`FRESH_ABOVE_BYTES`, else none (see the module docstring)."""
    if counted is not None:
        left = counted * page
    elif temp is None or temp < FRESH_ABOVE_BYTES:
        return [0.0] * len(kernels)
    else:
        left = float(temp)
    out = []
    for kernel in kernels:
        written = 0.0 if kernel.in_place or not kernel.charged else float(kernel.bytes_written)
        taken = min(left, written)
        left -= taken
        out.append(float(math.ceil(taken / page)))  # a page begun is a page faulted
    return out
