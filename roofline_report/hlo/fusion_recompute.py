"""Work a loop fusion repeats for every element it writes (pure: no jax).

Our count, like XLA's cost analysis, charges each instruction of a fused computation once per
element of its own shape. XLA's loop emitter (a ``kLoop`` fusion) computes the fusion's output
element by element, asking each operand for the value at the index that element needs: an
instruction feeding a ``broadcast`` is computed again for every output element that reads it,
not once per element of its own shape. Where the broadcast spreads its operand along the
output's minor axis (the axis of the innermost loop), the value changes from one iteration to
the next and no compiler can hoist it out of the loop, so the work is done once per output
element. A broadcast along the outer axes only leaves the value fixed across the inner loop;
it is not charged again here.

Seen on XLA:CPU (jax 0.10.2): an S5 state-space layer fused ``exp(Λ Δ)`` of a complex
``[32]`` vector (a cosine, a sine and a few multiplies) under a broadcast to
``[8, 256, 32]``, the 32 minor: the count says 64 transcendentals, the loop evaluates 131,072,
and the kernel took 19 times the time its bytes allow. A T5 encoder's relative-position
buckets (a ``log`` under a broadcast) took 3.3 times.

:func:`recomputed_work` gives, for one kernel, the flops and the transcendentals (by op) the
loop computes beyond our count: for each elementwise or transcendental instruction whose value
reaches the root only through broadcasts along the minor axis (or through no broadcast), the
root's elements less its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from roofline_report.hlo.ir import Instruction, Module
from roofline_report.hlo.kernel_cost import ELEMENTWISE, TRANSCENDENTAL, stablehlo_name
from roofline_report.hlo.shapes import Shape

__all__ = ["Recomputed", "recomputed_work"]


@dataclass(slots=True)
class Recomputed:
    """Work one launch repeats beyond our count: flops and transcendentals by StableHLO op."""

    flops: int = 0
    transcendentals_by_op: Counter[str] = field(default_factory=Counter)

    @property
    def transcendentals(self) -> int:
        return sum(self.transcendentals_by_op.values())


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
    layout = [int(d) for d in array.layout.strip("{}").split(",") if d.strip()]
    return layout[0] if layout else len(array.dims) - 1


def _keeps_minor(broadcast: Instruction) -> bool:
    """Whether the broadcast's operand spreads along its output's minor axis (its value then
    changes at every step of the innermost loop)."""
    minor = _minor_axis(broadcast.shape)
    if minor is None:
        return False
    text = broadcast.attributes.get("dimensions", "{}").strip("{}")
    dims = {int(d) for d in text.split(",") if d.strip()}
    return minor in dims


def recomputed_work(instr: Instruction, module: Module) -> Recomputed:
    """The work the loop emitter repeats in one launch of ``instr`` (see the module
    docstring); nothing for a kernel that is not a loop fusion."""
    out = Recomputed()
    if instr.opcode != "fusion" or instr.fusion_kind != "kLoop":
        return out
    called = instr.called("calls")
    comp = module.computations.get(called[0]) if called else None
    if comp is None or comp.root is None:
        return out
    by_name = {i.name: i for i in comp.instructions}
    root = comp.root
    root_elements = _elements(root.shape)
    charged: set[str] = set()
    seen: set[str] = set()
    stack = [root.name]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = by_name.get(name)
        if node is None:
            continue
        if node.opcode in ELEMENTWISE or node.opcode in TRANSCENDENTAL:
            charged.add(name)
        if node.opcode == "broadcast" and not _keeps_minor(node):
            continue  # fixed across the inner loop: computed once per outer step
        stack.extend(node.operands)
    for name in sorted(charged):
        node = by_name[name]
        extra = root_elements - _elements(node.shape)
        if extra <= 0:
            continue
        if node.opcode in TRANSCENDENTAL:
            out.transcendentals_by_op[stablehlo_name(node.opcode)] += extra
        else:
            out.flops += extra
    return out
