"""Which per-kernel time is a kernel's own cost? Each kernel compiled and timed alone, set
beside the two times a profiler trace of the whole program gives it.

    python benchmarks/kernels_alone.py [--setup module:function] [--kernels N] [--calls N]
                                       [--rounds N] [--budget SECONDS]

``--setup`` names a function returning ``(fn, args)`` or ``(fn, args, kwargs)``: default the
shipped training step, ``examples.transformer:setup``. The program is compiled once and traced
(``--calls`` calls per trace session, default 5). From the trace each kernel gets two times per
call of the program:

* **busy**: the summed durations of its own events (``hlo_op``): what the thread that ran its
  thunk spent in it;
* **span**: launch to completion, from its event's start to the end of its ``end:`` event
  (:func:`roofline_report.traces.events.kernel_times`), which includes any wait for busy worker
  threads when the thunk completes asynchronously;
* **queued**: the span less its wait, the time after its own event during which other
  kernels' events ran that ended before it completed (``wait_s``);
* **held**: its share of the machine over the queued time, the cores split between the
  kernels that ran at once by the threads each keeps busy alone (``share_s``): the samples
  whose first quartile the report takes as the kernel's time
  (:func:`roofline_report.analysis.kernels.kernel_seconds`).

A kernel **waits** when its median span exceeds its median busy time by more than 5%. The
``--kernels`` kernels (default 12) with the most span, as many with the most busy time and as
many with the most span among those that wait are each compiled **alone**: a fusion's fused
computation becomes the entry computation of an HLO module of its own (a kernel that is a
bare instruction is wrapped, with one parameter per operand), with the computations it calls;
the text goes through jaxlib's HLO parser, its HLO-to-StableHLO conversion and the client's
compiler (jaxlib 0.10: ``xla_client.hlo.hlo_module_from_text``,
``_xla.mlir.hlo_to_stablehlo``, ``Client.compile_and_load``). A bitcast that only reinterprets
row-major data is written as a reshape, which the conversion accepts. Each runs on random
inputs of its operands' shapes (scalar constants at their values); its time is the call's
wall time less the dispatch floor (the median call of a one-element module through the same
harness), times its launches per call of the program (a kernel of a loop body runs once per
trip). The alone compile is checked to give one kernel of the same kind (``same_form``).

Then ``--rounds`` rounds (default 5) each time every kernel alone for ``--budget / rounds``
seconds and trace one more session, so both see the same machine. A measure **agrees** with
the alone time when the alone median lies within the measure's first-to-third-quartile range
over the traced calls (the run's spread).

Prints a table, then a last line of JSON: per kernel (``kernels``) its name, category, kind,
launches, ``waits``, alone/busy/span medians and quartiles (``alone_s``, ``alone_q1_s``, ...),
``agrees_busy``, ``agrees_span``, ``agrees_held``, the alone compile's kernels and
``same_form``; the tallies ``compared``, ``agree_busy``, ``agree_span``, ``agree_held``,
``median_ratio_busy``, ``median_ratio_span``, ``median_ratio_span_q1``, ``median_ratio_held``
and ``median_ratio_held_q1`` (measure ÷ alone, median over kernels) and ``median_error_span_q1``,
``median_error_queued_q1``, ``median_error_held_q1``, ``median_error_held`` (|measure ÷ alone −
1|), also for the
``waiting`` and ``not_waiting`` kernels apart; the per-call sums of busy and of span over
every kernel (median, min, max), the traced and untraced program times, how many kernels
wait and how many of the top-10 kernels by busy and by span are shared. Timings on a shared
machine are noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline_report.analysis.kernels import time_samples  # noqa: E402
from roofline_report.analysis.stats import median, quartiles  # noqa: E402
from roofline_report.errors import EXIT_INPUT, InputError  # noqa: E402
from roofline_report.hlo import ir, shapes  # noqa: E402
from roofline_report.hlo.kernels import kernel_inventory  # noqa: E402
from roofline_report.observe.timer import block  # noqa: E402
from roofline_report.observe.trace import capture  # noqa: E402
from roofline_report.observe.trace import cores as trace_cores  # noqa: E402
from roofline_report.observe.trace import wants as trace_wants  # noqa: E402
from roofline_report.traces.events import kernel_times  # noqa: E402

DEFAULT_SETUP = "examples.transformer:setup"
WAITS = 0.05  # a kernel "waits" when its span exceeds its busy time by more than this share

# ---------------------------------------------------------------------------------------------
# A kernel's computation as an HLO module of its own (pure: text in, text out)


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of an alone module: its HLO type and, for a scalar constant operand of
    the original kernel, the constant's literal text."""

    dtype: str
    dims: tuple[int, ...]
    layout: str
    constant: str | None = None


@dataclass(frozen=True, slots=True)
class AloneModule:
    kernel: str
    text: str  # the HLO module
    parameters: tuple[Parameter, ...]
    how: str  # "fused computation" or "wrapped instruction"


_HEADER = re.compile(r"^(?:ENTRY\s+)?%?(?P<name>[^\s(]+)\s*\(")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[^\s=]+)\s*=\s*")
_CONSTANT = re.compile(r"\bconstant\((?P<literal>[^()]*)\)")


def computation_blocks(text: str) -> dict[str, list[str]]:
    """Each computation's lines (header to closing brace), by name, in text order."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if current is None:
            match = _HEADER.match(line)
            if match and line.rstrip().endswith("{") and not line.startswith("HloModule"):
                current = [line]
                blocks[match["name"]] = current
            continue
        current.append(line)
        if line.strip() == "}":
            current = None
    return blocks


def _without(line: str, key: str) -> str:
    """``line`` less its ``, key=...`` attribute (a braced or quoted value kept whole)."""
    at = line.find(f", {key}=")
    if at < 0:
        return line
    start = at + len(key) + 3
    end = ir.matching(line, start) if line[start:start + 1] in "{(\"" else start
    if line[start:start + 1] == '"':
        end = line.index('"', start + 1) + 1
    while end < len(line) and line[end] not in ",":
        end += 1
    return line[:at] + line[end:]


def _clean(line: str) -> str:
    for key in ("metadata", "frontend_attributes", "statistics"):
        line = _without(line, key)
    return line


def _row_major(shape: shapes.Shape | None) -> bool:
    """Whether the array's elements lie in row-major order: its layout is descending once
    the dimensions of size 1 (which do not move elements) are left out."""
    if shape is None or shape.array is None:
        return False
    dims = shape.array.dims
    order = [int(i) for i in re.findall(r"\d+", shape.array.layout.split(":")[0])]
    if not order:
        return True
    major_to_minor = [d for d in reversed(order) if d < len(dims) and dims[d] != 1]
    return major_to_minor == sorted(major_to_minor)


def _bitcasts_as_reshapes(lines: list[str], comp: ir.Computation) -> list[str]:
    """A bitcast between arrays in row-major order (:func:`_row_major`) is a reshape: so written,
    because jaxlib's conversion to StableHLO keeps a bitcast's layouts and the compiler then
    refuses them. Any other bitcast (one that changes the layout) is a ValueError."""
    out = []
    for line in lines:
        match = _INSTRUCTION.match(line)
        instr = comp.instruction(match["name"]) if match else None
        if instr is not None and instr.opcode == "bitcast":
            if not (_row_major(instr.shape) and all(map(_row_major, instr.operand_shapes))):
                raise ValueError(f"{instr.name} is a bitcast that changes the layout")
            line = line.replace(" bitcast(", " reshape(", 1)
        out.append(line)
    return out


def _called(module: ir.Module, names: Iterable[str]) -> set[str]:
    """The computations reached from ``names`` through calls, transitively (``names`` too)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in module.computations:
            continue  # named as missing by the caller
        for instr in module.computations[name].instructions:
            todo.extend(instr.called())
    return seen


def _parameter(shape: shapes.Shape | None, what: str) -> Parameter:
    if shape is None or shape.array is None:
        raise ValueError(f"{what} is a tuple or of unknown shape")
    a = shape.array
    if a.dynamic:
        raise ValueError(f"{what} has dynamic dimensions")
    return Parameter(a.dtype, a.dims, a.layout)


def _find(module: ir.Module, kernel: str) -> tuple[ir.Computation, ir.Instruction]:
    for comp, instr in module.instructions():
        if instr.name == kernel:
            return comp, instr
    raise KeyError(f"no instruction {kernel!r} in the HLO")


def _constant_literal(blocks: Mapping[str, list[str]], comp: str, operand: str,
                      instr: ir.Instruction | None) -> str | None:
    if instr is None or instr.opcode != "constant" or instr.shape.array is None \
            or instr.shape.array.dims:
        return None
    for line in blocks.get(comp, []):
        match = _INSTRUCTION.match(line)
        if match and match["name"] == operand:
            literal = _CONSTANT.search(line)
            return literal["literal"].strip() if literal else None
    return None


def alone_module(hlo: str, kernel: str, module: ir.Module | None = None) -> AloneModule:
    """The HLO module that runs ``kernel`` of the optimized HLO text ``hlo`` alone
    (``module``: ``hlo`` already parsed, to cut several kernels out of one program).

    A fusion: its fused computation becomes the entry computation (its parameters are the
    fusion's operands, in order), the computations it calls come before it. Any other kernel:
    an entry computation with one parameter per distinct operand and the instruction as its
    root. Metadata is dropped (it points into tables the new module does not have). Raises
    KeyError for an unknown kernel, ValueError for one that cannot run alone (tuple or dynamic
    operands, a computation missing from the text).
    """
    module = module if module is not None else ir.parse_module(hlo)
    blocks = computation_blocks(hlo)
    comp, instr = _find(module, kernel)
    by_name = {i.name: i for i in comp.instructions}
    literals = [_constant_literal(blocks, comp.name, o, by_name.get(o)) for o in instr.operands]
    if instr.opcode == "fusion" and instr.called("calls"):
        fused = instr.called("calls")[0]
        body = module.computations.get(fused)
        if body is None or fused not in blocks:
            raise ValueError(f"{kernel}: fused computation {fused} not found")
        params = sorted((i for i in body.instructions if i.parameter_number is not None),
                        key=lambda i: i.parameter_number or 0)
        parameters = tuple(
            replace(_parameter(p.shape, f"{kernel} parameter {k}"),
                    constant=literals[k] if k < len(literals) else None)
            for k, p in enumerate(params))
        needed = _called(module, [fused]) - {fused}
        entry = _bitcasts_as_reshapes([_clean(line) for line in blocks[fused]], body)
        entry[0] = "ENTRY " + entry[0]
        how = "fused computation"
    else:
        distinct = list(dict.fromkeys(instr.operands))
        shapes = dict(zip(instr.operands, instr.operand_shapes, strict=False))
        parameters = tuple(
            replace(_parameter(shapes.get(o), f"{kernel} operand {o}"),
                    constant=literals[instr.operands.index(o)])
            for o in distinct)
        needed = _called(module, instr.called())
        line = next((raw for raw in blocks.get(comp.name, [])
                     if (m := _INSTRUCTION.match(raw)) and m["name"] == kernel), None)
        if line is None:
            raise ValueError(f"{kernel}: its line was not found")
        line = _clean(line).strip().removeprefix("ROOT ").strip()
        opening = line.index(f" {instr.opcode}(") + len(instr.opcode) + 1
        closing = ir.matching(line, opening)
        names = {o: f"%p{k}" for k, o in enumerate(distinct)}
        line = (line[:opening + 1] + ", ".join(names[o] for o in instr.operands)
                + line[closing - 1:])
        types = [_type_text(p) for p in parameters]
        entry = [f"ENTRY %alone ({', '.join(f'p{k}: {t}' for k, t in enumerate(types))}) -> "
                 f"{instr.shape.text} {{"]
        entry += [f"  %p{k} = {t} parameter({k})" for k, t in enumerate(types)]
        entry += [f"  ROOT {line}", "}"]
        how = "wrapped instruction"
    missing = needed - blocks.keys()
    if missing:
        raise ValueError(f"{kernel}: computations not found: {', '.join(sorted(missing))}")
    text = [f"HloModule alone_{re.sub(r'[^A-Za-z0-9_]', '_', kernel)}", ""]
    for name, lines in blocks.items():  # the original order: callees come first
        if name in needed:
            lines = _bitcasts_as_reshapes([_clean(line) for line in lines],
                                          module.computations[name])
            text += [*lines, ""]
    text += entry
    return AloneModule(kernel, "\n".join(text) + "\n", parameters, how)


def _type_text(p: Parameter) -> str:
    return f"{p.dtype}[{','.join(str(d) for d in p.dims)}]{p.layout}"


# ---------------------------------------------------------------------------------------------
# Busy time per kernel from the trace's events (pure)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two closed ranges (low, high) share a point."""
    return a[0] <= b[1] and b[0] <= a[1]


# ---------------------------------------------------------------------------------------------
# Measuring (imports jax)


def _setup(spec: str) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    module, _, function = spec.partition(":")
    if not module or not function:
        raise InputError(f"--setup needs module:function, got {spec!r}")
    try:
        made = getattr(importlib.import_module(module), function)()
    except Exception as exc:
        raise InputError(f"setup {spec} failed: {type(exc).__name__}: {exc}") from None
    if not (isinstance(made, tuple) and len(made) in (2, 3) and callable(made[0])):
        raise InputError(f"setup {spec} must return (fn, args) or (fn, args, kwargs)")
    return made[0], tuple(made[1]), dict(made[2]) if len(made) == 3 else {}


def _numpy_dtype(dtype: str) -> Any:
    import jax.numpy as jnp
    import numpy as np

    if dtype == "pred":
        return np.bool_
    if dtype == "bf16":
        return jnp.bfloat16
    kind = {"f": "float", "s": "int", "u": "uint"}[dtype[0]]
    return np.dtype(f"{kind}{dtype[1:]}")


def _inputs(parameters: Sequence[Parameter], seed: int) -> list[Any]:
    """Device arrays for the parameters: normal floats, 0/1 integers and booleans, scalar
    constants at their value."""
    import jax
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for p in parameters:
        dtype = _numpy_dtype(p.dtype)
        if p.constant is not None:
            text = p.constant
            value: Any = {"true": True, "false": False}.get(text)
            if value is None:
                value = float(text) if p.dtype[0] in "fb" else int(text, 0)
            host = np.asarray(value).astype(dtype)
        elif p.dtype == "pred":
            host = rng.integers(0, 2, size=p.dims).astype(bool)
        elif p.dtype[0] in "su":
            host = rng.integers(0, 2, size=p.dims).astype(dtype)
        else:
            host = rng.standard_normal(p.dims).astype(np.float32).astype(dtype)
        out.append(jax.device_put(host))
    return out


def compile_hlo(text: str) -> Any:
    """Compile an HLO module's text for the default device: jaxlib's HLO parser, then its
    HLO-to-StableHLO conversion, then the client's compiler (jaxlib 0.10)."""
    import jax

    xc: Any = importlib.import_module("jax._src.lib").xla_client

    proto = xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    mlir = xc._xla.mlir.hlo_to_stablehlo(proto)
    device = jax.devices()[0]
    return device.client.compile_and_load(mlir, xc.DeviceList((device,)), xc.CompileOptions())


def _call(executable: Any, arrays: Sequence[Any]) -> float:
    t0 = time.perf_counter()
    results = executable.execute_sharded(list(arrays))
    block(results.disassemble_into_single_device_arrays())
    return time.perf_counter() - t0


FLOOR_HLO = """HloModule dispatch_floor

ENTRY %floor (p0: f32[]) -> f32[] {
  %p0 = f32[] parameter(0)
  ROOT %negate = f32[] negate(%p0)
}
"""


def time_alone(programs: Mapping[str, tuple[Any, list[Any]]], *, rounds: int,
               budget_s: float, min_calls: int = 5) -> dict[str, list[float]]:
    """Wall seconds per call of each executable, in ``rounds`` interleaved rounds of about
    ``budget_s / rounds`` each (at least ``min_calls`` calls a round), after warm-up calls."""
    samples: dict[str, list[float]] = {name: [] for name in programs}
    for executable, arrays in programs.values():
        for _ in range(3):
            _call(executable, arrays)
    for _ in range(rounds):
        for name, (executable, arrays) in programs.items():
            stop = time.perf_counter() + budget_s / rounds
            count = 0
            while count < min_calls or time.perf_counter() < stop:
                samples[name].append(_call(executable, arrays))
                count += 1
    return samples


def trace_program(compiled: Any, args: Sequence[Any], kwargs: Mapping[str, Any], calls: int
                  ) -> tuple[Any, list[float]]:
    """A ProfileData of ``calls`` traced calls, and as many untraced call times before it
    (:func:`roofline_report.observe.trace.capture`, after three warm-up calls)."""
    profile, untraced, _ = capture(lambda: compiled(*args, **kwargs), calls, warmup=3)
    return profile, untraced


def _alone_kernels(executable: Any) -> list[dict[str, Any]]:
    text = executable.hlo_modules()[0].to_string()
    return [{"name": k["name"], "kind": k["kind"], "category": k["category"]}
            for k in kernel_inventory(text)["kernels"]]


@dataclass(slots=True)
class _Traces:
    """Per-kernel samples (one per traced call) gathered over several trace sessions."""

    module: str
    inventory: Mapping[str, Any]
    busy: dict[str, list[float]]
    span: dict[str, list[float]]
    queued: dict[str, list[float]]
    held: dict[str, list[float]]
    launches: dict[str, float]
    busy_sum: list[float]
    span_sum: list[float]
    program: list[float]
    untraced: list[float]

    def add(self, compiled: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
            calls: int) -> None:
        profile, untraced = trace_program(compiled, args, kwargs, calls)
        cores = trace_cores()
        spans = kernel_times(profile, module=self.module, kernels=self.inventory, calls=calls,
                             wants=trace_wants(self.inventory.values(), cores),
                             cores=cores)
        if not spans.get("available"):
            raise RuntimeError(f"no kernel times: {spans.get('reason')}")
        # The kernel_timing record: per kernel one sample per traced call it ran in (busy,
        # span, span less wait, and the report's samples: the share of that), its launches per
        # call; per call the program's time.
        for row in spans["kernels"]:
            self.busy.setdefault(row["name"], []).extend(row["busy_s"])
            self.span.setdefault(row["name"], []).extend(row["span_s"])
            self.held.setdefault(row["name"], []).extend(
                time_samples(row["span_s"], row.get("share_s"), row.get("wait_s")))
            self.queued.setdefault(row["name"], []).extend(
                time_samples(row["span_s"], None, row.get("wait_s")))
            self.launches[row["name"]] = median(row["launches"]) or 0.0
        self.busy_sum += _per_call_sums(row["busy_s"] for row in spans["kernels"])
        self.span_sum += _per_call_sums(row["span_s"] for row in spans["kernels"])
        self.program.extend(float(c["program_s"]) for c in spans["calls"])
        self.untraced += untraced

    def waiting(self) -> list[str]:
        """Kernels whose median span exceeds their median busy time by more than WAITS."""
        return [n for n in self.span if _mid(self.span[n])
                > (1 + WAITS) * _mid(self.busy.get(n, [0.0]))]

    def ranked(self, times: Mapping[str, list[float]], names: Iterable[str] | None = None
               ) -> list[str]:
        pool = [n for n in (times if names is None else names) if n in self.span]
        return sorted(pool, key=lambda n: (-_mid(times.get(n, [0.0])), n))


def measure(setup: str, *, kernels: int, calls: int, budget_s: float, rounds: int
            ) -> dict[str, Any]:
    """Trace the program, choose the kernels, then ``rounds`` rounds of (time each kernel
    alone for ``budget_s / rounds``; trace ``calls`` more calls), so that the alone times and
    the traced times share the machine's conditions."""
    import jax

    fn, args, kwargs = _setup(setup)
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    compiled = jitted.lower(*args, **kwargs).compile()
    hlo = compiled.as_text()
    module = ir.parse_module(hlo)  # parsed once: the inventory and every kernel cut out of it
    inventory = {k["name"]: k for k in kernel_inventory(module)["kernels"]}
    traces = _Traces(module.name, inventory, {}, {}, {}, {}, {}, [], [], [], [])
    traces.add(compiled, args, kwargs, calls)
    by_span = traces.ranked(traces.span)
    by_busy = traces.ranked(traces.busy)
    later = traces.ranked(traces.span, traces.waiting())
    chosen = list(dict.fromkeys(by_span[:kernels] + by_busy[:kernels] + later[:kernels]))

    programs: dict[str, tuple[Any, list[Any]]] = {}
    alone_form: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, str] = {}
    for index, name in enumerate(chosen):
        try:
            alone = alone_module(hlo, name, module)
            executable = compile_hlo(alone.text)
            arrays = _inputs(alone.parameters, seed=index)
            _call(executable, arrays)
        except Exception as exc:  # a kernel that cannot run alone is named, not fatal
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            skipped[name] = f"{type(exc).__name__}: {first[:200]}"
            continue
        programs[name] = (executable, arrays)
        alone_form[name] = _alone_kernels(executable)
    floor_exe = compile_hlo(FLOOR_HLO)
    programs["(dispatch floor)"] = (floor_exe, _inputs([Parameter("f32", (), "")], seed=0))
    timed: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(rounds):
        for name, samples in time_alone(programs, rounds=1, budget_s=budget_s / rounds).items():
            timed[name] += samples
        traces.add(compiled, args, kwargs, calls)
    floor = _mid(timed.pop("(dispatch floor)"))

    rows: list[dict[str, Any]] = []
    for name, samples in timed.items():
        # Alone, one launch per call; in the program, per call, every launch summed (a
        # kernel in a loop body runs once per trip).
        per_call = traces.launches.get(name) or 1.0
        a1, a2, a3 = quartiles([(s - floor) * per_call for s in samples])
        b1, b2, b3 = quartiles(traces.busy.get(name, [0.0]))
        s1, s2, s3 = quartiles(traces.span[name])
        h1, h2, h3 = quartiles(traces.held[name])
        q1 = quartiles(traces.queued[name])[0]
        k = inventory.get(name, {})
        form = alone_form[name]
        rows.append({
            "name": name, "category": k.get("category"), "kind": k.get("kind"),
            "launches": traces.launches.get(name), "waits": s2 > (1 + WAITS) * b2,
            "alone_s": a2, "alone_q1_s": a1, "alone_q3_s": a3, "alone_calls": len(samples),
            "busy_s": b2, "busy_q1_s": b1, "busy_q3_s": b3,
            "span_s": s2, "span_q1_s": s1, "span_q3_s": s3,
            "held_s": h2, "held_q1_s": h1, "held_q3_s": h3, "queued_q1_s": q1,
            "agrees_held": overlap((a2, a2), (h1, h3)),
            "agrees_busy": overlap((a2, a2), (b1, b3)),
            "agrees_span": overlap((a2, a2), (s1, s3)),
            "alone_kernels": form,
            "same_form": len(form) == 1 and form[0]["kind"] == k.get("kind"),
        })
    rows.sort(key=lambda r: -r["span_s"])

    def tally(subset: list[dict[str, Any]]) -> dict[str, Any]:
        positive = [r for r in subset if r["alone_s"] > 0]
        return {
            "compared": len(subset),
            "agree_busy": sum(r["agrees_busy"] for r in subset),
            "agree_span": sum(r["agrees_span"] for r in subset),
            "median_ratio_busy": median([r["busy_s"] / r["alone_s"] for r in positive]),
            "median_ratio_span": median([r["span_s"] / r["alone_s"] for r in positive]),
            "median_ratio_span_q1": median([r["span_q1_s"] / r["alone_s"] for r in positive]),
            "agree_held": sum(r["agrees_held"] for r in subset),
            "median_ratio_held": median([r["held_s"] / r["alone_s"] for r in positive]),
            "median_ratio_held_q1": median([r["held_q1_s"] / r["alone_s"] for r in positive]),
            "median_error_span_q1": median([abs(r["span_q1_s"] / r["alone_s"] - 1)
                                            for r in positive]),
            "median_error_queued_q1": median([abs(r["queued_q1_s"] / r["alone_s"] - 1)
                                              for r in positive]),
            "median_error_held_q1": median([abs(r["held_q1_s"] / r["alone_s"] - 1)
                                            for r in positive]),
            "median_error_held": median([abs(r["held_s"] / r["alone_s"] - 1)
                                         for r in positive]),
        }

    final_span = traces.ranked(traces.span)
    final_busy = traces.ranked(traces.busy)
    return {
        "setup": setup,
        "calls": calls * (rounds + 1),
        "rounds": rounds,
        **tally(rows),
        "waiting": tally([r for r in rows if r["waits"]]),
        "not_waiting": tally([r for r in rows if not r["waits"]]),
        "same_form": sum(r["same_form"] for r in rows),
        "dispatch_floor_s": floor,
        "program_untraced_s": _mid(traces.untraced),
        "program_traced_s": _range(traces.program),
        "kernel_sum_busy_s": _range(traces.busy_sum),
        "kernel_sum_span_s": _range(traces.span_sum),
        "alone_sum_s": sum(r["alone_s"] for r in rows),
        "busy_sum_compared_s": sum(r["busy_s"] for r in rows),
        "span_sum_compared_s": sum(r["span_s"] for r in rows),
        "top10_shared": len(set(final_span[:10]) & set(final_busy[:10])),
        "kernels_waiting": len(traces.waiting()),
        "kernels_traced": len(traces.span),
        "skipped": skipped,
        "kernels": rows,
    }


def _per_call_sums(samples: Iterable[Sequence[float]]) -> list[float]:
    """Sums over kernels, call by call, of per-call samples that cover the same calls (a
    kernel missing from some calls makes the lists unequal: then no sums)."""
    lists = list(samples)
    if not lists or len({len(v) for v in lists}) != 1:
        return []
    return [sum(v[i] for v in lists) for i in range(len(lists[0]))]


def _range(values: Sequence[float]) -> dict[str, float] | None:
    """Median and range of per-call values; None for none."""
    if not values:
        return None
    return {"median": _mid(values), "min": min(values), "max": max(values)}


def _mid(values: Sequence[float]) -> float:
    """The median of values there are (analysis.stats, the one home of medians)."""
    return median(values) or 0.0


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:8.1f}"


def print_table(result: Mapping[str, Any]) -> None:
    print(f"{'kernel':32} {'category':13} {'alone us (q1-q3)':>25} {'busy us (q1-q3)':>25} "
          f"{'span us (q1-q3)':>25}  agrees")
    for r in result["kernels"]:
        def cell(key: str, r: Mapping[str, Any] = r) -> str:
            return (f"{_us(r[f'{key}_s'])} ({r[f'{key}_q1_s'] * 1e6:.0f}-"
                    f"{r[f'{key}_q3_s'] * 1e6:.0f})")
        agrees = "/".join(m for m in ("busy", "span") if r[f"agrees_{m}"]) or "neither"
        form = "" if r["same_form"] else "  [alone: " + ", ".join(
            f"{k['name']} {k['kind']}" for k in r["alone_kernels"]) + "]"
        mark = "*" if r["waits"] else " "
        print(f"{mark}{r['name'][:31]:31} {str(r['category'])[:13]:13} {cell('alone'):>25} "
              f"{cell('busy'):>25} {cell('span'):>25}  {agrees}{form}")
    for name, why in result["skipped"].items():
        print(f" {name[:31]:31} not run alone: {why}")
    print(f"* waits: its span exceeds its busy time by more than {WAITS:.0%} (medians)")
    for label, t in (("all", result), ("waiting", result["waiting"]),
                     ("not waiting", result["not_waiting"])):
        if not t["compared"]:
            continue
        print(f"{label}: busy agrees with alone for {t['agree_busy']} of {t['compared']} "
              f"kernels, span for {t['agree_span']}; median busy/alone "
              f"{t['median_ratio_busy']:.2f}, span/alone {t['median_ratio_span']:.2f}, "
              f"span's first quartile/alone {t['median_ratio_span_q1']:.2f}; median "
              f"|first quartile/alone - 1|: span {t['median_error_span_q1']:.2f}, queued "
              f"{t['median_error_queued_q1']:.2f}, held {t['median_error_held_q1']:.2f}")

    def ms(key: str) -> str:
        v = result[key]
        if v is None:
            return "(not summed)"
        return f"{v['median'] * 1e3:.2f} ms ({v['min'] * 1e3:.2f}-{v['max'] * 1e3:.2f})"

    print(f"per call over all {result['kernels_traced']} kernels "
          f"({result['kernels_waiting']} waiting): busy {ms('kernel_sum_busy_s')}, "
          f"span {ms('kernel_sum_span_s')}; program {ms('program_traced_s')} traced, "
          f"{result['program_untraced_s'] * 1e3:.2f} ms untraced; the top-10 lists by busy "
          f"and by span share {result['top10_shared']} kernels")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--setup", default=DEFAULT_SETUP, metavar="MODULE:FUNCTION")
    parser.add_argument("--kernels", type=int, default=12,
                        help="run alone the N kernels with the most span, the N with the most "
                        "busy time and the N with the most span among those that wait (default 12)")
    parser.add_argument("--calls", type=int, default=5,
                        help="traced calls per trace session (default 5)")
    parser.add_argument("--budget", type=float, default=0.5,
                        help="seconds of alone timing per kernel, all rounds (default 0.5)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of (alone timing, trace session) after the first trace "
                        "(default 5)")
    ns = parser.parse_args(argv)
    try:
        for flag in ("kernels", "calls", "rounds"):
            if getattr(ns, flag) < 1:
                raise InputError(f"--{flag} must be at least 1")
        if not ns.budget > 0:
            raise InputError("--budget must be positive")
        result = measure(ns.setup, kernels=ns.kernels, calls=ns.calls, budget_s=ns.budget,
                         rounds=ns.rounds)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print_table(result)
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
