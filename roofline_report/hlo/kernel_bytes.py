"""The bytes one launch of a kernel touches (:func:`kernel_traffic`).

``bytes_read``/``bytes_written`` are the bytes a launch TOUCHES, what the model charges;
``boundary_bytes_read``/``boundary_bytes_written`` keep the old figure, its operand and result
buffers whole; ``bytes_rule`` says why they differ. The rules, those of XLA's emitters and of
JAX's own roofline (``jax.experimental.roofline``: a gather reads the gathered elements, a
scatter 3 x its updates plus its indices):

* ``slice``/``dynamic-slice``: reads the slice's elements of operand 0 (and its indices).
* ``gather``: reads the gathered elements of operand 0 (the result's count), and the indices.
* ``dynamic-update-slice``, alone or as the root of a fusion (through bitcasts) whose operand 0
  is a fusion parameter: XLA runs it in place (copy insertion gives the update and its operand
  one buffer, and the emitter loops over the update only), so it does not read operand 0 and
  writes the update's elements only; ``in_place`` is true.
* ``scatter`` (alone or as a fusion root, in place alike): reads and writes the updated elements
  of its operand (not read when the combiner only overwrites), reads the indices and updates.
* A fusion parameter used only by slices, dynamic slices, gathers and in-place updates inside the
  fusion, possibly through index-only ops (bitcast, reshape, transpose, copy), is read for those
  elements only (their sum, at most the whole parameter); any other use reads it whole.
* Everything else: operands and results whole (a library call's s8 workspace is not output).
* An asynchronous ``slice-start``/``slice-done`` or ``copy-start``/``copy-done`` pair is one
  kernel, read by its op's rule (an asynchronous slice reads its slice), its result the
  ``-done``'s.

In a TPU's module (:mod:`roofline_report.hlo.tpu`) the bytes are the HBM traffic: an operand or
result in the core's own memory (vector memory ``S(1)``, scalars, sync flags) is counted apart
(``on_chip_read``, ``on_chip_written``), not as traffic, and the boundary bytes are the HBM's
too; ``ConcatBitcast`` and ``AllocateBuffer`` move nothing; and a fusion nested inside the
kernel's is followed (its compiler wraps a scatter in a fusion inside the kernel's: the scatter
still updates the donated table in place); and an in-place dynamic-update-slice of an array
stored in tiles moves the whole tiles its update crosses, reading those it covers only in part
(:func:`~roofline_report.hlo.tpu.updated_tiles`: one token's update of a cache whose positions
are minor-most moves 16 MiB of tiles for 128 KiB); and every array stored in tiles moves with
its tiles' padding (:attr:`~roofline_report.hlo.shapes.Array.padded_nbytes`: a
``bf16[65536,1,64]`` in tiles of 2 x 128 moves four times its 8 MiB), recorded apart too
(``padding_read``, ``padding_written``, ``padding_on_chip``). Checked against XLA's own per-op
HBM figures in the TPU v5e traces (``memory_access_breakdown``, logical bytes: equal to the
count's less its padding) for every kernel of the pattern programs but those XLA's figures
leave out (custom calls), charge to the ``-done`` (an asynchronous copy's write) or charge
otherwise (a fusion's operand read by two of its ops: twice; a scatter: its whole output
written, nothing read; a sort: no write).

Inside a loop, these are per launch: a dynamic-update-slice writing one row of a [32, 32, 256]
buffer per iteration charges one row (32 KiB) per launch, not the buffer (1 MiB).

Pure: no jax.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from roofline_report.hlo.ir import Computation, Instruction, Module
from roofline_report.hlo.shapes import Array, Shape
from roofline_report.hlo.tpu import NO_BYTES_TARGETS, TPU, on_chip, updated_tiles

# Ops that only map indices inside a fusion: a slice of their result reads the slice's elements
# of their operand, nothing more.
_INDEX_MAPS = frozenset({"bitcast", "reshape", "transpose", "copy", "get-tuple-element"})


def _array_bytes(array: Array, elements: int) -> int:
    """Bytes of ``elements`` elements of ``array``'s type (sub-byte types as it stores them)."""
    size = Array(array.dtype, (max(0, elements),), array.layout).nbytes
    return size or 0


def _full(shape: Shape | None, tpu: bool = False) -> Counter[str]:
    """Bytes of every array of ``shape`` by element type; with ``tpu``, with their tiles'
    padding (:attr:`~roofline_report.hlo.shapes.Array.padded_nbytes`)."""
    if shape is None:
        return Counter()
    if not tpu:
        return Counter(shape.bytes_by_dtype())
    out: Counter[str] = Counter()
    for array in shape.arrays():
        size = array.padded_nbytes
        if size:
            out[array.dtype] += size
    return out


def _part(array: Array | None, elements: int) -> Counter[str]:
    if array is None:
        return Counter()
    nbytes = _array_bytes(array, min(elements, array.elements))
    return Counter({array.dtype: nbytes}) if nbytes else Counter()


def elements_of(shape: Shape | None) -> int:
    return shape.array.elements if shape is not None and shape.array is not None else 0


def _reads_old_value(module: Module, scatter: Instruction) -> bool:
    """Whether a scatter's combiner reads the value it replaces (an add does; an overwrite,
    whose root is its second parameter, does not)."""
    for name in scatter.called("to_apply"):
        comp = module.computations.get(name)
        root = comp.root if comp is not None else None
        if root is not None and root.opcode == "parameter":
            return root.parameter_number == 0
    return True


def scatter_parts(instr: Instruction) -> tuple[int, list[Shape | None]]:
    """(number of inputs, update shapes) of a scatter: operands are inputs..., indices,
    updates..."""
    inputs = max(1, (len(instr.operands) - 1) // 2)
    return inputs, list(instr.operand_shapes[inputs + 1:])


@dataclass
class Traffic:
    """The bytes one launch of a kernel reads and writes: touched (what it moves) and at its
    boundary (its operand and result buffers), by element type, with the rules that made them
    differ and whether it writes a buffer it was given (in place)."""

    read: Counter[str] = field(default_factory=Counter)
    written: Counter[str] = field(default_factory=Counter)
    boundary_read: Counter[str] = field(default_factory=Counter)
    boundary_written: Counter[str] = field(default_factory=Counter)
    rules: list[str] = field(default_factory=list)
    in_place: bool = False
    # A TPU's: the bytes read from and written to the core's own memory (not traffic).
    on_chip_read: Counter[str] = field(default_factory=Counter)
    on_chip_written: Counter[str] = field(default_factory=Counter)
    # The bytes read from each operand, in operand order (a TPU's: its HBM bytes).
    read_by_operand: list[int] = field(default_factory=list)
    # A TPU's: the reads (by operand) and writes (by output) already counted in whole tiles
    # (an in-place update's), which its layouts' padding is not added to again.
    whole_tiles: set[tuple[str, int]] = field(default_factory=set)
    # A TPU's: how many of the bytes above are its arrays' tile padding (HBM reads, HBM
    # writes, and on chip both ways).
    padding_read: int = 0
    padding_written: int = 0
    padding_on_chip: int = 0

    @property
    def touched(self) -> int:
        return sum(self.read.values()) + sum(self.written.values())


class FusionBytes:
    """What a fusion's own computation says about the bytes it touches: per parameter, the
    elements it reads; per output, the elements it writes (in-place updates). With ``nested``
    (a TPU's module), a fusion called inside it is followed too: the TPU compiler wraps a
    scatter in a fusion inside the kernel's fusion."""

    def __init__(self, module: Module, comp: Computation, nested: bool = False) -> None:
        self.module = module
        self.comp = comp
        self.nested = nested
        self._inner: dict[str, FusionBytes] = {}
        self.users: dict[str, list[tuple[Instruction, int]]] = {}
        for instr in comp.instructions:
            for index, name in enumerate(instr.operands):
                self.users.setdefault(name, []).append((instr, index))
        root = comp.root
        self.outputs: list[str] = []
        if root is not None:
            self.outputs = list(root.operands) if root.opcode == "tuple" else [root.name]
        self.updates: dict[str, Instruction] = {}  # in-place update by the output it gives
        for name in self.outputs:
            update = self._in_place_update(name)
            if update is not None:
                self.updates[name] = update

    def _through_maps(self, name: str, maps: frozenset[str]) -> Instruction | None:
        instr = self.comp.instruction(name)
        while instr is not None and instr.opcode in maps and instr.operands:
            instr = self.comp.instruction(instr.operands[0])
        return instr

    def _is_parameter_view(self, name: str) -> bool:
        source = self._through_maps(name, frozenset({"bitcast", "get-tuple-element"}))
        return source is not None and source.opcode == "parameter"

    def inner(self, fusion: Instruction) -> FusionBytes | None:
        """The bytes of a fusion called inside this one (``nested`` only)."""
        names = fusion.called("calls") if self.nested and fusion.opcode == "fusion" else []
        comp = self.module.computations.get(names[0]) if names else None
        if comp is None:
            return None
        if comp.name not in self._inner:
            self._inner[comp.name] = FusionBytes(self.module, comp, nested=True)
        return self._inner[comp.name]

    def _in_place_update(self, output: str) -> Instruction | None:
        """The dynamic-update-slice or scatter that gives this output in place: it writes into
        the buffer of a fusion parameter (operand 0 of the update, bitcasts and tuple elements
        aside), which XLA's buffer assignment shares with the output; with ``nested``, also
        through a fusion inside this one whose root is such an update of its parameter fed by
        one of this fusion's parameters."""
        instr = self._through_maps(output, frozenset({"bitcast"}))
        if instr is None:
            return None
        inner = self.inner(instr)
        if inner is not None and len(inner.outputs) == 1:
            update = inner.updates.get(inner.outputs[0])
            target = inner._target(update) if update is not None else None
            if update is not None and target is not None and target < len(instr.operands) \
                    and self._is_parameter_view(instr.operands[target]):
                return update
            return None
        if instr.opcode == "dynamic-update-slice" and instr.operands \
                and self._is_parameter_view(instr.operands[0]):
            return instr
        if instr.opcode == "scatter":
            inputs, _ = scatter_parts(instr)
            if all(self._is_parameter_view(n) for n in instr.operands[:inputs]):
                return instr
        return None

    def updated_operand(self) -> int | None:
        """The parameter number whose buffer the fusion's single output updates in place (a
        dynamic-update-slice or scatter root): the output is that operand's buffer; None for
        any other fusion."""
        if len(self.outputs) != 1:
            return None
        update = self.updates.get(self.outputs[0])
        return self._target(update) if update is not None else None

    def _target(self, update: Instruction) -> int | None:
        """The parameter number of the buffer an in-place update writes into."""
        source = self._through_maps(update.operands[0] if update.operands else "",
                                    frozenset({"bitcast", "get-tuple-element"}))
        return source.parameter_number if source is not None \
            and source.opcode == "parameter" else None

    def read_elements(self, param: Instruction) -> int:
        """Elements of a fusion parameter the fusion reads: all of them, unless every use only
        slices, gathers from or updates in place the parameter (through index maps)."""
        full = elements_of(param.shape)
        in_place = set(id(u) for u in self.updates.values())
        total = 0
        pending = [param]
        seen: set[str] = set()
        while pending:
            value = pending.pop()
            if value.name in seen:
                continue
            seen.add(value.name)
            if value.name in self.outputs:
                return full
            for user, index in self.users.get(value.name, []):
                op = user.opcode
                if op in _INDEX_MAPS:
                    pending.append(user)
                elif op in ("slice", "dynamic-slice", "gather") and index == 0:
                    total += elements_of(user.shape)  # the slice or the gathered elements
                elif op == "dynamic-update-slice" and index == 0 and id(user) in in_place:
                    pass  # written in place, never read
                elif op == "scatter" and id(user) in in_place \
                        and index < scatter_parts(user)[0]:
                    _, updates = scatter_parts(user)
                    if _reads_old_value(self.module, user):
                        total += elements_of(updates[index] if index < len(updates) else None)
                elif op in ("dynamic-slice", "dynamic-update-slice", "gather") and index > 0:
                    total += elements_of(value.shape)  # start indices: read whole
                elif (inner := self.inner(user)) is not None \
                        and (inner_param := inner.parameter(index)) is not None:
                    total += min(inner.read_elements(inner_param), elements_of(value.shape))
                else:
                    return full
            if total >= full:
                return full
        return min(total, full)

    def parameter(self, number: int) -> Instruction | None:
        return next((i for i in self.comp.instructions
                     if i.opcode == "parameter" and i.parameter_number == number), None)


def _tiles(target: Array | None, update: Shape | None, tpu: bool
           ) -> tuple[int, Counter[str], Counter[str], str] | None:
    """A TPU's in-place update of ``update`` into ``target`` by whole tiles
    (:func:`~roofline_report.hlo.tpu.updated_tiles`): (tiles, bytes read, bytes written, the
    rule's words); None on another backend, for an untiled target, or where the tiles move no
    more than the update's own bytes would (nothing to add)."""
    if not tpu or target is None or update is None or update.array is None:
        return None
    found = updated_tiles(target, update.array)
    if found is None:
        return None
    tiles, read, written = found
    own = _array_bytes(target, update.array.elements)
    if read == 0 and written <= own:
        return None
    what = "reads and writes" if read else "writes"
    shape = " x ".join(str(t) for t in target.tile)
    words = (f"{what} the {tiles} whole tiles of {shape} its update crosses, "
             f"{written} bytes for its {own}")
    dtype = target.dtype
    return (tiles, Counter({dtype: read}) if read else Counter(),
            Counter({dtype: written}), words)


def _split(counter: Counter[str], shape: Shape | None, backend: str | None
           ) -> tuple[Counter[str], Counter[str]]:
    """(memory traffic, on-chip bytes) of the bytes ``counter`` counts of one operand or
    result of ``shape``: an array on a TPU core's own memory is all on chip; a tuple with
    arrays there is split by its arrays where the counter is the whole tuple's."""
    if shape is None or backend != TPU:
        return counter, Counter()
    if shape.array is not None:
        return (Counter(), counter) if on_chip(shape.array, backend) else (counter, Counter())
    whole = counter == _full(shape)
    if not whole and counter != _full(shape, tpu=True):
        return counter, Counter()
    hbm: Counter[str] = Counter()
    chip: Counter[str] = Counter()
    for array in shape.arrays():
        size = array.nbytes if whole else array.padded_nbytes
        if size:
            (chip if on_chip(array, backend) else hbm)[array.dtype] += size
    return hbm, chip


def kernel_traffic(instr: Instruction, module: Module, done: Instruction | None = None,
                   fused: dict[str, FusionBytes] | None = None,
                   backend: str | None = None) -> Traffic:
    """The bytes one launch of a kernel reads and writes (rules in the module docstring).
    ``backend``: the backend the module was compiled for; a TPU's rules apply to a TPU's
    module only."""
    traffic = Traffic()
    tpu = backend == TPU
    result = done.shape if done is not None else instr.shape
    outputs: list[Shape] = list(result.elements) if result.is_tuple else [result]
    last = outputs[-1] if result.is_tuple and outputs else None
    if instr.opcode == "custom-call" and last is not None and last.array is not None \
            and last.array.dtype in ("s8", "u8"):
        outputs = outputs[:-1]  # a library call's scratch workspace
    op = instr.opcode
    if done is not None and op.endswith("-start") and op != "async-start":
        op = op[: -len("-start")]  # an asynchronous slice or copy: the op's own rule
    operands = list(instr.operand_shapes)
    for shape in operands:
        traffic.boundary_read.update(_split(_full(shape, tpu), shape, backend)[0])
    for shape in outputs:
        traffic.boundary_written.update(_split(_full(shape, tpu), shape, backend)[0])
    reads: list[Counter[str]] = [_full(s) for s in operands]
    writes: list[Counter[str]] = [_full(s) for s in outputs]
    first = operands[0].array if operands and operands[0] is not None else None
    if tpu and op == "custom-call" and instr.custom_call_target in NO_BYTES_TARGETS:
        reads = [Counter() for _ in operands]
        writes = [Counter() for _ in outputs]
        traffic.rules.append(f"{instr.custom_call_target}: moves no bytes")
    elif op in ("slice", "dynamic-slice") and operands:
        reads[0] = _part(first, elements_of(result))
        traffic.rules.append(f"{op}: reads only the slice of operand 0")
    elif op == "gather" and operands:
        reads[0] = _part(first, elements_of(result))
        traffic.rules.append("gather: reads only the gathered elements of operand 0")
    elif op == "dynamic-update-slice" and len(operands) > 1:
        reads[0] = Counter()
        writes = [_part(result.array, elements_of(operands[1]))]
        traffic.in_place = True
        tiles = _tiles(result.array, operands[1], tpu)
        if tiles is None:
            traffic.rules.append("dynamic-update-slice in place: writes only the update")
        else:
            reads[0], writes[0] = tiles[1], tiles[2]
            traffic.whole_tiles |= {("read", 0), ("write", 0)}
            traffic.rules.append(f"dynamic-update-slice in place: {tiles[3]}")
    elif op == "scatter":
        inputs, updates = scatter_parts(instr)
        old = _reads_old_value(module, instr)
        for i in range(min(inputs, len(operands))):
            given = operands[i]
            arr = given.array if given is not None else None
            count = elements_of(updates[i] if i < len(updates) else None)
            reads[i] = _part(arr, count) if old else Counter()
        writes = [_part(r.array, elements_of(updates[i] if i < len(updates) else None))
                  for i, r in enumerate(outputs)]
        traffic.in_place = True
        traffic.rules.append("scatter in place: reads and writes only the scattered elements")
    elif op == "fusion":
        _fusion_traffic(instr, module, fused, reads, writes, outputs, traffic, tpu)
    for index, (counter, shape) in enumerate(zip(reads, operands, strict=False)):
        hbm, chip = _split(counter, shape, backend)
        if tpu and ("read", index) not in traffic.whole_tiles:
            more_hbm, more_chip = _split(_padded(counter, shape), shape, backend)
            traffic.padding_read += sum(more_hbm.values()) - sum(hbm.values())
            traffic.padding_on_chip += sum(more_chip.values()) - sum(chip.values())
            hbm, chip = more_hbm, more_chip
        traffic.read.update(hbm)
        traffic.on_chip_read.update(chip)
        traffic.read_by_operand.append(sum(hbm.values()))
    for index, (counter, shape) in enumerate(zip(writes, outputs, strict=False)):
        hbm, chip = _split(counter, shape, backend)
        if tpu and ("write", index) not in traffic.whole_tiles:
            more_hbm, more_chip = _split(_padded(counter, shape), shape, backend)
            traffic.padding_written += sum(more_hbm.values()) - sum(hbm.values())
            traffic.padding_on_chip += sum(more_chip.values()) - sum(chip.values())
            hbm, chip = more_hbm, more_chip
        traffic.written.update(hbm)
        traffic.on_chip_written.update(chip)
    if traffic.padding_read or traffic.padding_written or traffic.padding_on_chip:
        traffic.rules.append(PADDED)
    return traffic


#: The rule of a TPU kernel some of whose arrays' tiles are padded.
PADDED = ("arrays stored in tiles counted with their tiles' padding (a dimension shorter than "
          "its tile moves as a whole tile)")


def _padded(counter: Counter[str], shape: Shape | None) -> Counter[str]:
    """``counter`` (bytes of one operand or result of ``shape``) with its arrays' tile
    padding: the bytes of one array scaled by its padded size over its size, those of a
    tuple read or written whole replaced by its arrays' padded sizes."""
    if shape is None or not counter:
        return counter
    if shape.array is not None:
        size, padded = shape.array.nbytes, shape.array.padded_nbytes
        if not size or not padded or padded <= size:
            return counter
        return Counter({k: v * padded // size for k, v in counter.items()})
    return _full(shape, tpu=True) if counter == _full(shape) else counter


def _fusion_traffic(instr: Instruction, module: Module, cache: dict[str, FusionBytes] | None,
                    reads: list[Counter[str]], writes: list[Counter[str]],
                    outputs: list[Shape], traffic: Traffic, nested: bool = False) -> None:
    names = instr.called("calls")
    comp = module.computations.get(names[0]) if names else None
    if comp is None:
        return
    fused = cache.get(comp.name) if cache is not None else None
    if fused is None:
        fused = FusionBytes(module, comp, nested)
        if cache is not None:
            cache[comp.name] = fused
    for param in comp.instructions:
        index = param.parameter_number
        if param.opcode != "parameter" or index is None or index >= len(reads):
            continue
        shape = instr.operand_shapes[index]
        if shape is None or shape.array is None or param.shape.array is None:
            continue
        elements = fused.read_elements(param)
        if elements < shape.array.elements:
            reads[index] = _part(shape.array, elements)
            traffic.rules.append(
                f"operand {index}: not read (updated in place)" if elements == 0 else
                f"operand {index}: {elements} of its {shape.array.elements} elements read "
                "(sliced, gathered or updated in place)"
            )
    results = outputs
    for i, name in enumerate(fused.outputs):
        update = fused.updates.get(name)
        if update is None or i >= len(results) or i >= len(writes):
            continue
        traffic.in_place = True
        if update.opcode == "dynamic-update-slice":
            given = update.operand_shapes[1] if len(update.operand_shapes) > 1 else None
            tiles = _tiles(results[i].array, given, tpu=nested)  # nested: a TPU's module
            own = any(u is update for u in fused.comp.instructions)
            target = fused._target(update) if own else None
            if tiles is not None and target is not None and target < len(reads):
                reads[target] = reads[target] + tiles[1]
                writes[i] = tiles[2]
                traffic.whole_tiles |= {("read", target), ("write", i)}
                traffic.rules.append(f"output {i}: dynamic-update-slice in place, {tiles[3]}")
                continue
            count = elements_of(given)
        else:
            _, updates = scatter_parts(update)
            count = elements_of(updates[0] if updates else None)
        writes[i] = _part(results[i].array, count)
        traffic.rules.append(f"output {i}: {update.opcode} in place, only the update written")
