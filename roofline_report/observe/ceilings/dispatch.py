"""The floors: the dispatch of one tiny jitted call (blocking after each, and enqueued), the
launch of one more kernel inside a compiled program, and what splitting a kernel across worker
threads adds to it (:func:`dispatch_entry`, :func:`launch_entry`, :func:`split_launch_entry`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roofline_report.kinds import Kind
from roofline_report.observe import timer as timing
from roofline_report.observe.ceilings.plan import Plan
from roofline_report.observe.ceilings.sampling import Progress, failure_reason


def dispatch_runner(*, enqueued: bool = False) -> timing.Runner:
    """run(n): n jitted scalar adds, blocking after each (the latency one call pays) or, with
    ``enqueued``, blocking once on the last of n (the cost per call when calls are pipelined,
    as the workloads are timed: each result dropped as the next is made, so its memory is used
    again; holding all n made each call about 1.5 µs dearer than the workloads' on a 2-core
    CPU, 6.5 µs against 5.0 for a 4 kB elementwise program)."""
    import jax
    import jax.numpy as jnp

    add = jax.jit(lambda a, b: a + b)
    a, b = jax.device_put(jnp.float32(1.0)), jax.device_put(jnp.float32(2.0))

    def run(n: int) -> None:
        for _ in range(n):
            timing.block(add(a, b))

    def run_enqueued(n: int) -> None:
        last = None
        for _ in range(n):
            last = add(a, b)
        timing.block(last)

    return run_enqueued if enqueued else run


def dispatch_entry(plan: Plan, say: Progress) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "value": None,
        "unit": "s",
        "kind": Kind.MEASURED.value,
        "available": False,
        "reason": "",
        "timing": None,
    }
    try:
        measured = timing.measure(
            dispatch_runner(),
            samples=plan.samples,
            min_sample_seconds=plan.min_sample_s,
            budget_seconds=plan.budget_s,
            method="jax: scalar add, block after every call",
        )
    except Exception as exc:
        entry["reason"] = f"dispatch timing failed: {failure_reason(exc)}"
        return entry
    floor = measured.per_call.min
    entry.update(value=floor, available=True, timing=measured.to_json())
    try:
        pipelined = timing.measure(
            dispatch_runner(enqueued=True), samples=plan.samples,
            min_sample_seconds=plan.min_sample_s, budget_seconds=plan.budget_s,
            method="jax: scalar add, n calls enqueued, block once on the last")
        entry.update(enqueued=pipelined.per_call.min, timing_enqueued=pipelined.to_json())
    except Exception as exc:  # the blocking floor stands alone
        entry["enqueued_reason"] = f"enqueued dispatch timing failed: {failure_reason(exc)}"
    try:
        entry["by_buffers"] = _by_buffers(plan)
    except Exception as exc:  # the floor of one buffer stands alone
        entry["by_buffers_reason"] = f"dispatch by buffers failed: {failure_reason(exc)}"
    say(f"dispatch: {floor * 1e6:.3g} us per call"
        + (f", {entry['enqueued'] * 1e6:.3g} us enqueued" if entry.get("enqueued") else ""))
    return entry


#: Arguments of the calls that time what each buffer a call passes adds to its dispatch.
BUFFER_COUNTS = (1, 32, 128)


def _by_buffers(plan: Plan) -> list[dict[str, Any]]:
    """The enqueued dispatch of a call by the buffers it passes: a jitted sum of k float32
    scalars (k arguments and one result) for k in :data:`BUFFER_COUNTS`, calls enqueued and
    blocked once. jax handles each argument and result of a call on the host (flattening,
    checks, a buffer made for each result): a training step passing hundreds of parameters
    and optimizer states pays it for each. One record per k: ``buffers`` (k + 1) and
    ``enqueued`` (seconds per call, the fastest sample)."""
    import jax
    import jax.numpy as jnp

    out: list[dict[str, Any]] = []
    for k in BUFFER_COUNTS:
        args = [jax.device_put(jnp.float32(i)) for i in range(k)]
        add = jax.jit(lambda *xs: sum(xs[1:], xs[0]))

        def run(n: int, add: Any = add, args: list[Any] = args) -> None:
            timing.enqueue_held(lambda: add(*args), n)

        measured = timing.measure(run, samples=plan.samples, min_sample_seconds=plan.min_sample_s,
                                  budget_seconds=plan.budget_s,
                                  method=f"jax: sum of {k} scalars, n calls enqueued, block once")
        out.append({"buffers": k + 1, "enqueued": measured.per_call.min,
                    "timing": measured.to_json()})
    return out


# ----------------------------------------------------------------------------------- launch

LAUNCH_CHAIN = 33  # steps of the long program; the short one has one
# On an accelerator a call's dispatch overlaps the device's work (calls enqueued): the long
# program must keep the device busier than the host, or both programs time the host alone.
LAUNCH_CHAIN_ACCELERATOR = 1025


def _launch_program(steps: int, *, barriers: bool = False) -> Callable[[Any], Any]:
    """``steps`` row-wise max-subtractions of a tiny array: each a reduction feeding an
    elementwise op, which the CPU compiler keeps as separate kernels in sequence. XLA's GPU
    compiler fuses the whole chain into one kernel (an H200, jax 0.11.2: one kernel for 33
    steps); with ``barriers`` each step ends at an optimization barrier, which no fusion
    crosses."""
    import jax
    import jax.numpy as jnp

    def program(x: Any) -> Any:
        for _ in range(steps):
            x = x - 0.5 * jnp.max(x, axis=-1, keepdims=True)
            if barriers:
                x = jax.lax.optimization_barrier(x)  # type: ignore[no-untyped-call]
        return x

    return program


def launch_entry(plan: Plan, say: Progress) -> dict[str, Any]:
    """The time one more kernel adds inside one compiled program, apart from the per-call
    dispatch: (t(long) - t(short)) / (kernels(long) - kernels(short)), both programs on an 8x8
    float32 array (nothing to stream), kernel counts read from their optimized HLO. Where the
    compiler fuses the long chain into as few kernels as the short one, the chain is measured
    again with its steps apart (``barriers`` in the entry: :func:`_launch_program`)."""
    import jax
    import jax.numpy as jnp

    from roofline_report.hlo import inspect_compiled

    entry: dict[str, Any] = {"value": None, "unit": "s", "kind": Kind.MEASURED.value,
                             "available": False, "reason": "", "kernels": [],
                             "timing": None, "timing_short": None}
    try:
        x = jax.device_put(jnp.full((8, 8), 0.1, dtype=jnp.float32))

        long_chain = LAUNCH_CHAIN if jax.default_backend() == "cpu" else LAUNCH_CHAIN_ACCELERATOR

        def chain(barriers: bool) -> list[tuple[int, Any]]:
            runs = []
            for steps in (1, long_chain):
                compiled = jax.jit(_launch_program(steps, barriers=barriers)).lower(x).compile()
                kernels = int(inspect_compiled(str(compiled.as_text()))["kernels"])
                measured = timing.time_jitted(compiled, (x,), quick=False,
                                              samples=plan.samples,
                                              min_sample_seconds=plan.min_sample_s)
                runs.append((kernels, measured))
            return runs

        runs = chain(False)
        if runs[1][0] <= runs[0][0]:  # fused into one kernel: steps apart at barriers
            runs = chain(True)
            entry["barriers"] = True
    except Exception as exc:
        entry["reason"] = f"launch timing failed: {failure_reason(exc)}"
        return entry
    (k_short, short), (k_long, long) = runs
    entry["kernels"] = [k_short, k_long]
    entry["timing_short"] = short.to_json()
    entry["timing"] = long.to_json()
    if k_long <= k_short:
        entry["reason"] = (f"the compiler fused the chain ({k_long} kernels against "
                           f"{k_short}): no launch cost to measure")
        return entry
    if long_chain == LAUNCH_CHAIN:
        value = (long.per_call.min - short.per_call.min) / (k_long - k_short)
    else:  # the host dispatches while the device runs: the long call is the device's time
        value = long.per_call.min / k_long
        entry["method"] = "long"
    if value <= 0:
        entry["reason"] = "the longer program was not slower: launch cost below the noise"
        return entry
    entry.update(value=value, available=True)
    say(f"launch: {value * 1e6:.3g} us per kernel ({k_long} against {k_short} kernels)")
    return entry


# ------------------------------------------------------------------------------ split launch

SPLIT_ROW = 1024  # float32 elements per row of the split-launch ceiling's arrays
SPLIT_MAX_ROWS = 4096  # 16 MiB: past it no kernel this small is worth splitting


def _scaled(x: Any) -> Any:
    return x * 2.0 + 1.0


def _split_parts(rows: int) -> tuple[Any, Any, int]:
    """(compiled x * 2 + 1 on a float32 [rows, SPLIT_ROW] array, the array, the parts XLA
    split its kernel into: 1 when it did not)."""
    import jax
    import jax.numpy as jnp

    from roofline_report.hlo.ir import parse_module
    from roofline_report.hlo.kernels import partitions

    x = jax.device_put(jnp.full((rows, SPLIT_ROW), 0.1, dtype=jnp.float32))
    compiled = jax.jit(_scaled).lower(x).compile()
    module = parse_module(str(compiled.as_text()))
    parts = max((partitions(i) for _, i in module.instructions()), default=1)
    return compiled, x, parts


def _blocking_runner(compiled: Any, x: Any) -> timing.Runner:
    def run(n: int) -> None:
        for _ in range(n):
            timing.block(compiled(x))

    return run


def split_launch_entry(plan: Plan, say: Progress) -> dict[str, Any]:
    """What splitting a kernel across worker threads adds to it: an elementwise kernel
    (x * 2 + 1, float32 rows of SPLIT_ROW) at the fewest rows XLA:CPU splits it (found by
    bisection over the compiled HLO's ``outer_dimension_partitions``) less the same kernel one
    row smaller, which it runs on one thread, each call blocked on before the next, so that the
    worker threads have gone idle as they do between a program's split kernels. The one row's
    more work is left in (4 KiB: under a microsecond).

    ``enqueued``: the same difference with the calls enqueued and blocked on once per sample,
    as programs are timed. The workers then find the next call's parts waiting before they go
    idle, and the split costs far less (on a 2-core CPU about 5 µs against 30–40 µs blocked);
    0 where the split kernel was not slower (the cost is below the noise)."""
    entry: dict[str, Any] = {"value": None, "unit": "s", "kind": Kind.MEASURED.value,
                             "available": False, "reason": "", "rows": [], "parts": 1,
                             "timing": None, "timing_unsplit": None}
    built: dict[int, tuple[Any, Any, int]] = {}  # by rows: each size compiled once

    def split(rows: int) -> tuple[Any, Any, int]:
        if rows not in built:
            built[rows] = _split_parts(rows)
        return built[rows]

    try:
        low, high = 1, SPLIT_MAX_ROWS
        *_, parts = split(high)
        if parts < 2:
            entry["reason"] = (f"the compiler split no kernel of up to {high} rows of "
                               f"{SPLIT_ROW} float32: no split to measure")
            return entry
        while high - low > 1:  # invariant: `high` rows split, `low` rows (or fewer) do not
            middle = (low + high) // 2
            if split(middle)[2] > 1:
                high = middle
            else:
                low = middle
        runs = []
        for rows in (low, high):
            compiled, x, parts = split(rows)
            runs.append(timing.measure(
                _blocking_runner(compiled, x), samples=plan.samples,
                min_sample_seconds=plan.min_sample_s, budget_seconds=plan.budget_s,
                method=f"jax: x * 2 + 1 on float32[{rows}, {SPLIT_ROW}], block after every "
                       "call"))
    except Exception as exc:
        entry["reason"] = f"split-launch timing failed: {failure_reason(exc)}"
        return entry
    unsplit, whole = runs
    entry.update(rows=[low, high], parts=parts, timing_unsplit=unsplit.to_json(),
                 timing=whole.to_json())
    _enqueued(entry, [split(rows) for rows in (low, high)], plan)
    value = whole.per_call.min - unsplit.per_call.min
    if value <= 0:
        entry["reason"] = ("the split kernel was not slower than the one a row smaller: "
                           "splitting costs below the noise")
        return entry
    entry.update(value=value, available=True)
    say(f"split launch: {value * 1e6:.3g} us more for a kernel split {parts} ways "
        f"({high} rows against {low})"
        + (f", {entry['enqueued'] * 1e6:.3g} us enqueued" if "enqueued" in entry else ""))
    return entry


def _enqueued(entry: dict[str, Any], built: list[tuple[Any, Any, int]], plan: Plan) -> None:
    """The split launch with the calls enqueued (see :func:`split_launch_entry`) into
    ``entry``: ``enqueued`` and both timings, or ``enqueued_reason``."""
    try:
        # Timed as a program is: calls enqueued, one block on the last per sample.
        runs = [timing.time_jitted(compiled, (x,), quick=False, samples=plan.samples,
                                   min_sample_seconds=plan.min_sample_s,
                                   budget_seconds=plan.budget_s)
                for compiled, x, _ in built]
    except Exception as exc:  # the blocking floor stands alone
        entry["enqueued_reason"] = f"enqueued split-launch timing failed: {failure_reason(exc)}"
        return
    unsplit, whole = runs
    entry.update(enqueued=max(0.0, whole.per_call.min - unsplit.per_call.min),
                 timing_enqueued=whole.to_json(), timing_unsplit_enqueued=unsplit.to_json())
