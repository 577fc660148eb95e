"""Each kernel's source: the instructions inside a fusion locate it when the fusion itself
carries no location, and its ``user_source`` is the innermost frame of the op's Python stack
outside installed libraries (JAX records only one frame, and counts a library such as flax as
user code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_report.analysis.kernel_records import KernelRow
from roofline_report.hlo.ir import SourceLocation, StackFrames, parse_module
from roofline_report.hlo.kernels import is_library_path, kernel_inventory
from roofline_report.hlo.stack_frames import read_stack_frames
from roofline_report.report.kernel_view import _kernel_row
from roofline_report.results.schema import KernelInventory

# A module as jaxlib 0.10.2 prints it: every frame's parent one higher than the serialized
# module holds it (the outermost frame 1 printed as its own parent). Frames: 1 model.py:30
# (outermost), 2 model.py:12 and 4 model.py:13 called from it, 3 linear.py:431 called from
# model.py:12, 5 linear.py:422 called from model.py:13.
HLO = """HloModule m, entry_computation_layout={(f32[4]{0})->(f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0})}

FileNames
1 "/home/u/proj/model.py"
2 "/home/u/proj/.venv/lib/python3.11/site-packages/flax/nnx/nn/linear.py"

FunctionNames
1 "<module>"
2 "Model.__call__"
3 "Linear.__call__"

FileLocations
1 {file_name_id=1 function_name_id=1 line=30 end_line=30 column=0 end_column=9}
2 {file_name_id=1 function_name_id=2 line=12 end_line=12 column=4 end_column=20}
3 {file_name_id=2 function_name_id=3 line=431 end_line=431 column=6 end_column=57}
4 {file_name_id=1 function_name_id=2 line=13 end_line=13 column=4 end_column=20}
5 {file_name_id=2 function_name_id=3 line=422 end_line=422 column=8 end_column=5}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=3 parent_frame_id=3}
4 {file_location_id=4 parent_frame_id=2}
5 {file_location_id=5 parent_frame_id=5}


%fused_root (p.0: f32[4]) -> f32[4] {
  %p.0 = f32[4]{0} parameter(0)
  %m.0 = f32[4]{0} multiply(%p.0, %p.0), metadata={op_name="jit(f)/mul" stack_frame_id=5}
  ROOT %a.0 = f32[4]{0} add(%m.0, %p.0), metadata={op_name="jit(f)/add" stack_frame_id=3}
}

%fused_common (p.1: f32[4]) -> f32[4] {
  %p.1 = f32[4]{0} parameter(0)
  %a.1 = f32[4]{0} add(%p.1, %p.1), metadata={op_name="jit(f)/add" stack_frame_id=4}
  %b.1 = f32[4]{0} multiply(%a.1, %p.1), metadata={op_name="jit(f)/mul" stack_frame_id=5}
  %c.1 = f32[4]{0} multiply(%b.1, %p.1), metadata={op_name="jit(f)/mul" stack_frame_id=5}
  ROOT %d.1 = f32[4]{0} copy(%c.1)
}

%fused_tie (p.2: f32[4]) -> f32[4] {
  %p.2 = f32[4]{0} parameter(0)
  %a.2 = f32[4]{0} add(%p.2, %p.2), metadata={op_name="jit(f)/add" stack_frame_id=4}
  %b.2 = f32[4]{0} multiply(%a.2, %p.2), metadata={op_name="jit(f)/mul" stack_frame_id=5}
  ROOT %d.2 = f32[4]{0} copy(%b.2)
}

%fused_none (p.3: f32[4]) -> f32[4] {
  %p.3 = f32[4]{0} parameter(0)
  ROOT %t.3 = f32[4]{0} negate(%p.3)
}

%fused_own (p.4: f32[4]) -> f32[4] {
  %p.4 = f32[4]{0} parameter(0)
  ROOT %t.4 = f32[4]{0} negate(%p.4), metadata={op_name="jit(f)/neg" stack_frame_id=5}
}

ENTRY %main (x: f32[4]) -> (f32[4], f32[4], f32[4], f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %root_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_root
  %common_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_common
  %tie_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_tie
  %none_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_none
  %own_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_own, metadata={op_name="jit(f)/neg" stack_frame_id=2}
  ROOT %out = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%root_fusion, %common_fusion, %tie_fusion, %none_fusion, %own_fusion)
}
"""  # noqa: E501  (HLO lines as XLA prints them)

# The same frames as the serialized module holds them: parents as they are, 0 for none.
PROTO_FRAMES = """StackFrames
1 {file_location_id=1 parent_frame_id=0}
2 {file_location_id=2 parent_frame_id=1}
3 {file_location_id=3 parent_frame_id=2}
4 {file_location_id=4 parent_frame_id=1}
5 {file_location_id=5 parent_frame_id=4}
"""


def _printed_frames() -> str:
    start = HLO.index("StackFrames")
    return HLO[start:HLO.index("\n\n", start) + 1]


def _sources(text: str) -> dict[str, tuple[str | None, str | None]]:
    inventory = kernel_inventory(text, cwd="/home/u/proj")
    KernelInventory.model_validate(inventory)
    return {k["name"]: (k["source"], k["user_source"]) for k in inventory["kernels"]}


EXPECTED = {
    # the fusion has no location: its root's (a library line called from model.py:12)
    "root_fusion": ("flax/nnx/nn/linear.py:431", "model.py:12"),
    # the root has none: the location most of its instructions share (two of three)
    "common_fusion": ("flax/nnx/nn/linear.py:422", "model.py:13"),
    # a tie: the first in order
    "tie_fusion": ("model.py:13", "model.py:13"),
    # nothing inside is located
    "none_fusion": (None, None),
    # the fusion's own location comes first
    "own_fusion": ("model.py:12", "model.py:12"),
}


def test_a_kernel_without_a_location_takes_its_instructions_and_the_users_frame() -> None:
    assert _sources(HLO) == EXPECTED


def test_the_printed_parents_read_the_same_as_the_serialized_ones() -> None:
    printed = parse_module(HLO).frame_table()
    serialized = parse_module(HLO.replace(_printed_frames(), PROTO_FRAMES)).frame_table()
    assert printed == serialized
    assert dict(printed.frames) == {1: (1, 0), 2: (2, 1), 3: (3, 2), 4: (4, 1), 5: (5, 4)}
    assert [(loc.file.rsplit("/", 1)[1], loc.line) for loc in printed.chain(5)] == [
        ("linear.py", 422), ("model.py", 13), ("model.py", 30)]
    assert _sources(HLO.replace(_printed_frames(), PROTO_FRAMES)) == EXPECTED


def test_a_table_given_by_the_caller_wins_over_the_printed_one() -> None:
    table = parse_module(HLO).frame_table()
    # frame 3 (linear.py:431) called from model.py:13 instead of model.py:12
    moved = StackFrames(table.file_names, table.function_names, table.locations,
                        {**table.frames, 3: (3, 4)})
    inventory = kernel_inventory(HLO, cwd="/home/u/proj", frames=moved)
    by_name = {k["name"]: k["user_source"] for k in inventory["kernels"]}
    assert by_name["root_fusion"] == "model.py:13"


def test_a_stack_wholly_inside_libraries_has_no_user_source() -> None:
    text = HLO.replace('"/home/u/proj/model.py"',
                       '"/usr/lib/python3/dist-packages/somelib/model.py"')
    assert {name: user for name, (_, user) in _sources(text).items()} == dict.fromkeys(
        EXPECTED, None)


def test_a_cyclic_table_ends_the_chain() -> None:
    table = StackFrames({1: "/a.py"}, {}, {1: (1, 0, 3, 0)}, {1: (1, 2), 2: (1, 1)})
    assert table.chain(1) == (SourceLocation("/a.py", 3), SourceLocation("/a.py", 3))


@pytest.mark.parametrize(("path", "library"), [
    ("/home/u/.venv/lib/python3.11/site-packages/flax/nnx/nn/linear.py", True),
    ("/usr/lib/python3/dist-packages/numpy/core.py", True),
    ("/home/u/src/jax/jax/_src/numpy/lax_numpy.py", True),
    ("/usr/lib/python3.11/contextlib.py", True),
    ("C:\\Python311\\Lib\\site-packages\\optax\\_src\\update.py", True),
    ("/home/u/proj/model.py", False),
    ("/home/u/proj/jax_models/train.py", False),
])
def test_library_paths(path: str, library: bool) -> None:
    assert is_library_path(path) is library


# --- the serialized module -------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _module_proto() -> bytes:
    """An HloModuleProto with a name (1), a fixed64 field (to be skipped) and the stack-frame
    index (17) of the module above."""
    table = parse_module(HLO).frame_table()
    index = b"".join(_field(1, f.encode()) for f in table.file_names.values())
    index += b"".join(_field(2, f.encode()) for f in table.function_names.values())
    for file_id, function_id, line, column in table.locations.values():
        index += _field(3, _field(1, file_id) + _field(2, function_id) + _field(3, line)
                        + _field(4, column))
    for location_id, parent in table.frames.values():
        index += _field(4, _field(1, location_id) + (_field(2, parent) if parent else b""))
    fixed = _varint(9 << 3 | 1) + bytes(8)
    return _field(1, b"jit_f") + fixed + _field(17, index)


def test_the_serialized_stack_frames_are_read() -> None:
    proto = _module_proto()
    assert read_stack_frames(proto) == parse_module(HLO).frame_table()
    assert read_stack_frames(_field(1, b"jit_f")) is None  # no index
    assert read_stack_frames(proto[:-3]) is None  # truncated


# --- the results and the table ---------------------------------------------------------------


def _row(source: str | None, user_source: str | None) -> KernelRow:
    return KernelRow(name="fusion.1", category="matmul", fusion="kLoop", source=source,
                     op_name="jit(f)/dot_general", trips=1, launches=None, seconds=None,
                     busy_seconds=None, basis="", spread=None, share=None, flops=1.0,
                     transcendentals=0.0, bytes=1.0, prediction=None, miss=None,
                     user_source=user_source)


def test_the_table_names_the_users_line_and_the_librarys() -> None:
    assert _kernel_row(_row("flax/nnx/nn/linear.py:431", "model.py:12")).source == \
        "model.py:12 (via flax/nnx/nn/linear.py:431)"
    assert _kernel_row(_row("model.py:12", "model.py:12")).source == "model.py:12"
    assert _kernel_row(_row("flax/nnx/nn/linear.py:431", None)).source == \
        "flax/nnx/nn/linear.py:431"
    assert _kernel_row(_row(None, None)).source == "jit(f)/dot_general"


def test_an_inventory_written_before_user_source_still_loads() -> None:
    inventory = kernel_inventory(HLO, cwd="/home/u/proj")
    for k in inventory["kernels"]:
        del k["user_source"]
    loaded = KernelInventory.model_validate(inventory)
    assert all(k.user_source is None for k in loaded.kernels)


# --- a real program ----------------------------------------------------------------------------


@pytest.mark.cpu_backend("XLA:CPU keeps the layer's product and the user's tanh in kernels apart")
def test_a_flax_layers_kernels_name_the_users_line() -> None:
    jax = pytest.importorskip("jax")
    nnx = pytest.importorskip("flax.nnx")
    from roofline_report.observe.stack_frames import stack_frame_table

    layer = nnx.Linear(16, 8, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(layer)

    def f(state: object, x: object) -> object:
        return jax.numpy.tanh(nnx.merge(graphdef, state)(x))  # USER LINE

    compiled = jax.jit(f).lower(state, jax.numpy.ones((32, 16))).compile()
    frames = stack_frame_table(compiled)
    assert frames is not None
    assert frames == parse_module(compiled.as_text()).frame_table()
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                if text.endswith("# USER LINE"))
    root = str(Path(__file__).resolve().parent.parent)
    kernels = kernel_inventory(compiled.as_text(), cwd=root, frames=frames)["kernels"]
    assert kernels
    assert any((k["source"] or "").startswith("flax/") for k in kernels)
    assert {k["user_source"] for k in kernels} == {f"tests/test_kernel_sources.py:{line}"}
