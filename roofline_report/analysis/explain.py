"""Why a prediction missed, from the evidence (no jax).

A program above its prediction (it ran faster than its prediction allows), or one whose
prediction is off by a factor of :data:`OFF` or more either way (:func:`off`), gets a reason
built from the numbers at hand, never silence:

* **slow kernels**: slower, and the profiler trace shows a few kernels (at most
  :data:`NAMED_KERNELS`) that account for most of the gap between their measured and predicted
  times: they run far below their roofs (a code path slower than the roofs it was held to);
* **fast kernels**: faster, and a few kernels (at most :data:`NAMED_KERNELS`) account for
  most of the time their predictions exceed their measured times: each is named with the roof
  it was held to, which does not describe it;
* **unstable**: the measurement's spread (IQR ÷ median) is over 10%, so the median itself moves;
* **cache level**: faster than predicted while the bytes were charged to main memory, although
  they would fit the last-level cache;
* **evicted from the cache**: slower, with the program's data at its peak larger than the
  last-level cache, and kernels priced at a cache's roof that ran at about main memory's rate
  (from :data:`EVICTED_BELOW` times below it to :data:`EVICTED_MARGIN` times it) account for
  at least half of the time the kernels took beyond their predictions: each kernel is priced
  on its own working set, as if its operands were still in the cache, while the program's
  other arrays, between one kernel and the next or between calls, pushed them out;
* **passes over main memory**: slower, and kernels that read their input more than once (a
  fusion that reduces its input and then uses the results on it: :mod:`.read_passes`), with
  an input larger than the last-level cache, would take at least half of the time the program
  took beyond its prediction more, were each pass to read main memory at its roof, without
  then taking more than :data:`PASSES_OVER` times the measured time (the model prices the
  later passes at the row reduction's roof, one after another with the rest of the kernel's
  work: :func:`~roofline_report.analysis.past_the_cache.passes_in_series`);
* **fresh pages**: slower, and while it was timed the process took page faults (counted:
  the operating system mapping new pages, as when the allocator serves a call's outputs
  anew) whose cost at the measured page-fault floor is at least :data:`FAULT_SHARE` of the
  miss;
* **unfused intermediates**: slower, and the compiled program moves at least 1.5× the bytes the
  prediction charged (XLA's bytes accessed against the bytes priced);
* **launch-bound**: slower, with many kernels for the work, launches the largest term;
* **dispatch-bound**: faster than the overhead alone (dispatch and launches), which the
  prediction takes from separate measurements of the floor: the floor itself moved;
* **conversions**: slower, a bfloat16 program on a backend that computes bfloat16 in float32;
* **drift**: the run's speed check found the machine slower (or faster) after its programs
  were timed than when its ceilings were measured, by :data:`~roofline_report.analysis
  .speed_drift.DRIFT` or more, the way the program missed and for at least a quarter of the
  miss (:meth:`~roofline_report.analysis.speed_drift.Drift.explains`);
* **loop**: the program runs a loop, whose bodies may not overlap as the model assumes;
* **slow kernels of one kind**: slower, no reason above holds, and the kernels of one kind
  (their pattern, else their category) account for at least half of the time the kernels
  took beyond their predictions, where no few kernels do (a decode step's eight transposing
  copies of its caches): they are counted, named by the slowest, with their times;
* otherwise **unknown**, with the direction of the miss;

and a program above its prediction says so first (**above its prediction**: a rate lower than
it met, or for a program bound by its dispatch and launches a floor higher than its call
took). A kernel's own reason
(:func:`kernel_reason`) names the roof it was held to and how far below it ran, and says so
when its kind of kernel has no roof of its own or its time moved between the traced calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline_report.analysis.kernel_records import KernelRow
from roofline_report.analysis.measuring_load import Load
from roofline_report.analysis.miss import AS_PREDICTED, Miss
from roofline_report.analysis.predict import Prediction, faults_charged
from roofline_report.analysis.read_passes import MultiPass
from roofline_report.analysis.speed_drift import Drift
from roofline_report.analysis.stats import Stats
from roofline_report.backends import Backend
from roofline_report.kinds import Kind
from roofline_report.text import decimal, miss_text, percent_text
from roofline_report.units import format_binary, format_si

OFF = 2.0  # a prediction this many times the measured time, or a measured time this many
# times the prediction, is off and gets a reason
NAMED_KERNELS = 3  # at most this many kernels are named as the cause of a miss
# A kernel whose third-quartile time over the traced calls exceeds its first by this factor
# has a time that does not hold still: its reason says so.
UNSTEADY_KERNEL = 1.5
# Page faults counted while a program was timed explain its miss when they cost at least this
# share of it (and a twentieth of its time).
FAULT_SHARE = 0.25
# A kernel priced at a cache's roof that ran no faster than EVICTED_MARGIN times main memory's
# roof and no slower than EVICTED_BELOW times below it ran at about main memory's rate (a
# kernel far below it is slow for another reason).
EVICTED_MARGIN = 1.25
EVICTED_BELOW = 2.5
# Passes over main memory explain a miss only where they do not overshoot the measured time by
# more than this factor (a kernel that makes its passes a row at a time reads the cache).
PASSES_OVER = 1.5


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a program's reason may draw on."""

    backend: Backend
    dtype: str
    timing: Stats | None = None
    xla_bytes: float | None = None
    kernels: int = 1
    loops: bool = False
    cache_bytes: int | None = None
    rows: Sequence[KernelRow] = ()
    page_faults: float | None = None  # counted per call while the program was timed
    fault_s: float | None = None  # the measured cost of one (the page-fault floor)
    drift: Drift | None = None  # the run's speed check, where its roofs are the measured ones
    # The program's data at its peak (bytes: the compiler's peak memory, else its arguments,
    # outputs and temporaries together); None where not known.
    footprint: float | None = None
    # The roof a program meets in main memory (its name and B/s); None without one.
    main_roof: tuple[str, float] | None = None
    # Its kernels that read their input more than once (:mod:`.read_passes`).
    multi_pass: Sequence[MultiPass] = ()
    # The machine's load while it was timed (None: not read).
    load: Load | None = None


# The reason of a miss with no evidence of a cause begins so, by its direction.
UNKNOWN_SLOWER = "unknown: slower than predicted"
UNKNOWN_FASTER = "unknown: faster than predicted"


def off(m: Miss) -> bool:
    """Whether the prediction is off by a factor of :data:`OFF` or more, either way: a kernel
    twice as slow as predicted is as far off as one twice as fast (the error relative to the
    measured time, 0.5 against 1.0, would tell them apart)."""
    return m.ratio >= OFF or m.ratio <= 1.0 / OFF


def above_roof(prediction: Prediction, measured: float) -> bool:
    """Faster than the prediction by more than :data:`~roofline_report.analysis.miss
    .AS_PREDICTED`: above the roof its prediction used."""
    return measured * (1.0 + AS_PREDICTED) < prediction.seconds


def program_reason(prediction: Prediction, m: Miss, e: Evidence) -> str:
    """'' when the prediction is not :func:`off` and the program is not above it; else
    the likeliest reasons, most specific first, joined by '; '."""
    above = above_roof(prediction, m.measured)
    if not off(m) and not above:
        return ""
    slower = m.measured > m.predicted
    reasons: list[str] = []
    if slower and prediction.lower_bound:  # the most specific cause: said first
        reasons.append("unknown trip count: a while loop that stops on data, counted once "
                       "without a trace, so the prediction is a lower bound")
    if slower and prediction.unpriced:
        reasons.append("work not priced: " + ", ".join(prediction.unpriced)
                       + ": the roofs it was priced on hold no such rate, so the prediction "
                       "leaves that work out")
    if slower:
        reasons += _slow_kernels(e.rows)
    else:
        reasons += _fast_kernels(e.rows)
    if slower and e.page_faults and e.fault_s:
        cost = e.page_faults * e.fault_s
        if cost >= FAULT_SHARE * (m.measured - m.predicted) and cost >= m.measured / 20:
            charged = _faults_charged(prediction, e.rows)
            reasons.append(
                f"fresh pages: while it was timed the process took "
                f"{decimal(e.page_faults, 3)} page faults a call (counted), "
                f"{format_si(cost, 's')} at the measured cost of a first write to a fresh page"
                + (f" ({format_si(charged, 's')} of them predicted)" if charged else
                   ", none predicted")
                + ": the allocator served its arrays with new pages")
    if slower and e.load is not None and e.load.loaded:
        reasons.append(under_load(e.load))
    if e.timing is not None and e.timing.unstable:
        reasons.append(f"unstable: the timing's spread is {percent_text(e.timing.spread)}")
    moved = prediction.bytes
    main = e.backend.main_memory
    if not slower and main in prediction.level.split(", ") and e.cache_bytes and moved \
            and moved < e.cache_bytes:
        reasons.append("cache level: the bytes were charged to main memory but would fit the "
                       "last-level cache")
    if slower:
        reasons += _evicted(e)
        reasons += _passes(e, m.measured - m.predicted, m.measured)
    if slower and e.xla_bytes is not None and moved and e.xla_bytes >= 1.5 * moved:
        reasons.append(f"unfused intermediates: the compiled program accesses "
                       f"{decimal(e.xla_bytes / moved, 3)}× the bytes charged")
    overhead = prediction.group_seconds("overhead")
    if slower and e.kernels > 1 and prediction.binding.group == "overhead":
        reasons.append(f"launch-bound: {e.kernels} kernels, each with a cost the model takes "
                       "from one measured chain")
    if not slower and overhead and m.measured < overhead:
        reasons.append(f"dispatch-bound: the call took {format_si(m.measured, 's')}, under the "
                       f"{format_si(overhead, 's')} of dispatch and launches the model takes "
                       "from its own measurements of the floor, which moved between them")
    if slower and e.backend.converts_bfloat16 and e.dtype == "bfloat16":
        reasons.append(f"conversions: the {e.backend.title} computes bfloat16 in float32, "
                       "converting every operand and result")
    if e.drift is not None and e.drift.explains(m.predicted, m.measured):
        reasons.append(f"drift: {e.drift.words()}")
    if e.loops:
        reasons.append("loop: its iterations run one after the other, each with its own "
                       "launches")
    if not reasons and slower:
        # Nothing more specific: the kernels of one kind behind most of it, where there are.
        reasons += _slow_kind(e.rows)
    if not reasons and off(m):
        reasons.append(f"{UNKNOWN_SLOWER if slower else UNKNOWN_FASTER}, with no evidence of "
                       "a cause here")
    if above:
        # Said first: the program ran faster than the rates its prediction uses, whatever
        # else is off. The rate's own kind: only a measured one was "measured lower". A
        # program bound by its dispatch and launches beat floors, not a roof.
        kind = prediction.binding.kind
        if prediction.binding.group == "overhead":
            floor = ("a floor measured" if kind is Kind.MEASURED
                     else f"a {kind.label} floor")
            said = f"{floor} higher than this call took: the floors moved, not the roofs"
        else:
            rate = "a rate measured" if kind is Kind.MEASURED else f"a {kind.label} rate"
            said = f"{rate} lower than this program met"
        reasons.insert(0, f"above its prediction: it ran faster than its prediction allows "
                          f"({said})")
    return "; ".join(reasons)


def share_of_cores(load: Load) -> str:
    """'45% of the 2 cores': other processes' share of the machine over a span (its cores
    where known)."""
    cores = f" of the {load.cores} cores" if load.cores else " of the cores"
    return f"{percent_text(load.others_share or 0.0)}{cores}"


def under_load(load: Load) -> str:
    """'timed under load: other processes took 45% of the 2 cores while it was timed'."""
    return f"timed under load: other processes took {share_of_cores(load)} while it was timed"


def _faults_charged(prediction: Prediction, rows: Sequence[KernelRow]) -> float:
    """The page faults a prediction charges, per call: its kernels' fault terms (a program's
    own terms keep only each kernel's binding one), else its own."""
    return faults_charged([r.prediction for r in rows if r.prediction is not None]
                          or [prediction])


def _behind_most(gaps: Sequence[tuple[float, KernelRow]]) -> tuple[list[KernelRow], float]:
    """The few kernels (at most :data:`NAMED_KERNELS`) with the largest of ``gaps`` (each a
    kernel's part of a miss) and their share of all of them; none when no few explain half."""
    ranked = sorted(((g, r) for g, r in gaps if g > 0), key=lambda g: (-g[0], g[1].name))
    total = sum(g for g, _ in ranked)
    named = ranked[:NAMED_KERNELS]
    share = sum(g for g, _ in named) / total if total > 0 else 0.0
    return ([r for _, r in named], share) if named and share >= 0.5 else ([], share)


def _slow_kernels(rows: Sequence[KernelRow]) -> list[str]:
    """The few kernels of the trace behind most of the time the model did not predict, or
    nothing without per-kernel times or when no few of them explain half the gap."""
    # The gap of a kernel is its saving: measured − predicted, where it ran beyond its roof.
    named, share = _behind_most([(r.saving, r) for r in rows if r.saving])
    if not named:
        return []
    parts = ", ".join(
        f"{r.name} ({r.category}, {format_si(r.seconds, 's')} against "
        f"{format_si(r.prediction.seconds if r.prediction else None, 's')} predicted)"
        for r in named)
    return [f"slow kernels: {parts} account for {percent_text(share)} of the time the kernels "
            "took beyond their predictions: they run far below their roofs"]


def _slow_kind(rows: Sequence[KernelRow]) -> list[str]:
    """The kernels of one kind (their pattern, else their category) behind at least half the
    time the kernels took beyond their predictions, counted and named by the slowest (eight
    transposing copies of a key-value cache, each a few times its price): said where no
    other reason is, in place of 'unknown'; nothing where no kind is."""
    gaps = [(r.saving, r) for r in rows if r.saving and r.saving > 0]
    total = sum(g for g, _ in gaps)
    if total <= 0:
        return []
    kinds: dict[str, list[tuple[float, KernelRow]]] = {}
    for g, r in gaps:
        kinds.setdefault(r.pattern or r.category, []).append((g, r))
    kind, members = max(kinds.items(), key=lambda k: (sum(g for g, _ in k[1]), k[0]))
    share = sum(g for g, _ in members) / total
    if share < 0.5:
        return []
    members.sort(key=lambda m: (-m[0], m[1].name))
    measured = [r.seconds for _, r in members if r.seconds]
    predicted = [r.prediction.seconds for _, r in members if r.prediction is not None]
    if not measured or not predicted:
        return []
    return [f"slow kernels: {len(members)} {kind} kernels ({members[0][1].name} and "
            f"{len(members) - 1} more), {_span(measured)} each against {_span(predicted)} "
            f"predicted, account for {percent_text(share)} of the time the kernels took "
            "beyond their predictions: they run far below their roofs"]


def _span(seconds: Sequence[float]) -> str:
    """'0.7 ms to 4.2 ms', or one time where they are all one."""
    low, high = format_si(min(seconds), "s"), format_si(max(seconds), "s")
    return low if low == high else f"{low} to {high}"


def _fast_kernels(rows: Sequence[KernelRow]) -> list[str]:
    """The few kernels of the trace behind most of the time the model predicted and the
    kernels did not take, each with the roof it was held to, or nothing without per-kernel
    times or when no few of them explain half of it."""
    named, share = _behind_most([(r.prediction.seconds - r.seconds, r) for r in rows
                                 if r.prediction is not None and r.seconds])
    parts = ", ".join(
        f"{r.name} ({r.category}, {format_si(r.seconds, 's')} against "
        f"{format_si(r.prediction.seconds, 's')} predicted at its "
        f"{r.prediction.binding.label} roof, {r.prediction.binding.roof})"
        for r in named if r.prediction is not None)
    if not parts:
        return []
    return [f"fast kernels: {parts} account for {percent_text(share)} of the time the "
            "kernels' predictions exceed their measured times: they ran above the roofs they "
            "were held to, which do not describe them"]


def _evicted(e: Evidence) -> list[str]:
    """The eviction reason (see the module docstring), or nothing where the evidence for it is
    missing or does not hold."""
    if e.main_roof is None or not e.cache_bytes or not e.footprint \
            or e.footprint <= e.cache_bytes:
        return []
    roof, rate = e.main_roof
    main = e.backend.main_memory
    total = sum(r.saving or 0.0 for r in e.rows)
    # (row, its measured B/s, the levels it was priced at) of each kernel priced in a cache.
    cached = [(r, r.bytes / r.seconds, r.prediction.level.split(", ")) for r in e.rows
              if r.saving and r.seconds and r.bytes and r.prediction is not None
              and r.prediction.binding.group == "memory"
              and main not in r.prediction.level.split(", ")]
    evicted = [(r, b, lv) for r, b, lv in cached
               if rate / EVICTED_BELOW <= b <= EVICTED_MARGIN * rate]
    gap = sum(r.saving or 0.0 for r, _, _ in evicted)
    if total <= 0 or gap < 0.5 * total:
        return []
    rates = sorted(b for _, b, _ in evicted)
    levels = sorted({name for _, _, lv in evicted for name in lv})
    span = (format_si(rates[0], "B/s") if len(rates) == 1 or
            format_si(rates[0], "B/s") == format_si(rates[-1], "B/s")
            else f"{format_si(rates[0], 'B/s')} to {format_si(rates[-1], 'B/s')}")
    one = len(evicted) == 1
    at = (f"the {levels[0]} roof" if len(levels) == 1
          else f"the {', '.join(levels[:-1])} and {levels[-1]} roofs")
    return [f"evicted from the cache: {len(evicted)} {'kernel' if one else 'kernels'} priced "
            f"at {at} ran at {span}, about {main}'s rate ({roof}: "
            f"{format_si(rate, 'B/s')}), and the program's data at its peak "
            f"({format_binary(e.footprint)}) exceed the {format_binary(e.cache_bytes)} "
            f"last-level cache, so {'its' if one else 'their'} operands came back from "
            f"{main}: {percent_text(gap / total)} of the time the kernels took beyond their "
            "predictions"]


def _passes(e: Evidence, gap: float, measured: float) -> list[str]:
    """The reason of passes over main memory (see the module docstring), or nothing where the
    evidence for it is missing or does not hold. ``gap``: the time the program took beyond its
    prediction."""
    if e.main_roof is None or not e.cache_bytes or gap <= 0:
        return []
    roof, rate = e.main_roof
    big = [k for k in e.multi_pass if k.read_per_launch > e.cache_bytes]
    # Each kernel's time with every pass read from main memory, and what that adds to its
    # prediction.
    streamed = [(k, (k.passes * k.read + k.written) / rate) for k in big]
    extra = sum(max(0.0, t - k.predicted) for k, t in streamed)
    if extra < 0.5 * gap or measured + extra - gap > PASSES_OVER * measured:
        return []
    main = e.backend.main_memory
    parts = "; ".join(
        f"{k.name} reads its {format_binary(k.read_per_launch)} input {k.passes} times, and "
        f"{k.passes} reads and a write at the {roof} roof take {format_si(t, 's')} against "
        f"the {format_si(k.predicted, 's')} predicted"
        for k, t in streamed if t > k.predicted)
    one = sum(1 for k, t in streamed if t > k.predicted) == 1
    return [f"passes over {main}: {parts}; {'its input exceeds' if one else 'their inputs exceed'}"
            f" the {format_binary(e.cache_bytes)} last-level cache, so each pass that reads it "
            f"whole comes from {main} ({format_si(rate, 'B/s')}): "
            f"{percent_text(min(1.0, extra / gap))} of the time the program took beyond its "
            "prediction"]


PATTERN_WORDS = {"transpose": "a transposing copy", "loop-dot": "a dot outside the matmul "
                 "library", "strided-reduction": "a reduction along a non-minor axis",
                 "gather": "a gather", "scatter": "a scatter", "sort": "a sort",
                 "variadic-reduction": "a reduction of several operands (an argmax)",
                 "top-k": "a top-k",
                 "fused-transpose": "a transposing copy fused with other work",
                 "fft": "an FFT",
                 "interleaved-reduction": "a reduction over axes with a kept axis between "
                 "them (read a short run at a time)",
                 "broadcast-transpose": "a transposing copy fused with a broadcast",
                 "block-transpose": "a transposing copy moving whole runs",
                 "mat-vec": "a matrix-vector product outside the matmul library",
                 "vec-mat": "a few vectors times a matrix outside the matmul library",
                 "transposed-dot": "a dot with a transposed operand outside the matmul "
                 "library",
                 "reduce-window": "a windowed maximum outside the library (a max pool, or "
                 "its gradient keeping indices)",
                 "sum-window": "a windowed sum outside the library (a cumulative sum, an "
                 "average pool's gradient)",
                 "lone-convert": "a conversion of element type alone",
                 "lone-op": "one arithmetic operation alone in its kernel",
                 "normalization": "a layer norm of short rows in one library kernel"}


# Patterns whose roofs are measured on arrays in main memory, read at scattered places: a
# kernel of theirs that moves no main-memory bytes is not what they measured.
MAIN_MEMORY_PATTERNS = ("gather", "scatter")


def kernel_reason(r: KernelRow, peak: float | None = None) -> str:
    """A kernel's reason, when its prediction is :func:`off` or it ran above
    its roof: how far from which roof, a kind of kernel that has no roof of its own, and a
    measured rate above ``peak`` (the highest compute roof of the set), which no kernel can
    reach: its traced time then cannot hold all of its work."""
    p, m = r.prediction, r.miss
    if p is None or m is None:
        return ""
    if not off(m) and not above_roof(p, m.measured):
        return ""
    b = p.binding
    # Within 5% of its prediction a kernel is "as predicted" (it is here for running above
    # its roof); "as predicted than predicted" is no sentence.
    how = "as predicted" if m.direction == "as predicted" else f"{miss_text(m).text} than predicted"
    text = f"{how} at its {b.label} roof ({b.roof})"
    priced = any(t.group == "pattern" for t in p.terms)
    if r.pattern and not priced:
        text += (f"; no roof measured for this kind ({PATTERN_WORDS.get(r.pattern, r.pattern)})"
                 if m.direction == "slower" else "")
    elif r.pattern in MAIN_MEMORY_PATTERNS and priced and r.bytes == 0 \
            and any(t.group == "memory" and t.seconds > 0 for t in p.terms):
        # A TPU's gather of a table its compiler keeps on chip: no roof of its own.
        text += (f"; it moves no main-memory bytes (its operands stay on chip), while the "
                 f"{r.pattern} roofs were measured on arrays in main memory: no roof is "
                 "measured for this case, so that roof is a fallback here")
    elif r.uncosted and m.direction == "slower" and not priced:  # a top-k has its pattern's
        text += (f"; no roof measured for this kind ({', '.join(r.uncosted)}: its work is not "
                 "counted, only its bytes and its launch)")
    achieved = r.achieved
    if peak is not None and achieved is not None and achieved > peak:
        text += (f"; its {format_si(achieved, 'FLOP/s')} is above the highest compute roof "
                 f"({format_si(peak, 'FLOP/s')}), so its traced time cannot hold all of its "
                 "work: it ran beside other kernels and was given too small a share of that "
                 "time")
    if r.spread is not None and r.spread[0] > 0 and r.spread[1] / r.spread[0] > UNSTEADY_KERNEL:
        text += (f"; its time moved from {format_si(r.spread[0], 's')} to "
                 f"{format_si(r.spread[1], 's')} over the traced calls (first to third "
                 "quartile), so this miss is uncertain by as much")
    return text
