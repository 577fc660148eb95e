"""HLO element types and shapes: the bits of a value of each element type, :class:`Array` (one
dense array with its layout), :class:`Shape` (an array or a tuple of shapes) and
:func:`parse_shape`, the reader of a shape's text (``f32[8,4]{1,0}``, ``(s32[], bf16[2]{0})``).

Read by :mod:`roofline_report.hlo.ir`'s parser. Nothing here imports jax.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Array", "Shape", "dtype_bits", "parse_shape"]

#: HLO's floating element types by the dtype names the model prices them under.
FLOAT_TYPES = {"f64": "float64", "f32": "float32", "bf16": "bfloat16", "f16": "float16"}
_SPACE = re.compile(r"S\((\d+)\)")
_TILE = re.compile(r"[:)]T\(([\d,\s]+)\)")
_FIXED_BITS = {"pred": 8, "bf16": 16, "tf32": 32, "c64": 64, "c128": 128, "token": 0}
_WIDTH = re.compile(r"^(?:[su]|f)(?P<bits>\d+)(?:e\d+m\d+\w*)?$")


def dtype_bits(dtype: str) -> int | None:
    """Bits of one value of an HLO element type: ``pred`` 8, ``s4`` 4, ``bf16`` 16,
    ``f8e4m3fn`` 8, ``c64`` 64, ``token`` 0; None for types of unknown width (``opaque``)."""
    if dtype in _FIXED_BITS:
        return _FIXED_BITS[dtype]
    match = _WIDTH.match(dtype)
    return int(match["bits"]) if match else None


def _storage_bits(dtype: str, layout: str) -> int | None:
    """Bits one element occupies in memory: sub-byte types take a whole byte unless the layout
    packs them (``{0:E(4)}``), as XLA's ``ShapeUtil::ByteSizeOf`` counts them."""
    bits = dtype_bits(dtype)
    if bits is None or bits == 0:
        return bits
    packed = re.search(r"E\((\d+)\)", layout)
    if packed:
        return int(packed.group(1))
    return max(8, bits)


@dataclass(frozen=True, slots=True)
class Array:
    """One dense array of a shape: element type, dimensions (bounds for dynamic ones)."""

    dtype: str
    dims: tuple[int, ...]
    layout: str = ""
    dynamic: bool = False

    @property
    def elements(self) -> int:
        return math.prod(self.dims)

    def minor_to_major(self) -> list[int]:
        """The dimensions, minor-most first: the layout's order (tiles and other suffixes such
        as ``{1,0:T(8,128)}`` aside), or row-major where it gives none that fits."""
        rank = len(self.dims)
        found = re.match(r"\{([\d,\s]*)", self.layout or "")
        order = [int(v) for v in found.group(1).replace(" ", "").split(",") if v] \
            if found else []
        return order if sorted(order) == list(range(rank)) else list(range(rank - 1, -1, -1))

    @property
    def nbytes(self) -> int | None:
        """Bytes in memory (tokens 0); None for an element type of unknown width."""
        bits = _storage_bits(self.dtype, self.layout)
        return None if bits is None else -(-self.elements * bits // 8)

    @property
    def memory_space(self) -> int:
        """The memory space its layout names (``{1,0:T(8,128)S(1)}``: 1), 0 where it names
        none: the device's main memory. What the others are is the backend's (on a TPU, 1 is
        the core's vector memory: :mod:`roofline_report.hlo.tpu`)."""
        found = _SPACE.search(self.layout)
        return int(found.group(1)) if found else 0

    @property
    def tiled(self) -> bool:
        """Whether its layout carries tiles (``{1,0:T(8,128)}``), as a TPU's layouts do."""
        return ":T(" in self.layout or ")T(" in self.layout

    @property
    def padded_nbytes(self) -> int | None:
        """Bytes in memory with its tiles' padding: each tiled (minor-most) dimension rounded up
        to a whole number of its layout's first tile (``f32[4096,64]{1,0:T(8,128)}``: 64 lanes
        padded to 128, twice :attr:`nbytes`); :attr:`nbytes` where the layout carries none."""
        tile = self.tile
        if not tile or len(tile) > len(self.dims):
            return self.nbytes
        bits = _storage_bits(self.dtype, self.layout)
        if bits is None:
            return None
        dims = list(self.dims)
        for d, step in zip(self.minor_to_major(), reversed(tile), strict=False):
            if step > 0:
                dims[d] = -(-dims[d] // step) * step
        return -(-math.prod(dims) * bits // 8)

    @property
    def tile(self) -> tuple[int, ...]:
        """Its layout's first tile, in elements of its minor-most dimensions
        (``{2,1,0:T(8,128)(2,1)}``: (8, 128), the last for the minor-most dimension); () where
        the layout carries none."""
        found = _TILE.search(self.layout)
        if found is None:
            return ()
        return tuple(int(v) for v in found.group(1).split(",") if v.strip())


@dataclass(frozen=True, slots=True)
class Shape:
    """An HLO shape: an array (``array`` set) or a tuple of shapes (``elements``)."""

    array: Array | None = None
    elements: tuple[Shape, ...] = ()
    text: str = ""

    @property
    def is_tuple(self) -> bool:
        return self.array is None

    def arrays(self) -> Iterator[Array]:
        """Every array, tuples flattened in order (tokens included)."""
        if self.array is not None:
            yield self.array
        for element in self.elements:
            yield from element.arrays()

    @property
    def nbytes(self) -> int | None:
        """Bytes of all arrays (a tuple sums its elements); None when one is of unknown width."""
        total = 0
        for array in self.arrays():
            size = array.nbytes
            if size is None:
                return None
            total += size
        return total

    def bytes_by_dtype(self) -> dict[str, int]:
        """Bytes per element type (types of unknown width and tokens left out)."""
        out: dict[str, int] = {}
        for array in self.arrays():
            size = array.nbytes
            if size:
                out[array.dtype] = out.get(array.dtype, 0) + size
        return out

    def element(self, index: int) -> Shape | None:
        """The ``index``-th element of a tuple shape, or None."""
        return self.elements[index] if 0 <= index < len(self.elements) else None


_ARRAY_TEXT = re.compile(
    r"(?P<dtype>[a-z][a-z0-9]*)\[(?P<dims>[^\]]*)\](?P<layout>\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})?"
)


def parse_shape(text: str) -> Shape | None:
    """The :class:`Shape` of an HLO shape text (``f32[8,4]{1,0}``, ``(s32[], bf16[2]{0})``,
    ``token[]``); None when the text is not a shape."""
    text = re.sub(r"/\*.*?\*/", "", text).strip()
    shape, end = _shape_at(text, 0)
    if shape is None or text[end:].strip():
        return None
    return shape


def _shape_at(text: str, start: int) -> tuple[Shape | None, int]:
    i = start
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "(":
        elements: list[Shape] = []
        i += 1
        while True:
            while i < len(text) and text[i] in " ,":
                i += 1
            if i < len(text) and text[i] == ")":
                return Shape(None, tuple(elements), text[start:i + 1].strip()), i + 1
            element, i = _shape_at(text, i)
            if element is None:
                return None, i
            elements.append(element)
    match = _ARRAY_TEXT.match(text, i)
    if match is None:
        return None, i
    dims: list[int] = []
    dynamic = False
    for part in (p.strip() for p in match["dims"].split(",")):
        if not part:
            continue
        if part.startswith("<="):
            dynamic, part = True, part[2:]
        if part == "?":
            dynamic, part = True, "0"
        if not part.isdigit():
            return None, i
        dims.append(int(part))
    array = Array(match["dtype"], tuple(dims), match["layout"] or "", dynamic)
    return Shape(array, (), match.group(0)), match.end()
