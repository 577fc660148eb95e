"""The one walk of a compiled program's call graph, from ENTRY (no jax).

Everything that asks "what does one call of this program run, and how often" reads it: the
compiled facts (:func:`roofline_report.hlo.compiled.inspect_compiled`: the kernel count, the
while loops, the loops around each collective) and the kernel inventory
(:func:`roofline_report.hlo.kernels.kernel_inventory`). :func:`walk` visits

* ENTRY, instruction by instruction, in program order;
* each ``while``: its condition, then its body, inside the loop. The loop's trip count is its
  ``known_trip_count`` backend config (in a TPU's module, which never writes one, the count
  read from the loop's condition, body and initial value, as XLA's loop analysis reads it:
  :func:`roofline_report.hlo.tpu.inferred_trip_count`; a note says so); a loop without one is
  flagged (:attr:`Loop.known` false, a note) and its kernels counted once per enclosing
  iteration;
* each ``conditional``: every branch, in order (rule below);
* each ``call``: the callee, in the caller's loops and branches;
* every other instruction that launches work is a kernel site (:class:`Site`): fusions, custom
  calls, copies, sorts, collectives (an async ``-start``/``-done`` pair once: the ``-start``,
  with its ``-done`` attached), ... Parameters, constants, tuples, get-tuple-element, bitcasts
  and the like launch nothing. The computations a kernel runs (a fusion's body, an async
  wrapper's computation, a reducer, a custom call's callees) are visited too, in the kernel's
  loops and branches, but their instructions are not kernels of their own.

Conditionals, the one rule: every branch's kernels are listed, each site marked with its branch
(:class:`Branch`: the conditional, the branch's index, how many branches); the program totals
charge ONE branch per execution of the conditional, the most expensive: the caller's ``weigh``
gives each kernel site a weight (a tuple, compared in order), a branch weighs the sum of its
charged sites' weights times their trips, and the heaviest branch is charged (ties: the lowest
index). The kernel inventory weighs a kernel by (flops + transcendentals, bytes it touches, 1),
so the branch with the most work is charged, the one our StableHLO count and XLA's cost analysis
charge. The sites of the other branches are listed with :attr:`Context.charged` false: they run
only when their branch is taken, and no total counts them.

Each computation reached is recorded once (:attr:`Walk.visits`), with the context of the first
path that reaches it (XLA's compiled computations have one caller each; reducers such as a shared
``add`` are the exception, and their context does not matter).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from roofline_report.hlo.ir import Computation, Instruction, Module
from roofline_report.hlo.tpu import TPU, hlo_backend, inferred_trip_count

__all__ = [
    "COLLECTIVE_OPCODES",
    "NOT_KERNELS",
    "Branch",
    "Context",
    "Loop",
    "Site",
    "Visit",
    "Walk",
    "walk",
]

COLLECTIVE_OPCODES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
    "ragged-all-to-all",
    "collective-broadcast",
)
NOT_KERNELS = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "domain",
        "partition-id",
        "replica-id",
    }
)
_BRANCH_ROLES = ("branch_computations", "true_computation", "false_computation")


@dataclass(frozen=True, slots=True)
class Loop:
    """A while loop: its instruction and trip count (``known_trip_count``, None when the
    compiled HLO does not give it; in a TPU's module, which never gives it, the count read from
    the loop's condition, body and initial value: ``inferred``)."""

    instruction: Instruction
    inferred: int | None = None

    @property
    def name(self) -> str:
        return self.instruction.name

    @property
    def known_trip_count(self) -> int | None:
        given = self.instruction.known_trip_count
        return given if given is not None else self.inferred

    @property
    def known(self) -> bool:
        return self.known_trip_count is not None


@dataclass(frozen=True, slots=True)
class Branch:
    """One branch of a conditional: the conditional's name, the branch's index and computation,
    how many branches there are, and whether the program totals charge it."""

    conditional: str
    index: int
    branches: int
    computation: str
    charged: bool = True

    def text(self) -> str:
        """``conditional.3 branch 1 of 2``."""
        return f"{self.conditional} branch {self.index} of {self.branches}"


@dataclass(frozen=True, slots=True)
class Context:
    """Where a computation or kernel sits: the while loops around it and the conditional
    branches it is in, outermost first."""

    loops: tuple[Loop, ...] = ()
    branches: tuple[Branch, ...] = ()

    @property
    def trips(self) -> int:
        """Runs per call of the program: the product of the known trip counts around it (a
        loop without a known trip count counts once)."""
        return math.prod(loop.known_trip_count or 1 for loop in self.loops)

    @property
    def trips_known(self) -> bool:
        """Whether every loop around it has a known trip count."""
        return all(loop.known for loop in self.loops)

    @property
    def charged(self) -> bool:
        """Whether the program totals count it: every branch around it is the charged one."""
        return all(branch.charged for branch in self.branches)

    @property
    def loop(self) -> str | None:
        """The innermost loop's name, or None outside loops."""
        return self.loops[-1].name if self.loops else None

    @property
    def branch(self) -> Branch | None:
        """The innermost branch, or None outside conditionals."""
        return self.branches[-1] if self.branches else None

    def _charging(self, conditional: str, index: int) -> Context:
        """This context with the branches of ``conditional`` charged only at ``index``."""
        return replace(self, branches=tuple(
            replace(b, charged=b.index == index) if b.conditional == conditional else b
            for b in self.branches
        ))


@dataclass(frozen=True, slots=True)
class Visit:
    """A computation reached from ENTRY: its context, the role its caller gives it (``entry``,
    ``body``, ``condition``, ``branch``, ``call``, ``fusion``, ``async``, ``reducer``,
    ``other``) and the calling instruction."""

    computation: Computation
    context: Context
    role: str
    caller: Instruction | None = None


@dataclass(frozen=True, slots=True)
class Site:
    """One kernel launch site: the instruction, the computation it is in, its context, and for
    an async ``-start`` its ``-done`` (whose shape is the result)."""

    computation: Computation
    instruction: Instruction
    context: Context
    done: Instruction | None = None

    @property
    def trips(self) -> int:
        return self.context.trips


Weigh = Callable[[Site], Sequence[float]]


@dataclass
class Walk:
    """The result of :func:`walk`."""

    module: Module
    sites: list[Site] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)  # post-order: inner loops first
    visits: dict[str, Visit] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def charged(self) -> Iterator[Site]:
        """The kernel sites the program totals count."""
        return (site for site in self.sites if site.context.charged)

    @property
    def launches(self) -> int:
        """Kernel launches per call of the program (charged sites x their trips)."""
        return sum(site.trips for site in self.charged())

    @property
    def launches_static(self) -> int:
        """Charged kernel sites, each loop counted once."""
        return sum(1 for _ in self.charged())


def _launches(_site: Site) -> Sequence[float]:
    return (1.0,)


def _is_kernel(instr: Instruction) -> bool:
    op = instr.opcode
    return not (op in NOT_KERNELS or op.endswith("-done") or op == "async-update"
                or op in ("while", "conditional", "call"))


def _scalar(instr: Instruction) -> bool:
    """An instruction of its own (not a fusion, a library call or an asynchronous op) whose
    every operand and result is an array of rank 0."""
    if instr.opcode in ("fusion", "custom-call") or instr.opcode.endswith("-start"):
        return False
    shapes = [instr.shape, *(s for s in instr.operand_shapes if s is not None)]
    arrays = [a for s in shapes for a in s.arrays()]
    return bool(arrays) and all(not a.dims for a in arrays)


class _Walker:
    def __init__(self, module: Module, weigh: Weigh, backend: str | None = None) -> None:
        self.module = module
        self.weigh = weigh
        self.tpu = backend == TPU
        self.out = Walk(module)
        self.done_of: dict[tuple[str, str], Instruction] = {}
        for comp, instr in module.instructions():
            if instr.opcode.endswith("-done") and instr.operands:
                self.done_of[(comp.name, instr.operands[0])] = instr

    def note(self, text: str) -> None:
        if text not in self.out.notes:
            self.out.notes.append(text)

    def visit(self, name: str, context: Context, role: str, caller: Instruction | None,
              stack: frozenset[str]) -> tuple[Computation | None, bool]:
        """The computation called ``name`` (None when absent or recursive) and whether this is
        its first visit."""
        comp = self.module.computations.get(name)
        if comp is None or name in stack:
            return None, False
        first = name not in self.out.visits
        if first:
            self.out.visits[name] = Visit(comp, context, role, caller)
        return comp, first

    def control(self, name: str, context: Context, role: str, caller: Instruction | None,
                stack: frozenset[str]) -> None:
        """A computation whose instructions launch kernels (ENTRY, loop, branch, callee)."""
        comp, _ = self.visit(name, context, role, caller, stack)
        if comp is None:
            return
        inner = stack | {name}
        for instr in comp.instructions:
            op = instr.opcode
            if op == "while":
                self.loop(instr, comp, context, inner)
            elif op == "conditional":
                self.conditional(instr, context, inner)
            elif op == "call":
                for callee in instr.called("to_apply"):
                    self.control(callee, context, "call", instr, inner)
            elif _is_kernel(instr) and self.tpu and _scalar(instr):
                # Arithmetic on scalars only (a step counter, a learning rate's schedule):
                # the TPU's scalar unit runs it between kernels, with no op event of its own.
                self.note("scalar instructions (operands and results of rank 0) run on the "
                          "TPU's scalar unit between kernels: not counted as kernels")
                self.reach(instr, context, inner)
            elif _is_kernel(instr):
                self.out.sites.append(
                    Site(comp, instr, context, self.done_of.get((comp.name, instr.name)))
                )
                self.reach(instr, context, inner)
            else:
                self.reach(instr, context, inner)

    def reach(self, instr: Instruction, context: Context, stack: frozenset[str]) -> None:
        """The computations a kernel runs: recorded, their instructions not kernels."""
        for callee in instr.callees:
            role = _role(instr, callee.role)
            comp, first = self.visit(callee.computation, context, role, instr, stack)
            if comp is not None and first:
                for inner in comp.instructions:
                    self.reach(inner, context, stack | {comp.name})

    def loop(self, instr: Instruction, caller: Computation, context: Context,
             stack: frozenset[str]) -> None:
        inferred = inferred_trip_count(instr, caller, self.module) \
            if self.tpu and instr.known_trip_count is None else None
        loop = Loop(instr, inferred)
        if inferred is not None:
            self.note(f"while {instr.name}: {inferred} trips, read from its condition and body "
                      "(the TPU compiler writes no known_trip_count)")
        inner = replace(context, loops=(*context.loops, loop))
        for callee in instr.called("condition"):
            self.control(callee, inner, "condition", instr, stack)
        for callee in instr.called("body"):
            self.control(callee, inner, "body", instr, stack)
        self.out.loops.append(loop)
        if not loop.known:
            self.note(f"while {instr.name}: no known_trip_count; its kernels counted once")

    def conditional(self, instr: Instruction, context: Context, stack: frozenset[str]) -> None:
        names = instr.called(*_BRANCH_ROLES)
        first_site = len(self.out.sites)
        before = set(self.out.visits)
        weights: list[list[float]] = []
        for index, name in enumerate(names):
            start = len(self.out.sites)
            branch = Branch(instr.name, index, len(names), name)
            self.control(name, replace(context, branches=(*context.branches, branch)),
                         "branch", instr, stack)
            weights.append(self._weight(self.out.sites[start:]))
        if not names:
            return
        charged = max(range(len(names)), key=lambda i: (weights[i], -i))
        out = self.out
        out.sites[first_site:] = [replace(s, context=s.context._charging(instr.name, charged))
                                  for s in out.sites[first_site:]]
        for name in set(out.visits) - before:
            visit = out.visits[name]
            out.visits[name] = replace(visit,
                                       context=visit.context._charging(instr.name, charged))
        if len(names) > 1:
            self.note(
                f"conditional {instr.name}: the kernels of all {len(names)} branches are listed; "
                f"the totals charge branch {charged}, the most expensive"
            )

    def _weight(self, sites: Sequence[Site]) -> list[float]:
        total: list[float] = []
        for site in sites:
            if not site.context.charged:
                continue
            for i, value in enumerate(self.weigh(site)):
                if i == len(total):
                    total.append(0.0)
                total[i] += float(value) * site.trips
        return total


def _role(instr: Instruction, key: str) -> str:
    op = instr.opcode
    if op == "fusion":
        return "fusion"
    if op.startswith("async") or op.endswith("-start"):
        return "async"
    if key in ("to_apply", "select", "scatter"):
        return "reducer"
    return "other"


def walk(module: Module, weigh: Weigh | None = None, backend: str | None = None) -> Walk:
    """Walk ``module`` from ENTRY (module docstring). ``weigh`` gives each kernel site its
    weight for choosing the charged branch of a conditional (default: one launch each).
    ``backend``: the backend the module was compiled for (None: recognised from the module,
    :func:`roofline_report.hlo.tpu.hlo_backend`)."""
    walker = _Walker(module, weigh or _launches, hlo_backend(module, backend))
    if module.entry is None:
        walker.note("no ENTRY computation: no kernels listed")
    else:
        walker.control(module.entry, Context(), "entry", None, frozenset())
    return walker.out
