"""The loops of our StableHLO count (:mod:`roofline_report.hlo.stablehlo_count`): a while loop's
trip count read from its condition region, and the pairing of the program's loops with the
compiled program's while loops by identity (source location or op_name).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roofline_report.hlo.stablehlo_mlir import (
    SH,
    as_binding,
    block_arg_index,
    const_int,
    owner_op,
    stablehlo_dialect,
)


def trip_from_cond(op: Any) -> int | None:
    """Trip count of a ``stablehlo.while`` from its regions, or None when the pattern differs.

    Recognises ``compare DIR, iv, limit`` in the condition where ``iv`` is a carried value with a
    constant initial value, stepped in the body by adding (or subtracting) a constant, and
    ``limit`` is a constant or a carried value passed through unchanged from a constant.
    """
    cond_block = op.regions[0].blocks[0]
    body_block = op.regions[1].blocks[0]
    cond_ops = list(cond_block.operations)
    body_ops = list(body_block.operations)
    if not cond_ops or not body_ops:
        return None
    compare = owner_op(cond_ops[-1].operation.operands[0])
    if compare is None or compare.name != SH + "compare":
        return None
    direction = _comparison_direction(compare)
    body_return = body_ops[-1].operation
    lhs, rhs = compare.operands[0], compare.operands[1]

    def step_of(index: int) -> int | None:
        stepped = owner_op(body_return.operands[index])
        if stepped is None or stepped.name not in (SH + "add", SH + "subtract"):
            return None
        a, b = stepped.operands[0], stepped.operands[1]
        if block_arg_index(a, body_block) == index and (c := const_int(b)) is not None:
            return c if stepped.name == SH + "add" else -c
        if stepped.name == SH + "add" and block_arg_index(b, body_block) == index:
            return const_int(a)
        return None

    def invariant(value: Any) -> int | None:
        constant = const_int(value)
        if constant is not None:
            return constant
        index = block_arg_index(value, cond_block)
        if index is None or block_arg_index(body_return.operands[index], body_block) != index:
            return None
        return const_int(op.operands[index])

    for iv, other, flipped in ((lhs, rhs, False), (rhs, lhs, True)):
        index = block_arg_index(iv, cond_block)
        if index is None:
            continue
        init, step, limit = const_int(op.operands[index]), step_of(index), invariant(other)
        if init is None or step is None or limit is None or step == 0:
            continue
        trips = _count_trips(init, step, limit, _flip(direction) if flipped else direction)
        if trips is not None:
            return trips
    return None


def _comparison_direction(compare: Any) -> str:
    attr = compare.attributes["comparison_direction"]
    dialect = stablehlo_dialect()
    if dialect is not None:
        typed = as_binding(dialect.ComparisonDirectionAttr, attr)
        if typed is not None:
            return str(typed.value)
    match = re.search(r"comparison_direction\s+(\w+)", str(attr))
    return match.group(1) if match else ""


def _flip(direction: str) -> str:
    return {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}.get(direction, direction)


def _count_trips(init: int, step: int, limit: int, direction: str) -> int | None:
    """Iterations of ``for (i = init; i DIR limit; i += step)``; None if it would not end."""
    if direction in ("LT", "LE") and step > 0:
        span = limit - init + (1 if direction == "LE" else 0)
        return max(0, -(-span // step))
    if direction in ("GT", "GE") and step < 0:
        span = init - limit + (1 if direction == "GE" else 0)
        return max(0, -(-span // -step))
    if direction == "NE":
        span = limit - init
        if span % step == 0 and span // step >= 0:
            return span // step
    return None


@dataclass(frozen=True, slots=True)
class LoopIdentity:
    """What names a loop across the two programs: op_name and the innermost source location
    (file base name, line, column), each None when the metadata does not give it."""

    op_name: str | None = None
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def text(self) -> str | None:
        """``name.py:12`` or None."""
        if self.file is None:
            return None
        return self.file if self.line is None else f"{self.file}:{self.line}"

    @staticmethod
    def of_compiled(loop: Mapping[str, Any]) -> LoopIdentity:
        """The identity of one :func:`~roofline_report.hlo.compiled.while_loops` record."""
        file = loop.get("source_file")
        line, column = loop.get("source_line"), loop.get("source_column")
        return LoopIdentity(
            loop.get("op_name") or None,
            re.split(r"[/\\]", file)[-1] if isinstance(file, str) and file else None,
            line if isinstance(line, int) and line > 0 else None,
            column if isinstance(column, int) and column > 0 else None,
        )


_LOC_NAME = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"(?=[()])')
_LOC_FILE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def loop_identity(op: Any) -> LoopIdentity:
    """The :class:`LoopIdentity` of an MLIR op from its location: the name of a name location
    and the first file location in it (the innermost frame of a call-site chain)."""
    text = str(op.location)
    name = _LOC_NAME.match(text)
    where = _LOC_FILE.search(text)
    return LoopIdentity(
        name.group(1) if name else None,
        re.split(r"[/\\]", where.group(1))[-1] if where else None,
        int(where.group(2)) if where else None,
        int(where.group(3)) if where else None,
    )


def _location_key(identity: LoopIdentity) -> Any:
    if identity.file is None or identity.line is None or identity.column is None:
        return None
    return (identity.file, identity.line, identity.column)


def _line_key(identity: LoopIdentity) -> Any:
    if identity.file is None or identity.line is None:
        return None
    return (identity.file, identity.line)


def _name_key(identity: LoopIdentity) -> Any:
    return identity.op_name


_PASSES: tuple[tuple[str, Callable[[LoopIdentity], Any]], ...] = (
    ("source location", _location_key),
    ("source line", _line_key),
    ("op_name", _name_key),
)


def match_loops(
    ours: Sequence[LoopIdentity], theirs: Sequence[LoopIdentity]
) -> tuple[dict[int, tuple[int, str]], list[str]]:
    """Pair the program's loops (``ours``) with the compiled while loops (``theirs``).

    Pass by pass (same file, line and column; same file and line; same op_name), the loops
    sharing a key are paired in order when both sides hold as many of them. Loops left over are
    paired by position only when both programs have as many loops; a note then says so.
    Returns ({our index: (their index, how)}, notes); ``how`` is ``"source location"``,
    ``"source line"``, ``"op_name"`` or ``"position"``.
    """
    pairs: dict[int, tuple[int, str]] = {}
    taken: set[int] = set()
    for how, key in _PASSES:
        mine: dict[Any, list[int]] = {}
        other: dict[Any, list[int]] = {}
        for i, identity in enumerate(ours):
            if i not in pairs and key(identity) is not None:
                mine.setdefault(key(identity), []).append(i)
        for j, identity in enumerate(theirs):
            if j not in taken and key(identity) is not None:
                other.setdefault(key(identity), []).append(j)
        for value, indices in mine.items():
            candidates = other.get(value, [])
            if len(candidates) == len(indices):
                for i, j in zip(indices, candidates, strict=True):
                    pairs[i] = (j, how)
                    taken.add(j)
    notes: list[str] = []
    left = [i for i in range(len(ours)) if i not in pairs]
    left_theirs = [j for j in range(len(theirs)) if j not in taken]
    if not left:
        return pairs, notes
    if len(ours) == len(theirs):
        for i, j in zip(left, left_theirs, strict=True):
            pairs[i] = (j, "position")
        notes.append(
            f"loop{'s' if len(left) > 1 else ''} {', '.join(map(str, left))} paired with the "
            "compiled while loops by position: the metadata does not identify them"
        )
    else:
        notes.append(
            f"{len(theirs)} compiled loops do not pair up with the program's {len(ours)}: "
            f"loop{'s' if len(left) > 1 else ''} {', '.join(map(str, left))} matched by "
            "neither source location nor op_name, their known_trip_count not used"
        )
    return pairs, notes
