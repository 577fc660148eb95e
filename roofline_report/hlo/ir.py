"""The optimized HLO text (``compiled.as_text()``) read into frozen dataclasses.

:func:`parse_module` is the one reader of that text in the project. It keeps what a later pass
needs to reason about the program the runtime launches:

* the module: its name, header attributes (``num_partitions``, ``replica_count``, ...), the entry
  computation, every computation in order, and the source tables printed above them
  (``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames``);
* each computation: its instructions in order, its root, and the roles its callers give it
  (fusion body, loop body, loop condition, reducer, branch, called, async-wrapped);
* each instruction: name, opcode, typed result :class:`Shape` (tuples nested), operand names and
  their shapes resolved from the defining instruction in the same computation (or from the type
  printed beside the operand), raw attributes, the computations it calls by role, fusion kind,
  custom-call target, JSON backend config, ``known_trip_count``, metadata ``op_name``, the source
  file/line/column (from ``source_file=``/``source_line=`` or by resolving ``stack_frame_id``
  through the tables) and the ``stack_frame_id`` itself, replica groups decoded,
  ``source_target_pairs``, ``channel_id`` and a constant's value as written.

:meth:`Module.frame_table` gives the printed tables as :class:`StackFrames`, the whole Python
stack of each op (the frame JAX records is only its innermost).

Shapes and element types are read by :mod:`roofline_report.hlo.shapes`, replica groups by
:mod:`roofline_report.hlo.replica_groups`.

File paths are kept as written in the text: scrubbing them is the caller's job. Nothing here
imports jax. A line the reader does not understand is skipped, never an error: the text is
XLA's, and its spelling drifts between versions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from roofline_report.hlo.replica_groups import ReplicaGroups, parse_replica_groups
from roofline_report.hlo.shapes import Shape, parse_shape

__all__ = [
    "Callee",
    "Computation",
    "Instruction",
    "Module",
    "SourceLocation",
    "StackFrames",
    "parse_module",
]


# --------------------------------------------------------------------------------------------
# Module, computations, instructions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """Where an instruction came from: the file as written in the IR, line and column (0 when
    not given), and the function name when the stack-frame tables give it."""

    file: str
    line: int
    column: int = 0
    function: str = ""


@dataclass(frozen=True, slots=True)
class StackFrames:
    """A module's stack-frame table (XLA's ``StackFrameIndexProto``): every id 1-based; a
    frame is a location (file, function, line, column) and the frame that called it, its parent
    (0 for none). An instruction's ``stack_frame_id`` names its innermost frame; following the
    parents gives the whole Python stack at the op's creation, as JAX recorded it.

    :mod:`roofline_report.hlo.stack_frames` reads it from the serialized module;
    :meth:`Module.frame_table` from the tables printed above the computations."""

    file_names: Mapping[int, str]
    function_names: Mapping[int, str]
    # location id -> (file name id, function name id, line, column)
    locations: Mapping[int, tuple[int, int, int, int]]
    # frame id -> (location id, parent frame id: 0 for none)
    frames: Mapping[int, tuple[int, int]]

    def location(self, frame_id: int) -> SourceLocation | None:
        """The frame's own location; None when the frame or its file is not in the table."""
        frame = self.frames.get(frame_id)
        location = None if frame is None else self.locations.get(frame[0])
        if location is None:
            return None
        file_id, function_id, line, column = location
        file = self.file_names.get(file_id)
        if file is None:
            return None
        return SourceLocation(file, line, column, self.function_names.get(function_id, ""))

    def chain(self, frame_id: int) -> tuple[SourceLocation, ...]:
        """The frame's locations from the innermost (the op's own) to the outermost; a frame
        seen twice (a malformed table) ends the chain."""
        out: list[SourceLocation] = []
        seen: set[int] = set()
        current = frame_id
        while current and current not in seen and current in self.frames:
            seen.add(current)
            location = self.location(current)
            if location is not None:
                out.append(location)
            current = self.frames[current][1]
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Callee:
    """A computation an instruction calls, and how: ``calls`` (fusion, async, custom call),
    ``to_apply``, ``body``, ``condition``, ``branch_computations``, ``true_computation``, ..."""

    role: str
    computation: str


_CALLEE_KEYS = (
    "calls",
    "to_apply",
    "body",
    "condition",
    "branch_computations",
    "true_computation",
    "false_computation",
    "select",
    "scatter",
    "called_computations",
)
_REDUCER_OPCODES = frozenset(
    {
        "reduce",
        "reduce-window",
        "all-reduce",
        "all-reduce-start",
        "reduce-scatter",
        "scatter",
        "select-and-scatter",
        "sort",
        "map",
    }
)


@dataclass(frozen=True, slots=True, eq=False)
class Instruction:
    """One HLO instruction as written; derived fields are read once at parse time."""

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...]
    operand_shapes: tuple[Shape | None, ...]
    attributes: Mapping[str, str]
    is_root: bool = False
    callees: tuple[Callee, ...] = ()
    fusion_kind: str | None = None
    custom_call_target: str | None = None
    backend_config: Mapping[str, Any] | None = None
    known_trip_count: int | None = None
    op_name: str | None = None
    source: SourceLocation | None = None
    stack_frame_id: int | None = None  # the innermost frame in the module's StackFrames
    replica_groups: ReplicaGroups | None = None
    source_target_pairs: tuple[tuple[int, int], ...] | None = None
    channel_id: int | None = None
    parameter_number: int | None = None
    literal: str | None = None  # a constant's value as written (``constant(16)``: "16")

    def called(self, *roles: str) -> list[str]:
        """Names of the computations called in these roles (all roles when none given)."""
        return [c.computation for c in self.callees if not roles or c.role in roles]

    @property
    def operand_bytes(self) -> int | None:
        """Bytes of all operands; None when one's shape is unknown."""
        total = 0
        for shape in self.operand_shapes:
            size = None if shape is None else shape.nbytes
            if size is None:
                return None
            total += size
        return total


@dataclass(frozen=True, slots=True, eq=False)
class Computation:
    """A computation: its instructions in order, its root, and the roles its callers give it
    (``fusion``, ``loop_body``, ``loop_condition``, ``reducer``, ``branch``, ``called``,
    ``async``)."""

    name: str
    instructions: tuple[Instruction, ...]
    is_entry: bool = False
    roles: frozenset[str] = frozenset()
    _by_name: Mapping[str, Instruction] = field(default_factory=dict, repr=False)

    @property
    def root(self) -> Instruction | None:
        for instr in self.instructions:
            if instr.is_root:
                return instr
        return self.instructions[-1] if self.instructions else None

    @property
    def is_fusion_body(self) -> bool:
        return "fusion" in self.roles

    @property
    def is_loop_body(self) -> bool:
        return "loop_body" in self.roles

    @property
    def is_loop_condition(self) -> bool:
        return "loop_condition" in self.roles

    @property
    def is_reducer(self) -> bool:
        return "reducer" in self.roles

    def instruction(self, name: str) -> Instruction | None:
        return self._by_name.get(name)


_ALIAS_ENTRY = re.compile(r"\{([\d,\s]*)\}\s*:\s*\(")


@dataclass(frozen=True, slots=True, eq=False)
class Module:
    """An HLO module: header attributes, source tables, computations in order."""

    name: str
    attributes: Mapping[str, str]
    entry: str | None
    computations: Mapping[str, Computation]
    file_names: Mapping[int, str] = field(default_factory=dict)
    function_names: Mapping[int, str] = field(default_factory=dict)
    file_locations: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    stack_frames: Mapping[int, Mapping[str, int]] = field(default_factory=dict)

    @property
    def entry_computation(self) -> Computation | None:
        return None if self.entry is None else self.computations.get(self.entry)

    @property
    def aliased_outputs(self) -> tuple[tuple[int, ...], ...]:
        """The output indices (``()`` for a single output, ``(i,)`` for the i-th of a tuple)
        that alias a parameter's buffer (``input_output_alias``: donated arguments): those
        outputs are written in place, into no fresh memory."""
        text = self.attributes.get("input_output_alias", "")
        return tuple(tuple(int(i) for i in m.group(1).replace(" ", "").split(",") if i)
                     for m in _ALIAS_ENTRY.finditer(text))

    @property
    def stated_device_count(self) -> int | None:
        """:attr:`device_count` where the header states either count, None where it states
        neither (HLO printed from a profile's module proto may leave both out)."""
        if not any(key in self.attributes for key in ("num_partitions", "replica_count")):
            return None
        return self.device_count

    @property
    def device_count(self) -> int:
        """``num_partitions`` x ``replica_count`` from the header (1 each when absent)."""
        count = 1
        for key in ("num_partitions", "replica_count"):
            value = self.attributes.get(key, "1")
            count *= int(value) if value.isdigit() else 1
        return count

    def instructions(self) -> Iterator[tuple[Computation, Instruction]]:
        """Every (computation, instruction) in text order."""
        for comp in self.computations.values():
            for instr in comp.instructions:
                yield comp, instr

    def frame_table(self) -> StackFrames:
        """The stack-frame table printed above the computations (empty when none is).

        The printer writes each frame's parent one higher than the serialized module holds it
        (jaxlib 0.10.2: the outermost frame 1 is printed ``parent_frame_id=1``, and every parent
        is the serialized one plus one, checked against the proto). A parent is always an
        earlier frame, so a frame printed as its own parent shows that convention; the ids are
        shifted back then, and read as written otherwise."""
        frames = {k: (v.get("file_location_id", 0), v.get("parent_frame_id", 0))
                  for k, v in self.stack_frames.items()}
        if any(parent == k for k, (_, parent) in frames.items()):
            frames = {k: (loc, parent - 1) for k, (loc, parent) in frames.items()}
        return StackFrames(
            MappingProxyType(dict(self.file_names)),
            MappingProxyType(dict(self.function_names)),
            MappingProxyType({
                k: (v.get("file_name_id", 0), v.get("function_name_id", 0), v.get("line", 0),
                    v.get("column", 0))
                for k, v in self.file_locations.items()
            }),
            MappingProxyType(frames),
        )

    def stack_location(self, frame_id: int) -> SourceLocation | None:
        """The innermost source location of a ``stack_frame_id`` (the frame's own location)."""
        frame = self.stack_frames.get(frame_id)
        if frame is None:
            return None
        location = self.file_locations.get(frame.get("file_location_id", -1))
        if location is None:
            return None
        file = self.file_names.get(location.get("file_name_id", -1))
        if file is None:
            return None
        return SourceLocation(
            file,
            location.get("line", 0),
            location.get("column", 0),
            self.function_names.get(location.get("function_name_id", -1), ""),
        )


# --------------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------------


def matching(text: str, start: int) -> int:
    """Index just past the bracket that closes the one at ``text[start]`` (quotes respected)."""
    depth = 0
    i = start
    quote = ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch == '"':
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def split_top(text: str) -> list[str]:
    """Split at commas outside brackets and quotes."""
    parts: list[str] = []
    depth = 0
    quote = ""
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and i + 1 < len(text):
                current.append(ch + text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


_META_ITEM = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s}]+)')


def _metadata(raw: str) -> dict[str, str]:
    body = raw.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    return {key: _unquote(value) for key, value in _META_ITEM.findall(body)}


def _as_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------------------------

_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([^\s(]+)\s*\(.*\)\s*->\s*.*\{$")


@dataclass(slots=True)
class _RawInstr:
    name: str
    shape: Shape
    opcode: str
    operands: list[str]
    typed_operands: list[Shape | None]
    attributes: dict[str, str]
    is_root: bool
    parameter_number: int | None
    literal: str | None = None


@dataclass(slots=True)
class _RawComp:
    name: str
    is_entry: bool
    instrs: list[_RawInstr] = field(default_factory=list)


def _parse_line(line: str) -> _RawInstr | None:
    if " = " not in line:
        return None
    left, right = line.split(" = ", 1)
    left = left.strip()
    is_root = left.startswith("ROOT ")
    if is_root:
        left = left[5:].strip()
    name = left.lstrip("%")
    if not name or " " in name:
        return None
    right = right.strip()
    if right.startswith("("):
        end = matching(right, 0)
        shape_text, rest = right[:end], right[end:].strip()
    else:
        shape_text, _, rest = right.partition(" ")
    shape = parse_shape(shape_text)
    paren = rest.find("(")
    if shape is None or paren <= 0:
        return None
    opcode = rest[:paren].strip()
    close = matching(rest, paren)
    inside = re.sub(r"/\*.*?\*/", "", rest[paren + 1 : close - 1])
    operands: list[str] = []
    typed: list[Shape | None] = []
    parameter_number = None
    literal = None
    if opcode == "parameter":
        parameter_number = _as_int(inside.strip())
    elif opcode == "constant":
        literal = inside.strip()
    else:
        for part in split_top(inside):
            words = part.split()
            if not words:
                continue
            operands.append(words[-1].lstrip("%"))
            typed.append(parse_shape(part[: part.rfind(words[-1])]) if len(words) > 1 else None)
    attributes: dict[str, str] = {}
    for item in split_top(rest[close:].lstrip(", ")):
        key, sep, value = item.partition("=")
        if sep:
            attributes[key.strip()] = value.strip()
    return _RawInstr(name, shape, opcode, operands, typed, attributes, is_root, parameter_number,
                     literal)


def _table_entry(line: str) -> tuple[int, str] | None:
    number, _, value = line.strip().partition(" ")
    return (int(number), value.strip()) if number.isdigit() else None


def parse_module(text: str) -> Module:
    """Read optimized HLO text into a :class:`Module` (see the module docstring).

    Raises TypeError when ``text`` is not a string; text without any computation gives a module
    with none (the caller decides whether that is an error).
    """
    if not isinstance(text, str):
        raise TypeError(f"HLO text must be a string, got {type(text).__name__}")
    name = ""
    header: dict[str, str] = {}
    tables: dict[str, dict[int, str]] = {t: {} for t in _TABLES}
    table: str | None = None
    raws: list[_RawComp] = []
    current: _RawComp | None = None
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if current is None:
            if line.startswith("HloModule "):
                first, *rest = split_top(line[len("HloModule ") :])
                name = first.strip()
                for item in rest:
                    key, sep, value = item.partition("=")
                    if sep:
                        header[key.strip()] = value.strip()
                continue
            if line in _TABLES:
                table = line
                continue
            if table is not None:
                entry = _table_entry(line) if line else None
                if entry is None:
                    table = None
                else:
                    tables[table][entry[0]] = entry[1]
                    continue
            match = _HEADER.match(line)
            if match and " = " not in line:
                current = _RawComp(match.group(2), bool(match.group(1)))
                raws.append(current)
            continue
        if line == "}":
            current = None
            continue
        instr = _parse_line(line)
        if instr is not None:
            current.instrs.append(instr)
    return _build(name, header, tables, raws)


def _numbers(value: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", value)}


def _build(
    name: str, header: dict[str, str], tables: dict[str, dict[int, str]], raws: list[_RawComp]
) -> Module:
    roles: dict[str, set[str]] = {}
    for comp in raws:
        for instr in comp.instrs:
            for callee in _callees(instr.attributes):
                roles.setdefault(callee.computation, set()).add(_role(instr.opcode, callee.role))
    shell = Module(
        name,
        MappingProxyType(dict(header)),
        None,
        {},
        file_names={k: _unquote(v) for k, v in tables["FileNames"].items()},
        function_names={k: _unquote(v) for k, v in tables["FunctionNames"].items()},
        file_locations={k: _numbers(v) for k, v in tables["FileLocations"].items()},
        stack_frames={k: _numbers(v) for k, v in tables["StackFrames"].items()},
    )
    computations: dict[str, Computation] = {}
    entry: str | None = None
    for comp in raws:
        shapes = {raw.name: raw.shape for raw in comp.instrs}
        instrs = [_instruction(raw, shapes, shell) for raw in comp.instrs]
        computations[comp.name] = Computation(
            comp.name,
            tuple(instrs),
            comp.is_entry,
            frozenset(roles.get(comp.name, set())),
            MappingProxyType({i.name: i for i in instrs}),
        )
        if comp.is_entry:
            entry = comp.name
    return Module(
        name,
        shell.attributes,
        entry,
        MappingProxyType(computations),
        shell.file_names,
        shell.function_names,
        shell.file_locations,
        shell.stack_frames,
    )


def _role(opcode: str, key: str) -> str:
    if opcode == "fusion":
        return "fusion"
    if opcode == "while":
        return "loop_body" if key == "body" else "loop_condition"
    if opcode in _REDUCER_OPCODES and key in ("to_apply", "select", "scatter"):
        return "reducer"
    if opcode == "conditional":
        return "branch"
    if opcode.startswith("async") or opcode.endswith("-start"):
        return "async"
    return "called"


def _callees(attributes: Mapping[str, str]) -> list[Callee]:
    out: list[Callee] = []
    for key in _CALLEE_KEYS:
        value = attributes.get(key)
        if value:
            for part in value.strip("{}").split(","):
                if part.strip():
                    out.append(Callee(key, part.strip().lstrip("%")))
    return out


def _instruction(raw: _RawInstr, shapes: Mapping[str, Shape], module: Module) -> Instruction:
    attrs = raw.attributes
    meta = _metadata(attrs.get("metadata", ""))
    config: Mapping[str, Any] | None = None
    raw_config = attrs.get("backend_config")
    if raw_config:
        try:
            parsed = json.loads(raw_config)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            config = MappingProxyType(parsed)
    trip = None
    if config is not None and isinstance(config.get("known_trip_count"), dict):
        trip = _as_int(str(config["known_trip_count"].get("n", "")))
    source: SourceLocation | None = None
    frame = _as_int(meta["stack_frame_id"]) if "stack_frame_id" in meta else None
    if "source_file" in meta:
        source = SourceLocation(meta["source_file"], _as_int(meta.get("source_line")) or 0)
    elif frame is not None:
        source = module.stack_location(frame)
    groups_text = attrs.get("replica_groups")
    if groups_text is not None and "device_ids" in attrs:  # split at its comma by split_top
        groups_text = f"{groups_text}, device_ids={attrs['device_ids']}"
    pairs = None
    if "source_target_pairs" in attrs:
        found = re.findall(r"\{\s*(\d+)\s*,\s*(\d+)\s*\}", attrs["source_target_pairs"])
        pairs = tuple((int(a), int(b)) for a, b in found)
    operand_shapes = tuple(
        typed if typed is not None else shapes.get(name)
        for name, typed in zip(raw.operands, raw.typed_operands, strict=True)
    )
    target = attrs.get("custom_call_target")
    return Instruction(
        name=raw.name,
        opcode=raw.opcode,
        shape=raw.shape,
        operands=tuple(raw.operands),
        operand_shapes=operand_shapes,
        attributes=MappingProxyType(dict(attrs)),
        is_root=raw.is_root,
        callees=tuple(_callees(attrs)),
        fusion_kind=attrs.get("kind") if raw.opcode == "fusion" else None,
        custom_call_target=None if target is None else _unquote(target),
        backend_config=config,
        known_trip_count=trip,
        op_name=meta.get("op_name"),
        source=source,
        stack_frame_id=frame,
        replica_groups=None if groups_text is None else parse_replica_groups(groups_text),
        source_target_pairs=pairs,
        channel_id=_as_int(attrs.get("channel_id")),
        parameter_number=raw.parameter_number,
        literal=raw.literal,
    )
