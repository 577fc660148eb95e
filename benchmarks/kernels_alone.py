"""Which per-kernel time is a kernel's own cost? Each kernel compiled and timed alone, set
beside the two times a profiler trace of the whole program gives it.

    python benchmarks/kernels_alone.py [--setup module:function] [--kernels N] [--calls N]

``--setup`` names a function returning ``(fn, args)`` or ``(fn, args, kwargs)``: default the
shipped training step, ``examples.transformer:setup``. The program is compiled once and traced
over ``--calls`` calls (default 20). From that one trace each kernel gets two times per call:

* **busy**: the summed durations of its own events (``hlo_op``), what the thread that ran the
  thunk spent in it;
* **span**: launch to completion, from its event's start to the end of its ``end:`` event when
  the thunk completes asynchronously (:func:`roofline_report.traces.events.kernel_times`, the
  time the report attributes), which includes any wait for busy worker threads.

Then each of the ``--kernels`` kernels with the most span (default 12) and any kernel among as
many with the most busy time is compiled **alone**: its fused computation becomes the entry
computation of an HLO module of its own (a kernel that is a bare instruction is wrapped with
one parameter per operand), with the computations it calls; the module goes through
``jaxlib``'s HLO parser, is converted to StableHLO and compiled for the same device. It runs on
random inputs of the operand shapes (scalar constants fed their values) in interleaved rounds;
its time is the call's wall time less the dispatch floor (the same harness on a one-element
module). The alone compile is checked to give one kernel of the same kind.

A measure **agrees** with the alone time when their first-to-third-quartile ranges overlap
(the run's spread on both sides). The last line is JSON: per kernel its name, category, kind,
alone median and quartiles, busy and span medians and quartiles, the alone compile's kernels;
and ``agree_busy``, ``agree_span`` (how many of ``compared`` agree), ``median_ratio_busy`` and
``median_ratio_span`` (measure ÷ alone, median over kernels), the per-call sums of busy and
span over all kernels, the untraced program time and the top-10 lists' shared names.
Timings on a shared machine are noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline_report.errors import EXIT_INPUT, InputError  # noqa: E402
from roofline_report.hlo import ir  # noqa: E402
from roofline_report.hlo.kernels import kernel_inventory  # noqa: E402
from roofline_report.observe.timer import block  # noqa: E402
from roofline_report.traces.events import kernel_times  # noqa: E402

DEFAULT_SETUP = "examples.transformer:setup"

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


def _row_major(shape: ir.Shape | None) -> bool:
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


def _parameter(shape: ir.Shape | None, what: str) -> Parameter:
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


def alone_module(hlo: str, kernel: str) -> AloneModule:
    """The HLO module that runs ``kernel`` of the optimized HLO text ``hlo`` alone.

    A fusion: its fused computation becomes the entry computation (its parameters are the
    fusion's operands, in order), the computations it calls come before it. Any other kernel:
    an entry computation with one parameter per distinct operand and the instruction as its
    root. Metadata is dropped (it points into tables the new module does not have). Raises
    KeyError for an unknown kernel, ValueError for one that cannot run alone (tuple or dynamic
    operands, a computation missing from the text).
    """
    module = ir.parse_module(hlo)
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


def busy_times(profile: Any, module: str) -> dict[str, list[float]]:
    """Per kernel (``hlo_op``), per call (``run_id``, in time order): the summed durations of
    its own events on the host planes, in seconds. ``end:`` events carry no ``hlo_op``."""
    per_run: dict[Any, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    first: dict[Any, float] = {}
    for plane in getattr(profile, "planes", []):
        if not str(plane.name).startswith("/host:"):
            continue
        for line in plane.lines:
            for e in line.events:
                stats = dict(e.stats)
                if "hlo_op" not in stats or str(stats.get("hlo_module")) != module:
                    continue
                run = stats.get("run_id")
                per_run[run][str(stats["hlo_op"])] += float(e.duration_ns) * 1e-9
                first[run] = min(first.get(run, float("inf")), float(e.start_ns))
    runs = sorted(per_run, key=lambda r: first[r])
    names = {name for r in runs for name in per_run[r]}
    return {name: [per_run[r].get(name, 0.0) for r in runs] for name in names}


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0], ordered[0], ordered[0]
    q1, q2, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return q1, q2, q3


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
    """A ProfileData of ``calls`` traced calls, and as many untraced call times before it."""
    import glob
    import os
    import tempfile

    import jax
    from jax.profiler import ProfileData

    for _ in range(3):
        block(compiled(*args, **kwargs))
    untraced = []
    for _ in range(calls):
        t0 = time.perf_counter()
        block(compiled(*args, **kwargs))
        untraced.append(time.perf_counter() - t0)
    with tempfile.TemporaryDirectory(prefix="kernels-alone-") as tmp:
        with jax.profiler.trace(tmp):
            for _ in range(calls):
                block(compiled(*args, **kwargs))
        files = sorted(glob.glob(os.path.join(tmp, "**", "*.xplane.pb"), recursive=True))
        if not files:
            raise RuntimeError("the profiler wrote no trace")
        return ProfileData.from_file(files[-1]), untraced


def _alone_kernels(executable: Any) -> list[dict[str, Any]]:
    text = executable.hlo_modules()[0].to_string()
    return [{"name": k["name"], "kind": k["kind"], "category": k["category"]}
            for k in kernel_inventory(text)["kernels"]]


def measure(setup: str, *, kernels: int, calls: int, budget_s: float, rounds: int
            ) -> dict[str, Any]:
    import jax

    fn, args, kwargs = _setup(setup)
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    compiled = jitted.lower(*args, **kwargs).compile()
    hlo = compiled.as_text()
    inventory = {k["name"]: k for k in kernel_inventory(hlo)["kernels"]}
    module_name = ir.parse_module(hlo).name
    profile, untraced = trace_program(compiled, args, kwargs, calls)
    spans = kernel_times(profile, module=module_name, kernels=inventory, calls=calls)
    if not spans.get("available"):
        raise RuntimeError(f"no kernel times: {spans.get('reason')}")
    busy = busy_times(profile, module_name)
    span_rows = {r["name"]: r for r in spans["kernels"]}
    by_span = [r["name"] for r in spans["kernels"]]
    by_busy = sorted(busy, key=lambda n: -statistics.median(busy[n]))
    chosen = list(dict.fromkeys(by_span[:kernels] + [n for n in by_busy[:kernels]
                                                      if n in span_rows]))

    programs: dict[str, tuple[Any, list[Any]]] = {}
    alone_form: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, str] = {}
    for index, name in enumerate(chosen):
        try:
            alone = alone_module(hlo, name)
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
    timed = time_alone(programs, rounds=rounds, budget_s=budget_s)
    floor = statistics.median(timed.pop("(dispatch floor)"))

    rows: list[dict[str, Any]] = []
    for name, samples in timed.items():
        a1, a2, a3 = quartiles([s - floor for s in samples])
        b1, b2, b3 = quartiles(busy.get(name, [0.0]))
        s = span_rows[name]
        k = inventory.get(name, {})
        form = alone_form[name]
        rows.append({
            "name": name, "category": k.get("category"), "kind": k.get("kind"),
            "launches": s["launches"],
            "alone_s": a2, "alone_q1_s": a1, "alone_q3_s": a3, "alone_calls": len(samples),
            "busy_s": b2, "busy_q1_s": b1, "busy_q3_s": b3,
            "span_s": s["total_s"], "span_q1_s": s["q1_s"], "span_q3_s": s["q3_s"],
            "agrees_busy": overlap((a1, a3), (b1, b3)),
            "agrees_span": overlap((a1, a3), (s["q1_s"], s["q3_s"])),
            "alone_kernels": form,
            "same_form": len(form) == 1 and form[0]["kind"] == k.get("kind"),
        })
    rows.sort(key=lambda r: -r["span_s"])
    positive = [r for r in rows if r["alone_s"] > 0]
    busy_sums = [sum(v[i] for v in busy.values()) for i in range(min(map(len, busy.values())))]
    top_busy = set(by_busy[:10])
    top_span = set(by_span[:10])
    return {
        "setup": setup,
        "calls": calls,
        "compared": len(rows),
        "agree_busy": sum(r["agrees_busy"] for r in rows),
        "agree_span": sum(r["agrees_span"] for r in rows),
        "median_ratio_busy": _median([r["busy_s"] / r["alone_s"] for r in positive]),
        "median_ratio_span": _median([r["span_s"] / r["alone_s"] for r in positive]),
        "same_form": sum(r["same_form"] for r in rows),
        "dispatch_floor_s": floor,
        "program_untraced_s": statistics.median(untraced),
        "program_traced_s": spans["program_s"],
        "kernel_sum_busy_s": statistics.median(busy_sums) if busy_sums else None,
        "kernel_sum_span_s": spans["kernel_sum_s"],
        "alone_sum_s": sum(r["alone_s"] for r in rows),
        "busy_sum_compared_s": sum(r["busy_s"] for r in rows),
        "span_sum_compared_s": sum(r["span_s"] for r in rows),
        "top10_shared": len(top_busy & top_span),
        "skipped": skipped,
        "kernels": rows,
    }


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:8.1f}"


def print_table(result: Mapping[str, Any]) -> None:
    print(f"{'kernel':34} {'category':13} {'alone us (q1-q3)':>26} {'busy us (q1-q3)':>26} "
          f"{'span us (q1-q3)':>26}  agrees")
    for r in result["kernels"]:
        def cell(key: str, r: Mapping[str, Any] = r) -> str:
            return (f"{_us(r[f'{key}_s'])} ({r[f'{key}_q1_s'] * 1e6:.0f}-"
                    f"{r[f'{key}_q3_s'] * 1e6:.0f})")
        agrees = "/".join(m for m in ("busy", "span") if r[f"agrees_{m}"]) or "neither"
        form = "" if r["same_form"] else "  [alone: " + ", ".join(
            f"{k['name']} {k['kind']}" for k in r["alone_kernels"]) + "]"
        print(f"{r['name'][:34]:34} {str(r['category'])[:13]:13} {cell('alone'):>26} "
              f"{cell('busy'):>26} {cell('span'):>26}  {agrees}{form}")
    for name, why in result["skipped"].items():
        print(f"{name[:34]:34} not run alone: {why}")
    n = result["compared"]
    print(f"busy agrees with alone for {result['agree_busy']} of {n} kernels, span for "
          f"{result['agree_span']} of {n}; median busy/alone "
          f"{result['median_ratio_busy']:.2f}, span/alone {result['median_ratio_span']:.2f}")
    print(f"per call: busy {result['kernel_sum_busy_s'] * 1e3:.2f} ms and span "
          f"{result['kernel_sum_span_s'] * 1e3:.2f} ms over all kernels; program "
          f"{result['program_untraced_s'] * 1e3:.2f} ms untraced; the top-10 lists share "
          f"{result['top10_shared']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--setup", default=DEFAULT_SETUP, metavar="MODULE:FUNCTION")
    parser.add_argument("--kernels", type=int, default=12,
                        help="kernels with the most span to run alone (default 12)")
    parser.add_argument("--calls", type=int, default=20, help="traced calls (default 20)")
    parser.add_argument("--budget", type=float, default=0.5,
                        help="seconds of alone timing per kernel (default 0.5)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="interleaved rounds of alone timing (default 5)")
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
