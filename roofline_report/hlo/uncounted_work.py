"""Work a kernel does beyond our count (pure: no jax): what the model prices, not what it counts.

Our count follows XLA's cost analysis: each instruction of a fused computation is charged once
per element of its own shape, one flop per element for an elementwise op whatever its type.
(A fusion whose root updates a slice of a buffer in place loops over the update alone: its
elements are the loop's.)
Two things the compiled code does differ from that, and both cost time:

* **Repeated evaluations** (XLA:CPU's and XLA:GPU's loop emitter: :data:`LOOP_EMITTER_BACKENDS`;
  a TPU's kernel is never charged them: its compiler emits its fusions its own way, and
  computes such an operand in a kernel of its own: ``a + v[None, :] * sin(v)[None, :]`` over
  ``[8192, 8192]`` ran the sine and multiply of the 8,192-element vector in a fusion of their
  own on a TPU v5e). XLA's loop emitter (a ``kLoop`` fusion) computes the fusion's output
  element by element, asking each operand for the value at the index that element needs: an
  instruction feeding a ``broadcast`` is computed again for every output element that reads
  it. Where the broadcast spreads its operand along the output's minor axis (the axis of the
  innermost loop), the value changes from one iteration to the next and cannot be hoisted out
  of the loop, so the work is done once per output element. A broadcast along the outer axes
  only leaves the value fixed across the inner loop; it is not charged again. Measured on
  XLA:CPU (jax 0.10.2, 2 cores): ``x * sin(v)[None, :]`` of a ``[2048, 2048]`` took 7.6 ms,
  ``x * sin(v)[:, None]`` 0.67 ms. An S5 state-space layer fused ``exp(Λ Δ)`` of a complex
  ``[32]`` vector (a cosine, a sine and a few multiplies) under a broadcast to
  ``[8, 256, 32]``: the count says 64 transcendentals, the loop evaluates 131,072, and the
  kernel took 19 times the time its bytes allow.
* **Complex arithmetic.** An elementwise op on complex numbers is charged one flop per element;
  it does the real arithmetic of its formula: a complex multiply four real multiplies and two
  adds (6 flops), an add, a subtract or a negate 2, a divide 11 (``(ac + bd) + (bc − ad)i``
  over ``c² + d²``: six multiplies, three adds, two divides). A complex number's magnitude
  (``abs`` of a complex operand, whose result is real) is a hypotenuse: XLA computes it as
  ``max(|a|, |b|) · sqrt(1 + (min / max)²)`` with its special cases selected, a square root
  and about ten flops (:data:`COMPLEX_ABS_FLOPS`). On a 2-core CPU ``|z|²`` of 1 M complex64
  elements took 182 µs through ``abs``, 145 through ``re² + im²``; a Whisper front end's
  power spectrum, priced at its bytes, read 0.43 to 0.54 of its time.

:func:`uncounted_work` gives, for one kernel, the flops and the transcendentals (by op) of
both beyond our count: ``recomputed_*`` for the repeated evaluations (each elementwise or
transcendental instruction whose value reaches the root through no broadcast, or only through
broadcasts along the minor axis, is evaluated once per root element it feeds: the root's
elements, but only those a ``pad`` fills from it or its part of a ``concatenate``, less its
own), ``complex_flops`` for the real arithmetic of complex ops at the times they are
evaluated, and ``complex_transcendentals_by_op`` for a complex magnitude's square roots.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from roofline_report.hlo.ir import Instruction, Module
from roofline_report.hlo.kernel_cost import ELEMENTWISE, TRANSCENDENTAL, stablehlo_name
from roofline_report.hlo.shapes import Shape
from roofline_report.hlo.tpu import CPU, GPU

__all__ = ["COMPLEX_ABS_FLOPS", "COMPLEX_FLOPS", "LOOP_EMITTER_BACKENDS", "Uncounted",
           "uncounted_work"]

#: The backends whose loop emitter evaluates an operand under a broadcast once per output
#: element (measured on XLA:CPU; XLA:GPU's loop fusions share its elemental emitter). A
#: module of unknown backend (None) is read as theirs.
LOOP_EMITTER_BACKENDS = (CPU, GPU, None)

COMPLEX_TYPES = frozenset({"c64", "c128"})
# Real flops per element of an elementwise op on complex numbers (counted: 1).
COMPLEX_FLOPS = {"multiply": 6, "add": 2, "subtract": 2, "negate": 2, "divide": 11}
# A complex magnitude's flops beside its square root: two magnitudes, a maximum, a minimum, a
# divide, a square, an add, a multiply and the compares of its special cases.
COMPLEX_ABS_FLOPS = 10
SQRT = "stablehlo.sqrt"


@dataclass(slots=True)
class Uncounted:
    """Work one launch does beyond our count: flops and transcendentals (by StableHLO op)
    of repeated evaluations, and the flops of complex arithmetic beyond one per element."""

    recomputed_flops: int = 0
    recomputed_transcendentals_by_op: Counter[str] = field(default_factory=Counter)
    complex_flops: int = 0
    complex_transcendentals_by_op: Counter[str] = field(default_factory=Counter)

    @property
    def recomputed_transcendentals(self) -> int:
        return sum(self.recomputed_transcendentals_by_op.values())


def _elements(shape: Shape | None) -> int:
    if shape is None:
        return 0
    if shape.array is None:  # a multi-output loop: every output in the one loop
        return max((_elements(s) for s in shape.elements), default=0)
    return shape.array.elements


def _minor_axis(shape: Shape) -> int | None:
    """The output axis of the innermost loop: the first of the layout (minor to major), else
    the last axis; None for a scalar."""
    array = shape.array
    if array is None or not array.dims:
        return None
    return array.minor_to_major()[0]


def _keeps_minor(broadcast: Instruction) -> bool:
    """Whether the broadcast's operand spreads along its output's minor axis (its value then
    changes at every step of the innermost loop)."""
    minor = _minor_axis(broadcast.shape)
    if minor is None:
        return False
    text = broadcast.attributes.get("dimensions", "{}").strip("{}")
    dims = {int(d) for d in text.split(",") if d.strip()}
    return minor in dims


def _evaluations(root: Instruction, order: Sequence[Instruction], by_name: dict[str, Instruction],
                 root_elements: int) -> dict[str, float]:
    """How many times the loop evaluates each instruction reached from ``root`` through no
    broadcast or only through broadcasts along the minor axis: once per root element, but an
    operand of a ``pad`` only for the elements it fills (the rest take the padding value) and
    each operand of a ``concatenate`` only for its own part of the output; through several
    users, the most any of them asks (the loop computes a value once per element it needs).
    ``order``: the computation's instructions, operands before their users."""
    evaluations: dict[str, float] = {root.name: float(root_elements)}
    for node in reversed(order):
        times = evaluations.get(node.name)
        if times is None:
            continue
        if node.opcode == "broadcast" and not _keeps_minor(node):
            continue  # fixed across the inner loop: computed once per outer step
        own = _elements(node.shape)
        for name in node.operands:
            operand = by_name.get(name)
            if operand is None:
                continue
            share = times
            if node.opcode in ("pad", "concatenate") and own > 0:
                share = times * _elements(operand.shape) / own
            evaluations[name] = max(evaluations.get(name, 0.0), share)
    return evaluations


def _loop_elements(root: Instruction, by_name: dict[str, Instruction]) -> int:
    """The elements the fusion's loop computes: its root's, except for a root that updates a
    slice of a buffer in place (a ``dynamic-update-slice``, under bitcasts: a scan writing its
    step's row of the stacked outputs), whose loop runs over the update alone."""
    node: Instruction | None = root
    while node is not None and node.opcode == "bitcast" and node.operands:
        node = by_name.get(node.operands[0])
    if node is not None and node.opcode == "dynamic-update-slice" and len(node.operands) > 1:
        update = by_name.get(node.operands[1])
        if update is not None:
            return _elements(update.shape)
    return _elements(root.shape)


def _is_complex(shape: Shape | None) -> bool:
    return shape is not None and shape.array is not None and shape.array.dtype in COMPLEX_TYPES


def _complex_work(node: Instruction, evaluated: int, out: Uncounted) -> None:
    """Add the real arithmetic ``evaluated`` evaluations of ``node`` do beyond one flop each
    where it is a complex op: its formula's flops, and a complex magnitude's square root."""
    if node.opcode in COMPLEX_FLOPS and _is_complex(node.shape):
        out.complex_flops += (COMPLEX_FLOPS[node.opcode] - 1) * evaluated
    elif node.opcode == "abs" and node.operand_shapes and _is_complex(node.operand_shapes[0]):
        out.complex_flops += (COMPLEX_ABS_FLOPS - 1) * evaluated
        out.complex_transcendentals_by_op[SQRT] += evaluated


def uncounted_work(instr: Instruction, module: Module, backend: str | None = None) -> Uncounted:
    """The work one launch of ``instr`` does beyond our count (see the module docstring), on
    ``backend`` (the one the module was compiled for; None: unknown): repeated evaluations on
    the backends of :data:`LOOP_EMITTER_BACKENDS` only."""
    out = Uncounted()
    if instr.opcode != "fusion":
        _complex_work(instr, _elements(instr.shape), out)
        return out
    called = instr.called("calls")
    comp = module.computations.get(called[0]) if called else None
    if comp is None or comp.root is None:
        return out
    by_name = {i.name: i for i in comp.instructions}
    root_elements = _loop_elements(comp.root, by_name)
    repeated = _evaluations(comp.root, comp.instructions, by_name, root_elements) \
        if instr.fusion_kind == "kLoop" and backend in LOOP_EMITTER_BACKENDS else {}
    for node in comp.instructions:
        own = _elements(node.shape)
        evaluated = max(own, round(repeated[node.name])) if node.name in repeated else own
        _complex_work(node, evaluated, out)
        extra = evaluated - own
        if extra <= 0:
            continue
        if node.opcode in TRANSCENDENTAL:
            out.recomputed_transcendentals_by_op[stablehlo_name(node.opcode)] += extra
        elif node.opcode in ELEMENTWISE:
            out.recomputed_flops += extra
    return out
