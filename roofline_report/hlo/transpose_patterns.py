"""Transposing kernels (:func:`transpose_pattern`): ``transpose``, ``fused-transpose``,
``broadcast-transpose`` and ``block-transpose`` (see :mod:`roofline_report.hlo.kernel_patterns`
for each), found by following each source's axes through the kernel's instructions to its root
and comparing the order they come out in with the source's own in memory. Pure: no jax.

An axis is followed as atoms ``(source, axis, length, stride)``: a reshape or bitcast may split
an axis into parts (each an atom), a broadcast adds axes of no source (source -1), a slice cuts
an atom's length, and elementwise ops pass their operand's atoms on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from roofline_report.hlo.ir import Instruction, Module
from roofline_report.hlo.kernel_cost import ELEMENTWISE, TRANSCENDENTAL, ints_in
from roofline_report.hlo.pattern import Pattern, is_library
from roofline_report.hlo.shapes import Array

_Atom = tuple[int, int, int, int]
_Axes = list[tuple[_Atom, ...]]


def _regroup(atoms: list[_Atom], dims: Sequence[int]) -> _Axes | None:
    """Cut a sequence of atoms (size-1 atoms dropped) into dimensions of these sizes, in
    order, splitting an atom where a dimension ends inside it (its major part goes first);
    None where the sizes do not divide."""
    seq = [a for a in atoms if a[2] != 1]
    out: _Axes = []
    position = 0
    for size in dims:
        group: list[_Atom] = []
        product = 1
        while product < size and position < len(seq):
            n, axis, length, stride = seq[position]
            need = size // product
            if length > need:
                if size % product or length % need:
                    return None
                group.append((n, axis, need, stride * (length // need)))
                seq[position] = (n, axis, length // need, stride)
                product = size
                break
            group.append(seq[position])
            product *= length
            position += 1
        if product != size:
            return None
        out.append(tuple(group))
    return out if position == len(seq) else None


def _physical(axes: _Axes, array: Array) -> list[_Atom]:
    return [atom for d in reversed(array.minor_to_major()) for atom in axes[d]]


def _logical(axes: _Axes) -> list[_Atom]:
    return [atom for dim in axes for atom in dim]


def _follow(instr: Instruction, known: Mapping[str, _Axes]) -> _Axes | None:
    """The atoms of an instruction's result from those of its operands, for the ops that move
    elements without combining them; None for any other."""
    op = instr.opcode
    array = instr.shape.array
    if array is None:
        return None
    if op == "transpose":
        source = known.get(instr.operands[0]) if instr.operands else None
        perm = ints_in(instr.attributes.get("dimensions"))
        if source is None or sorted(perm) != list(range(len(source))):
            return None
        return [source[p] for p in perm]
    if op == "broadcast":
        source = known.get(instr.operands[0]) if instr.operands else None
        if source is None:
            return None
        mapped = dict(zip(ints_in(instr.attributes.get("dimensions")), source, strict=False))
        return [mapped.get(d, ((-1, d, size, 1),) if size != 1 else ())
                for d, size in enumerate(array.dims)]
    if op in ("bitcast", "reshape"):
        source = known.get(instr.operands[0]) if instr.operands else None
        operand = instr.operand_shapes[0] if instr.operand_shapes else None
        if source is None or operand is None or operand.array is None:
            return None
        if op == "bitcast":
            order = list(reversed(array.minor_to_major()))
            groups = _regroup(_physical(source, operand.array), [array.dims[d] for d in order])
            if groups is None:
                return None
            axes: _Axes = [()] * len(array.dims)
            for d, group in zip(order, groups, strict=True):
                axes[d] = group
            return axes
        return _regroup(_logical(source), list(array.dims))
    if op in ("slice", "dynamic-slice"):
        return _sliced(known.get(instr.operands[0]) if instr.operands else None, array)
    if op in ELEMENTWISE or op in TRANSCENDENTAL or op == "copy":
        for name in instr.operands:
            source = known.get(name)
            if source is not None and len(source) == len(array.dims) \
                    and any(a[0] >= 0 for a in _logical(source)):
                return source
    return None


def _sliced(source: _Axes | None, array: Array) -> _Axes | None:
    """The atoms of a slice (or dynamic slice) of ``source`` whose result is ``array``: its
    axes in their order, each cut to its new length; None where a cut axis is made of several
    atoms (a slice across an axis a reshape merged)."""
    if source is None or len(source) != len(array.dims):
        return None
    out: _Axes = []
    for atoms, size in zip(source, array.dims, strict=True):
        whole = 1
        for atom in atoms:
            whole *= atom[2]
        if size == whole:
            out.append(atoms)
        elif size == 1:
            out.append(())
        elif len(atoms) == 1:
            n, axis, _, stride = atoms[0]
            out.append(((n, axis, size, stride),))
        else:
            return None
    return out


def _whole(n: int, array: Array) -> _Axes:
    return [((n, d, size, 1),) for d, size in enumerate(array.dims)]


def _reordered(out: Sequence[_Atom], n: int, source: Array) -> tuple[int, ...] | None:
    """The axes of source ``n`` in the order they come out of ``out`` (physical atoms, major
    to minor), when that order is not the source's own in memory (size-1 axes aside; an axis
    split into parts counts each part in place); None when the order is the source's."""
    mine = [a for a in out if a[0] == n and a[2] != 1]
    rank = {d: i for i, d in enumerate(reversed(source.minor_to_major()))}
    keys = [(rank[a[1]], -a[3]) for a in mine]
    if keys == sorted(keys):
        return None
    came: list[int] = []
    for a in mine:
        if not came or came[-1] != a[1]:
            came.append(a[1])
    return tuple(came)


def _detail(came: tuple[int, ...], source: Array) -> str:
    return f"axes {came} of {source.dtype}[{','.join(map(str, source.dims))}]"


def _reach(came: tuple[int, ...], source: Array) -> int:
    """The length of the source axis a transpose brings out minor-most: the source rows each
    run of its output reads one element of (0 where not known)."""
    return source.dims[came[-1]] if came and 0 <= came[-1] < len(source.dims) else 0


def _walk(came: tuple[int, ...], source: Array) -> int:
    """The bytes a transpose steps in its source between two reads along its output's minor
    axis: the stride, in the source's layout, of the source axis that comes out minor-most
    (a row's bytes for ``x.T``; 8 KiB for the full reversal of a float32 ``[256, 16, 128]``);
    0 where not known."""
    if not came or not source.elements or not source.nbytes:
        return 0
    stride = 1
    for d in source.minor_to_major():
        if d == came[-1]:
            return stride * (source.nbytes // source.elements)
        stride *= source.dims[d]
    return 0


def kept_run(out: Sequence[_Atom], n: int, source: Array) -> int:
    """The elements of source ``n`` that stay contiguous at the minor end of ``out`` (physical
    atoms, major to minor): the source's minor-most axes, in its layout's order and unbroken
    (an axis split in parts counts the parts that follow on from its minor end), as far as
    they come out at the minor end in the same order. 1 when the source's minor axis moves
    (a swap of the minor axis, ``x.T``); a key-value cache re-laid out from ``[B, S, H, D]``
    to ``[B, H, S, D]`` keeps runs of D."""
    order = [d for d in source.minor_to_major() if source.dims[d] != 1]
    run, axis, stride = 1, 0, 1
    for atom in reversed(out):
        if atom[2] == 1:
            continue
        if axis >= len(order) or atom[0] != n or atom[1] != order[axis] or atom[3] != stride:
            break
        run *= atom[2]
        stride *= atom[2]
        if stride == source.dims[order[axis]]:
            axis, stride = axis + 1, 1
    return run


def _root_transpose(program: Sequence[Instruction], target: Instruction,
                    unfused: Instruction | None) -> Pattern:
    """A copy or transpose kernel (``unfused``: its operand 0 is the source), or a fusion's
    ``program`` whose ``target`` root is one, followed from every source at once."""
    known: dict[str, _Axes] = {}
    sources: dict[int, Array] = {}
    for step in program:
        if step.opcode == "parameter" and step.shape.array is not None \
                and step.parameter_number is not None:
            n = step.parameter_number
            sources[n] = step.shape.array
            known[step.name] = _whole(n, step.shape.array)
            continue
        if step is unfused:
            operand = step.operand_shapes[0] if step.operand_shapes else None
            if operand is None or operand.array is None or not step.operands:
                return Pattern()
            sources[0] = operand.array
            known[step.operands[0]] = _whole(0, operand.array)
        axes = _follow(step, known)
        if axes is not None:
            known[step.name] = axes
    if target.shape.array is None or target.name not in known:
        return Pattern()
    out = _physical(known[target.name], target.shape.array)
    for n, source in sorted(sources.items()):
        came = _reordered(out, n, source)
        if came is not None:
            return Pattern("transpose", target.shape.array.elements, _detail(came, source),
                           kept_run(out, n, source), walk=_walk(came, source),
                           reach=_reach(came, source))
    return Pattern()


def _fused_transpose(program: Sequence[Instruction], target: Instruction) -> Pattern:
    """A fusion whose transposing copy or transpose feeds other work (its root is not the
    copy): each source followed alone through the fusion to the root, the first whose axes
    come out of the root's layout in another order."""
    if target.shape.array is None:
        return Pattern()
    for param in program:
        array = param.shape.array
        n = param.parameter_number
        if param.opcode != "parameter" or array is None or n is None:
            continue
        known: dict[str, _Axes] = {param.name: _whole(n, array)}
        for step in program:
            if step.opcode != "parameter" and (axes := _follow(step, known)) is not None:
                known[step.name] = axes
        if target.name not in known:
            continue
        out = _physical(known[target.name], target.shape.array)
        came = _reordered(out, n, array)
        if came is not None:
            return Pattern("fused-transpose", target.shape.array.elements,
                           _detail(came, array) + f" into {target.opcode}",
                           kept_run(out, n, array), walk=_walk(came, array),
                           reach=_reach(came, array))
    return Pattern()


def transpose_pattern(instr: Instruction, module: Module, tpu: bool = False) -> Pattern:
    """A copy or transpose kernel, or a loop fusion whose root is one, that changes the order
    of its data in memory: the source's axes (size-1 axes aside) come out in another order
    (``transpose``); or a loop fusion holding such a copy or transpose that feeds other work
    (``fused-transpose``); either fusion holding a broadcast as well, and reading a matrix
    whose rows are a power of two bytes long (1 KiB or more), is a ``broadcast-transpose``
    (an XLA:CPU fact, its plain loop's cache sets: never on a TPU); a ``transpose`` fusion
    holding arithmetic with a broadcast operand whose rows do not alias is a
    ``fused-transpose`` (XLA:CPU runs it as one, not as a plain transposing copy). Either
    that keeps the source's minor axis minor, moving whole runs (:func:`kept_run`), is a
    ``block-transpose`` with its run as row (an XLA:CPU fact too: a TPU keeps its
    transposes)."""
    found = _any_transpose(instr, module, tpu)
    if found.name is None or found.name == "broadcast-transpose":
        return found
    if found.row > 1 and not tpu:
        return replace(found, name="block-transpose")
    return replace(found, row=0)


def _any_transpose(instr: Instruction, module: Module, tpu: bool) -> Pattern:
    if instr.opcode in ("copy", "transpose"):
        return _root_transpose([instr], instr, instr)
    if instr.opcode != "fusion" or is_library(instr):
        return Pattern()
    names = instr.called("calls")
    comp = module.computations.get(names[0]) if names else None
    if comp is None or comp.root is None:
        return Pattern()
    root: Instruction | None = comp.root
    while root is not None and root.opcode == "bitcast":
        root = comp.instruction(root.operands[0]) if root.operands else None
    if root is not None and root.opcode in ("copy", "transpose"):
        found = _root_transpose(list(comp.instructions), comp.root, None)
        if found.name is None:
            # Its sources meet before the root's copy in orders no one layout names (two
            # transposed streams multiplied, say): each followed alone, as a fused one is.
            found = _fused_transpose(list(comp.instructions), comp.root)
    elif any(i.opcode in ("copy", "transpose") for i in comp.instructions):
        found = _fused_transpose(list(comp.instructions), comp.root)
    else:
        return Pattern()
    if found.name is None or tpu or found.row > 1 \
            or not any(i.opcode == "broadcast" for i in comp.instructions):
        return found
    if _aliasing(found.walk) or any(_aliasing_rows(i) for i in comp.instructions
                                    if i.opcode == "parameter"):
        return replace(found, name="broadcast-transpose", row=found.reach)
    if found.name == "transpose" and any(i.opcode in ARITHMETIC for i in comp.instructions):
        # A transposing copy of a sum or product with a broadcast operand (a bias, a scale)
        # is one loop over the output, as a fused transpose is: XLA:CPU's copy of a plain
        # transpose does not run it.
        return replace(found, name="fused-transpose", detail=f"{found.detail} with a broadcast")
    return found


# The arithmetic that makes a transposing copy with a broadcast operand a fused transpose.
ARITHMETIC = (ELEMENTWISE | TRANSCENDENTAL) - {"convert", "real", "imag", "complex"}


ALIAS_ROW_BYTES = 1024  # rows of a power of two bytes from this long share cache sets


def _aliasing(stride: int) -> bool:
    """Whether reads that far apart (bytes) share cache sets: a power of two from
    :data:`ALIAS_ROW_BYTES` up."""
    return stride >= ALIAS_ROW_BYTES and stride & (stride - 1) == 0


def _aliasing_rows(param: Instruction) -> bool:
    """Whether a fusion parameter is a matrix (two dimensions or more above size 1) whose rows
    (its minor-most such dimension, in its layout) are a power of two bytes long, at least
    :data:`ALIAS_ROW_BYTES`: walking it across its rows, every read lands in the same few cache
    sets."""
    array = param.shape.array
    if array is None:
        return False
    order = [d for d in array.minor_to_major() if array.dims[d] != 1]
    nbytes = array.nbytes
    if len(order) < 2 or not nbytes or not array.elements:
        return False
    return _aliasing(array.dims[order[0]] * (nbytes // array.elements))
