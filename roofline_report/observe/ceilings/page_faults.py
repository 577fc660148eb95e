"""The cost of a first write to a fresh page of memory (:func:`page_fault_entry`), CPU only.

A program whose temporary buffers outgrow what the C allocator keeps for reuse gets them from
the operating system afresh on every call, and each page's first write in the call faults: with
glibc, an allocation above the mmap threshold is mapped on its own and unmapped when freed, and
the threshold grows with the blocks freed up to ``DEFAULT_MMAP_THRESHOLD_MAX`` (32 MiB on 64-bit
systems; see ``man mallopt``, M_MMAP_THRESHOLD). The measurement times one elementwise kernel
(``c · x`` on FRESH_BYTES of float32) writing a fresh output on each call, each call blocked on
and its output dropped before the next, against the same kernel writing in place over a donated
input, and divides the difference by the page faults counted per fresh call
(``getrusage``'s minor faults). Where the fresh calls fault on fewer than half their output's
pages (another allocator keeps the memory), the entry says so and gives no value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roofline_report.kinds import Kind
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings.plan import Plan
from roofline_report.observe.ceilings.sampling import MiB, Progress, failure_reason

# An output past glibc's largest mmap threshold (32 MiB on 64-bit systems): mapped afresh on
# every call, however the threshold has grown.
FRESH_BYTES = 64 * MiB
MIN_FAULT_SHARE = 0.5  # of the output's pages, faulted per fresh call, for a value


def _minor_faults() -> int:
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def page_fault_entry(plan: Plan, say: Progress, fresh_bytes: int = FRESH_BYTES
                     ) -> dict[str, Any]:
    """Seconds per page faulted on a fresh output's first write (see the module docstring).
    Never raises for a measurement failure."""
    entry: dict[str, Any] = {"value": None, "unit": "s", "kind": Kind.MEASURED.value,
                             "available": False, "reason": "", "page_bytes": None,
                             "bytes": fresh_bytes, "faults_per_call": None, "timing": None,
                             "timing_in_place": None}
    try:
        import resource

        import jax
        import jax.numpy as jnp

        page = int(resource.getpagesize())
        entry["page_bytes"] = page
        minus_one = jnp.float32(-1.0)
        fresh = jax.jit(lambda v, c: c * v)
        in_place = jax.jit(lambda v, c: c * v, donate_argnums=0)
        x = jax.device_put(jnp.ones(fresh_bytes // 4, dtype=jnp.float32))
        kept = [jax.device_put(jnp.ones(fresh_bytes // 4, dtype=jnp.float32))]

        def run_fresh(n: int) -> None:
            for _ in range(n):
                timing.block(fresh(x, minus_one))  # dropped at once: its memory unmapped

        def run_in_place(n: int) -> None:
            for _ in range(n):
                kept[0] = timing.block(in_place(kept[0], minus_one))

        run_fresh(1)
        before = _minor_faults()
        calls = 3
        run_fresh(calls)
        faults = (_minor_faults() - before) / calls
        entry["faults_per_call"] = faults
        pages = fresh_bytes / page
        if faults < MIN_FAULT_SHARE * pages:
            entry["reason"] = (f"a fresh {fresh_bytes // MiB} MiB output faulted {faults:.0f} "
                               f"of its {pages:.0f} pages a call: the allocator keeps the "
                               "memory, so fresh outputs cost no page faults here")
            return entry
        timed = {}
        for name, run in (("fresh", run_fresh), ("in place", run_in_place)):
            timed[name] = _measure(run, plan, fresh_bytes)
    except Exception as exc:
        entry["reason"] = f"page fault timing failed: {failure_reason(exc)}"
        return entry
    entry["timing"] = timed["fresh"].to_json()
    entry["timing_in_place"] = timed["in place"].to_json()
    extra = timed["fresh"].per_call.min - timed["in place"].per_call.min
    if extra <= 0:
        entry["reason"] = ("a fresh output was no slower to write than an output in place: no "
                           "page fault cost to measure")
        return entry
    entry.update(value=extra / faults, available=True)
    say(f"page fault: {entry['value'] * 1e6:.2f} us a page")
    return entry


def _measure(run: Callable[[int], None], plan: Plan, fresh_bytes: int) -> Any:
    return timing.measure(run, samples=plan.samples, min_sample_seconds=plan.min_sample_s,
                          budget_seconds=plan.budget_s,
                          method=f"jax: calls of a {fresh_bytes // MiB} MiB elementwise kernel, "
                                 "each blocked on")
