"""Throughput of transcendental functions and dtype conversions, measured (imports jax when run).

A kernel of exp, tanh or log is limited neither by multiply-adds (XLA counts transcendentals
apart from flops) nor, when its data sit in cache, by memory: by how many of those functions the
device evaluates per second. Likewise a bfloat16 kernel on a CPU that computes in float32 pays
for the conversions. These ceilings let a prediction charge such kernels for what they do.

Each kernel applies its operation to a float array held in cache (64 Ki elements), ``reps``
times inside one jitted call (a ``fori_loop`` carrying the array, so each application depends on
the previous one and none can be hoisted or fused away), so the work per call dwarfs dispatch:

* ``exp``: x <- exp(-x); ``tanh``: x <- tanh(x); ``log``: x <- log(x + 2); ``sine``:
  x <- sin(x + 2) (its arguments between 1 and 3; cosine shares its rate): each one evaluation
  per element (the negation or the add is one flop beside it). On a 2-core CPU a sine ran 4
  to 6 times slower than an exp, and slower still on large arguments (0.2 G/s from 300 up,
  0.5 below 1, standing alone);
* the functions XLA expands into longer code than the one each would otherwise be priced by,
  in float32 only (:data:`FUNCTIONS`; a CPU computes them in float32 for a 16-bit kernel too,
  after converting its elements, and those conversions are priced apart):
  ``log1p``: x <- log1p(x + 1); ``expm1``: x <- expm1(-x) + 1; ``power``: x <- (x + 1) ** 0.7;
  ``tan``: x <- tan(1 - x) / 2; ``atan2``: x <- atan2(1.3, x); each has a fixed point
  between 0.3 and 2.4, so that no argument drifts into a shortcut. On the 2-core CPU this was
  built on (jax 0.10.2, 64 Ki elements) they ran at 1.41 (log1p), 1.55 (expm1), 0.27 (power),
  0.38 (tan) and 0.19 G/s (atan2), where the rates they were priced at before (log's, exp's,
  tanh's) read 2.9 to 5.3 G/s: a softplus priced at log's rate was predicted at half its
  time. A power with a constant base and an array exponent (``base ** x``) ran at 0.58 G/s
  there, twice as fast as the form measured here (an array base, a constant exponent:
  ``x ** 0.7``);
* ``convert``: x <- float32(bfloat16(x)) · c, two conversions per element;
* ``multiply-add``: x <- x · c + d applied :data:`FMA_CHAIN` times in a row, two flops per
  element each: the rate of elementwise arithmetic, the compute roof of work that is not a
  matrix product (a matmul's peak is far above it). One multiply-add per element per pass
  would measure the cache's bandwidth instead (2 flops per 8 bytes moved); a chain fused into
  one loop does several per element loaded, so arithmetic, not the cache, bounds it.

* ``reduce``: ``sum(x, axis=-1)`` over float32 rows of :data:`REDUCE_COLUMNS`, once per call,
  by size (a few KiB to past the last-level cache): a reduction runs through library code whose
  fixed cost per kernel dominates small arrays and whose streaming rate differs from a copy's,
  so its rate is measured by size, as a matmul's is. Each point records its time per call
  (dispatch included: the analysis takes the dispatch floor off) and the elements it reduced.
  On a CPU the sizes up to :data:`REDUCE_ALONE_BYTES` are timed a second way too: the same
  call with a row of zeros in place of the sum (the same buffers in and out, a kernel that
  reads nothing; not ``x[:, 0]``, which XLA:CPU ran in 9.5 and 11.8 µs on bfloat16 arrays of
  256 K and 512 K elements, growing with them, where the zeros took 4.1 to 4.4), its time
  ``alone``. A small reduction's call is mostly its
  dispatch, and under one and a half dispatch floors a point is otherwise left out; the
  call less ``alone`` is the reduction's own time at any size (on the 2-core CPU this was
  built on, the row sum of 32 K floats took 5.1 µs a call against 3.6 µs of dispatch, so
  its point was left out and the 64 K point, split across the cores, priced it).
  Where the plan has bfloat16, the same over bfloat16 rows too (arrays of the same bytes): on a
  CPU XLA fuses the widening of each element into the library reduction's loads, which reads
  half the bytes and converts as it adds. On the 2-core CPU this was built on, a bfloat16 row
  sum of [1024, 1024] took 23 to 39 µs, where its conversions alone at the conversion kernel's
  rate take 35 to 40.

Rates are operations per second from the fastest sample, as for every ceiling. On a CPU each
entry records the worker threads its kernel ran on (``threads``: XLA splits the 64 Ki-element
loop across the cores). On a CPU the float32 functions, the multiply-add and the conversion
are measured a second time over :data:`ONE_THREAD_ELEMENTS` elements, a loop XLA leaves on
one worker thread (``(one thread)``): a kernel XLA leaves on one thread (a recurrent cell's
step inside a loop) takes those rates. One thread does more than its share of two: on the
2-core CPU this was built on an exp ran at 3.0 G/s on one and 4.5 to 5.1 split in two, the
multiply-add chain at 115 to 121 GFLOP/s on one and 111 split (2,048 elements: XLA splits
the chain's loop of 4,096 across the cores). Where no such rate was measured, a kernel on
fewer threads takes that share of the split rate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from roofline_report.errors import reason
from roofline_report.observe import timer as timing

Progress = Callable[[str], None]
ELEMENTS = 1 << 16
FMA_CHAIN = 8  # multiply-adds per element per pass of the multiply-add kernel
REDUCE_COLUMNS = 1024  # elements per row of the reduction kernel
# Functions measured in float32 only (see the module docstring).
FUNCTIONS = ("log1p", "expm1", "power", "tan", "atan2")
OPS_PER_ELEMENT = {"exp": 1, "tanh": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "sine": 1, "convert": 2,
                   "multiply-add": 2 * FMA_CHAIN, **{f: 1 for f in FUNCTIONS}}


@dataclass(frozen=True, slots=True)
class RatePlan:
    """Which operations in which dtypes, elements per application, operations per call."""

    transcendentals: tuple[str, ...]
    dtypes: tuple[str, ...]
    elements: int
    ops_per_call: int
    samples: int
    min_sample_s: float
    reduce_sizes: tuple[int, ...] = ()  # bytes of the reduction kernel's array; () for none
    functions: tuple[str, ...] = ()  # measured in float32 only (FUNCTIONS)
    # Measured again in float32 over ONE_THREAD_ELEMENTS, a loop XLA:CPU leaves on one
    # worker thread (a CPU's only; () for none).
    one_thread: tuple[str, ...] = ()
    # The reduction's sizes (bytes) up to this one are also timed without the reduction
    # (``alone``: see the module docstring); 0 for none.
    reduce_alone_bytes: int = 0


def rate_plan(backend: str, *, quick: bool) -> RatePlan:
    """exp/tanh/log/sqrt/rsqrt/sine in float32 and bfloat16, the :data:`FUNCTIONS` in float32
    and the float32<->bfloat16 conversion;
    2^25 (CPU) or 2^30 (accelerators) operations per call; the row reduction from 64 KiB to
    64 MiB by 2 (CPU) or 1 MiB to 1 GiB by 4. Quick mode: float32 only, a quarter of the
    operations per call, the reduction by 16.

    A CPU's sizes step by 2 because its reduction's time jumps between them: XLA:CPU's
    reduction of ``[R, 1024]`` float32 runs on one core up to 32 K elements (about 1.8 µs
    past its dispatch on the 2-core machine this was measured on), and split across the
    cores from 64 K (about 7 µs: the split's own cost), so a roof read at 64 K elements
    charges a reduction of 32 K about twice its time. Pure."""
    per_call = (1 << 25) if backend == "cpu" else (1 << 30)
    first, last = (1 << 16, 1 << 26) if backend == "cpu" else (1 << 20, 1 << 30)
    return RatePlan(
        transcendentals=("exp", "tanh", "log", "sqrt", "rsqrt", "sine"),
        dtypes=("float32",) if quick else ("float32", "bfloat16"),
        elements=ELEMENTS if backend == "cpu" else ELEMENTS * 64,
        ops_per_call=per_call // 4 if quick else per_call,
        samples=5 if quick else 7,
        min_sample_s=timing.min_sample_for(backend != "cpu", 0.003 if quick else 0.005),
        reduce_sizes=timing.geometric(first, last, 16 if quick else 2 if backend == "cpu" else 4),
        functions=FUNCTIONS,
        one_thread=ONE_THREAD if backend == "cpu" else (),
        reduce_alone_bytes=REDUCE_ALONE_BYTES if backend == "cpu" else 0,
    )


# The reduction's sizes timed without it too (a CPU's): past 1 MiB its call is several
# dispatches long.
REDUCE_ALONE_BYTES = 1 << 20


# The operations measured on one worker thread too, and the elements of that loop.
ONE_THREAD = ("exp", "tanh", "log", "sqrt", "rsqrt", "sine", "multiply-add", "convert")
ONE_THREAD_ELEMENTS = 1 << 11


# The constant ``c`` each operation's step takes (0 where it takes none).
STEP_CONSTANT = {"log": 2.0, "sine": 2.0, "convert": -1.0, "multiply-add": -0.5, "log1p": 1.0,
                 "expm1": 1.0, "power": 1.0, "tan": 1.0, "atan2": 1.3}


def _step(op: str) -> Callable[[Any, Any], Any]:
    import jax.numpy as jnp
    from jax import lax

    if op == "exp":
        return lambda x, _c: jnp.exp(-x)
    if op == "tanh":
        return lambda x, _c: jnp.tanh(x)
    if op == "log":
        return lambda x, c: jnp.log(x + c)
    # sqrt and rsqrt apart: on a CPU XLA's rsqrt is a square root and a division, several
    # times slower than the square root alone. Both converge to 1 from 0.5.
    if op == "sqrt":
        return lambda x, _c: jnp.sqrt(x)
    if op == "rsqrt":
        return lambda x, _c: lax.rsqrt(x)
    if op == "sine":  # arguments from 1 to 3: past the smallest ones' shortcut
        return lambda x, c: jnp.sin(x + c)
    if op == "log1p":
        return lambda x, c: jnp.log1p(x + c)
    if op == "expm1":
        return lambda x, c: jnp.expm1(-x) + c
    if op == "power":
        return lambda x, c: jnp.power(x + c, jnp.asarray(0.7, x.dtype))
    if op == "tan":
        return lambda x, c: jnp.tan(c - x) * jnp.asarray(0.5, x.dtype)
    if op == "atan2":
        return lambda x, c: jnp.arctan2(c, x)
    if op == "convert":
        return lambda x, c: x.astype(jnp.bfloat16).astype(jnp.float32) * c
    if op == "multiply-add":
        def chain(x: Any, c: Any) -> Any:
            for _ in range(FMA_CHAIN):
                x = x * c + jnp.asarray(0.25, x.dtype)
            return x

        return chain
    raise ValueError(f"unknown operation {op!r}")


def _entry(op: str, dtype: str, plan: RatePlan, *, one_thread: bool = False
           ) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    ops = OPS_PER_ELEMENT[op]
    elements = ONE_THREAD_ELEMENTS if one_thread else plan.elements
    reps = max(1, plan.ops_per_call // (ops * elements))
    name = f"{op} {dtype}" if op != "convert" else "convert float32<->bfloat16"
    entry: dict[str, Any] = {
        "name": f"{name} (one thread)" if one_thread else name,
        "op": op, "dtype": dtype, "unit": "1/s", "kind": "measured", "value": None,
        "available": False, "reason": "", "elements": elements, "reps": reps,
        "ops_per_call": ops * elements * reps, "timing": None,
    }
    step = _step(op)
    kind = jnp.dtype(dtype)

    def kernel(x: Any, c: Any) -> Any:
        return lax.fori_loop(0, reps, lambda _i, y: step(y, c).astype(kind), x)

    try:
        x = timing.block(jnp.full((elements,), 0.5, dtype=kind))
        c = jnp.asarray(STEP_CONSTANT.get(op, 0.0), dtype=kind)
        compiled = jax.jit(kernel).lower(x, c).compile()

        def run(n: int) -> None:
            timing.enqueue(lambda: compiled(x, c), n, x.nbytes)

        measured = timing.measure(run, samples=plan.samples,
                                  min_sample_seconds=plan.min_sample_s,
                                  method="jax: a fori_loop of the operation per call, "
                                         "n calls enqueued")
    except Exception as exc:
        entry["reason"] = f"{entry['name']} failed: {reason(exc)}"
        return entry
    threads = kernel_threads(compiled)
    if one_thread and threads != 1:
        entry["reason"] = (f"{entry['name']}: XLA ran the loop of {elements} elements on "
                           f"{threads or 'an unknown number of'} threads, not one")
        return entry
    entry.update(value=entry["ops_per_call"] / measured.per_call.min, available=True,
                 timing=measured.to_json())
    if threads is not None:
        entry["threads"] = threads
    return entry


def kernel_threads(compiled: Any) -> int | None:
    """The worker threads a compiled rate kernel runs on: on a CPU, XLA's split of its
    largest loop fusion (``outer_dimension_partitions``), at most the cores this process may
    use; None on an accelerator or where the compiled text cannot be read. A prediction prices
    a kernel XLA leaves on fewer threads at that share of the rate."""
    import jax

    from roofline_report.hlo.ir import parse_module
    from roofline_report.hlo.kernels import partitions
    from roofline_report.observe.trace import cores

    if jax.default_backend() != "cpu":
        return None
    try:
        module = parse_module(compiled.as_text())
    except Exception:
        return None
    parts = max((partitions(i) for c in module.computations.values()
                 for i in c.instructions if i.opcode == "fusion"), default=1)
    return max(1, min(parts, cores()))


def _reduce_entry(plan: RatePlan, dtype: str = "float32") -> dict[str, Any]:
    """The row reduction of ``dtype`` rows by size (see the module docstring); a size that
    fails ends the sweep, and the entry is unavailable only when no size worked."""
    import jax
    import jax.numpy as jnp

    kind = jnp.dtype(dtype)
    entry: dict[str, Any] = {
        "name": f"row reduction {dtype}", "op": "reduce", "dtype": dtype, "unit": "1/s",
        "kind": "measured", "value": None, "available": False, "reason": "",
        "elements": REDUCE_COLUMNS, "reps": 1, "ops_per_call": REDUCE_COLUMNS, "timing": None,
        "by_size": [],
    }
    compiled_sum = jax.jit(lambda x: jnp.sum(x, axis=-1))
    # Reads nothing, writes a row's worth; kept_unused so that the call still passes x.
    nothing = jax.jit(lambda x: jnp.zeros(x.shape[:1], x.dtype), keep_unused=True)
    for size in plan.reduce_sizes:
        elements = size // kind.itemsize
        alone = None
        try:
            x = timing.block(jnp.ones((elements // REDUCE_COLUMNS, REDUCE_COLUMNS), kind))
            compiled = compiled_sum.lower(x).compile()
            measured = timing.time_jitted(compiled, (x,), quick=True, samples=plan.samples,
                                          min_sample_seconds=plan.min_sample_s)
            if size <= plan.reduce_alone_bytes:
                without = timing.time_jitted(nothing.lower(x).compile(), (x,), quick=True,
                                             samples=plan.samples,
                                             min_sample_seconds=plan.min_sample_s)
                alone = without.per_call.min
        except Exception as exc:
            entry["reason"] = f"{entry['name']} of {size} B failed: {reason(exc)}"
            break
        seconds = measured.per_call.min
        entry["by_size"].append({"elements": elements, "bytes": size, "seconds": seconds,
                                 "value": elements / seconds,
                                 **({"alone": alone} if alone is not None else {})})
        if entry["value"] is None or elements / seconds > entry["value"]:
            entry.update(value=elements / seconds, ops_per_call=elements,
                         timing=measured.to_json())
    entry["available"] = bool(entry["by_size"])
    return entry


def measure_rates(plan: RatePlan, say: Progress | None = None) -> list[dict[str, Any]]:
    """One entry per (operation, dtype), one for the conversion and one for the row reduction
    (where the plan has sizes); never raises for a measurement failure (the entry is
    unavailable with its reason).

    Every entry is measured in :data:`ROUNDS` rounds, a whole pass over the operations apart,
    with the plan's samples split between them, and keeps its best round (a row reduction,
    its best round at each size): a burst of load elsewhere on a shared machine slows the
    samples of one window, rarely those of two."""
    tell = say or (lambda _m: None)
    per_round = replace(plan, samples=max(MIN_ROUND_SAMPLES, -(-plan.samples // ROUNDS)))
    rounds = [_one_round(per_round) for _ in range(ROUNDS)]
    entries = [_best_round([r[i] for r in rounds]) for i in range(len(rounds[0]))]
    for e in entries:
        if e["available"]:
            unit = "G elements/s" if e["op"] == "reduce" else "G/s"
            tell(f"{e['name']}: {'up to ' if e['op'] == 'reduce' else ''}"
                 f"{e['value'] / 1e9:.3g} {unit}")
    return entries


ROUNDS = 2
MIN_ROUND_SAMPLES = 3


def _one_round(plan: RatePlan) -> list[dict[str, Any]]:
    entries = [_entry(op, dtype, plan)
               for op in (*plan.transcendentals, "multiply-add") for dtype in plan.dtypes]
    entries += [_entry(op, "float32", plan) for op in plan.functions]
    entries.append(_entry("convert", "float32", plan))
    if plan.reduce_sizes:
        entries += [_reduce_entry(plan, dtype) for dtype in plan.dtypes]
    entries += [_entry(op, "float32", plan, one_thread=True) for op in plan.one_thread]
    return entries


def _best_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the highest rate; for a rate by size, each size's fastest round."""
    available = [r for r in rounds if r["available"]]
    if not available:
        return rounds[0]
    best = dict(max(available, key=lambda r: r["value"]))
    if best.get("by_size"):
        by_size: dict[int, dict[str, Any]] = {}
        for r in available:
            for point in r["by_size"]:
                kept = by_size.get(point["elements"])
                if kept is None or point["seconds"] < kept["seconds"]:
                    by_size[point["elements"]] = point
        best["by_size"] = [by_size[k] for k in sorted(by_size)]
        best["value"] = max(p.get("value", best["value"]) for p in best["by_size"])
    return best
