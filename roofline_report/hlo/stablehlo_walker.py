"""The walk of our StableHLO count (:mod:`roofline_report.hlo.stablehlo_count`): the recursive
cost of regions, following calls, multiplying loop bodies by their trip counts, under a
cooperative time limit.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from roofline_report.hlo.cost import Cost
from roofline_report.hlo.stablehlo_loops import LoopIdentity, loop_identity, trip_from_cond
from roofline_report.hlo.stablehlo_mlir import element_count
from roofline_report.hlo.stablehlo_ops import (
    CHLO_CHARGES,
    ELEMENTWISE,
    FREE,
    HANDLERS,
    TERMINATORS,
    TRANSCENDENTAL,
    chlo_charge,
)


class Deadline:
    """The count's time limit, checked cooperatively: each operation the walks visit asks
    :meth:`check`, which raises :class:`OutOfTime` once the limit has passed."""

    def __init__(self, limit_s: float | None) -> None:
        self.limit_s = limit_s
        self.end = None if limit_s is None else time.monotonic() + limit_s
        self.visited = 0

    def passed(self) -> bool:
        self.visited += 1
        return self.end is not None and time.monotonic() > self.end

    def check(self, where: str) -> None:
        if self.passed():
            raise OutOfTime(where, self)


class OutOfTime(Exception):
    def __init__(self, where: str, deadline: Deadline) -> None:
        super().__init__(where)
        self.where = where
        self.visited = deadline.visited
        self.limit_s = deadline.limit_s or 0.0

    def record(self) -> dict[str, Any]:
        return {
            "available": False,
            "reason": f"not counted: the count passed its {self.limit_s:g} s time limit at "
                      f"{self.where}, after {self.visited} operations (a larger time_limit_s "
                      "counts further)",
        }


class Walker:
    """Recursive cost of regions, following calls and multiplying loops by trip counts."""

    def __init__(
        self,
        functions: Mapping[str, Any],
        known_trip_counts: Mapping[int, int],
        compiled: Mapping[int, Mapping[str, Any]],
        deadline: Deadline | None = None,
    ):
        self.functions = functions
        self.known = known_trip_counts
        self.compiled = compiled
        self.deadline = deadline or Deadline(None)
        self.loops: list[dict[str, Any]] = []
        self.identities: list[LoopIdentity] = []
        self.notes: list[str] = []
        self.custom_calls: set[str] = set()
        self._stack: list[str] = []

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def region(self, region: Any) -> Cost:
        cost = Cost()
        for block in region.blocks:
            for op in block.operations:
                cost.add(self.op(op.operation))
        return cost

    def call(self, callee: str) -> Cost:
        func = self.functions.get(callee)
        if func is None:
            self.note(f"call to unknown function @{callee}: not counted")
            return Cost()
        if callee in self._stack:
            self.note(f"recursive call to @{callee}: counted once")
            return Cost()
        self._stack.append(callee)
        try:
            return self.region(func.regions[0])
        finally:
            self._stack.pop()

    def op(self, op: Any) -> Cost:
        name = str(op.name)
        self.deadline.check(name if not self._stack else f"{name} in @{self._stack[-1]}")
        cost = Cost()
        if name in TERMINATORS:
            return cost
        cost.ops[name] += 1
        handler = HANDLERS.get(name)
        if handler is not None:
            handler(self, op, cost)
        elif name in ELEMENTWISE:
            cost.charge(name, flops=self.result_elements(op))
        elif name in TRANSCENDENTAL:
            cost.charge(name, transcendentals=self.result_elements(op))
        elif name in CHLO_CHARGES:
            flops, transcendentals = chlo_charge(op)
            elements = self.result_elements(op)
            cost.charge(name, flops=flops * elements, transcendentals=transcendentals * elements)
        elif name in FREE:
            pass
        elif len(op.regions) > 0:
            self.note(f"{name}: regions counted once")
            for region in op.regions:
                cost.add(self.region(region))
        else:
            self.note(f"{name}: not costed (0 flops)")
        return cost

    def result_elements(self, op: Any) -> int:
        if len(op.results) == 0:
            return 0
        count = element_count(op.results[0].type)
        if count is None:
            self.note(f"{op.name}: dynamic or non-tensor result, not costed")
            return 0
        return count

    def body_per_application(self, op: Any, index: int = 0) -> Cost:
        """Cost of one application of a reducer/comparator region (its ops are scalars)."""
        return self.region(op.regions[index])

    # ---- while loops ------------------------------------------------------------------------

    def while_loop(self, op: Any, cost: Cost) -> None:
        iteration = self.region(op.regions[0])
        iteration.add(self.region(op.regions[1]))
        index = len(self.loops)
        inferred = trip_from_cond(op)
        paired = self.compiled.get(index) or {}
        known = self.known.get(index)
        if known is None and paired.get("known_trip_count") is not None:
            known = int(paired["known_trip_count"])
        if inferred is not None:
            trip, source = inferred, "cond"
            if known is not None and known != inferred:
                self.note(
                    f"loop {index}: condition gives {inferred} trips, compiled HLO says "
                    f"{known}; kept {inferred}"
                )
        elif known is not None:
            trip, source = known, "known_trip_count"
        else:
            trip, source = None, "unknown"
            self.note(f"loop {index}: trip count not found; its body is counted once")
        identity = loop_identity(op)
        self.identities.append(identity)
        self.loops.append(
            {
                "index": index,
                "trip_count": trip,
                "source": source,
                "body_flops": iteration.flops,
                "body_transcendentals": iteration.transcendentals,
                "op_name": identity.op_name,
                "location": identity.text(),
                "compiled_while": paired.get("name"),
                "matched_by": paired.get("matched_by"),
            }
        )
        cost.add(iteration, 1 if trip is None else trip)

    def branches(self, op: Any, cost: Cost) -> None:
        """Each quantity from its most expensive branch, as XLA costs a conditional."""
        options = [self.region(region) for region in op.regions]
        if not options:
            return
        most_flops = max(options, key=lambda c: c.flops)
        most_transcendentals = max(options, key=lambda c: c.transcendentals)
        combined = Cost(
            flops=most_flops.flops,
            transcendentals=most_transcendentals.transcendentals,
            flops_by_op=most_flops.flops_by_op,
            transcendentals_by_op=most_transcendentals.transcendentals_by_op,
            ops=most_flops.ops,
        )
        cost.add(combined)
        if len(options) > 1:
            self.note(f"{op.name}: the most expensive branch is counted")
