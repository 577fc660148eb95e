"""Tests for roofline_report.config: the TOML schema, its validation, and importing functions."""

from __future__ import annotations

import copy
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline_report.config import (
    DTYPES,
    MAX_MESH_DEVICES,
    MAX_SWEEP_POINTS,
    ArgSpec,
    Budgets,
    Config,
    WorkloadSpec,
    config_from_dict,
    import_callable,
    load_config,
    loads_config,
)
from roofline_report.errors import InputError

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "workloads.toml"

VALID = """\
schema = 1
preset = "h200"

[budgets]
peak = "200 GFLOP/s"
bandwidth = 2.5e10

[[workload]]
name = "my matmul"
function = "examples.my_workloads:scaled_matmul"
dims = { n = 256, k = 64 }
args = [ { shape = ["n", "n"], dtype = "float32" }, { shape = ["n", 64], dtype = "bfloat16" } ]
sweep = { n = [256, 64, 128, 64] }
reference = "examples.my_workloads:scaled_matmul_numpy"
rtol = 2e-5
atol = 2e-5

[[workload]]
function = "examples.my_workloads:row_softmax"
dims = { rows = 8, cols = 4 }
args = [ { shape = ["rows", "cols"], dtype = "float32" }, { shape = [], dtype = "bool" } ]
"""


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Undo sys.path additions and forget modules imported by a test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("fuzzmod_", "my_workloads", "examples", "broken_", "leaf_")):
            del sys.modules[name]


def write(tmp_path: Path, text: str, name: str = "workloads.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Valid configs


def test_valid_config(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, VALID))
    assert config.source == "workloads.toml"
    assert config.base_dir == tmp_path.resolve()
    assert config.preset == "H200"
    assert config.budgets == Budgets(peak=200e9, bandwidth=25e9)
    first, second = config.workloads
    assert first.name == "my matmul"
    assert first.function == "examples.my_workloads:scaled_matmul"
    assert first.dims == {"k": 64, "n": 256}
    assert first.args == (ArgSpec(("n", "n"), "float32"), ArgSpec(("n", 64), "bfloat16"))
    assert first.sweep == {"n": (64, 128, 256)}
    assert first.reference == "examples.my_workloads:scaled_matmul_numpy"
    assert (first.rtol, first.atol) == (2e-5, 2e-5)
    assert second.name == "row_softmax"  # defaults to the function's name
    assert second.sweep is None and second.reference is None and second.rtol is None
    assert second.resolve_shapes() == [((8, 4), "float32"), ((), "bool")]


def test_round_trip(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, VALID))
    again = config_from_dict(config.to_dict(), source=config.source)
    assert again == config
    data = config.to_json()
    assert json.loads(json.dumps(data, sort_keys=True)) == data
    assert data["source"] == "workloads.toml"
    assert str(tmp_path) not in json.dumps(data)
    assert data["workloads"][0]["sweep"] == {"n": [64, 128, 256]}
    assert data["workloads"][1]["sweep"] is None


def test_example_config_loads() -> None:
    config = load_config(EXAMPLE)
    assert config.source == "workloads.toml"
    assert [w.name for w in config.workloads] == ["scaled matmul", "gelu mlp", "row softmax"]
    assert [w.name for w in config.sharded] == ["gelu mlp, tensor parallel"]
    assert config_from_dict(config.to_dict(), source=config.source) == config


VALID_SHARDED = """[[workload]]
name = "plain"
function = "m:f"
args = [ { shape = [4], dtype = "float32" } ]

[[workload]]
name = "sharded"
function = "m:g"
reference = "m:g_numpy"
dims = { m = 32, k = 64 }
args = [ { shape = ["m", "k"], dtype = "float32" }, { shape = ["k", 16], dtype = "bfloat16" } ]
mesh = { y = 2, x = 4 }
partition = [ ["y", "x"], ["x", ""] ]
out_partition = ["", "y"]
"""


def test_sharded_workload_is_kept_apart() -> None:
    config = loads_config(VALID_SHARDED, source="s.toml")
    assert [w.name for w in config.workloads] == ["plain"]  # what the main process measures
    [spec] = config.sharded
    assert spec.is_sharded and not config.workloads[0].is_sharded
    assert spec.mesh == (("y", 2), ("x", 4))  # the file's order: it lays out the devices
    assert spec.mesh_devices == 8 <= MAX_MESH_DEVICES
    assert spec.partition == (("y", "x"), ("x", ""))
    assert spec.out_partition == ("", "y")
    assert spec.resolve_shapes() == [((32, 64), "float32"), ((64, 16), "bfloat16")]
    again = config_from_dict(config.to_dict(), source="s.toml")
    assert again == config
    assert again.sharded[0].mesh == (("y", 2), ("x", 4))
    assert config.to_dict()["workload"][1]["mesh"] == {"y": 2, "x": 4}
    data = config.to_json()
    assert data["sharded"][0]["mesh"] == {"axis_names": ["y", "x"], "shape": [2, 4]}
    assert data["sharded"][0]["partition"] == [["y", "x"], ["x", ""]]
    assert data["workloads"][0]["mesh"] is None
    json.dumps(data, allow_nan=False)


def test_a_config_of_sharded_workloads_only() -> None:
    only = VALID_SHARDED.split("\n\n", 1)[1]
    config = loads_config(only, source="s.toml")
    assert config.workloads == () and len(config.sharded) == 1
    with pytest.raises(InputError, match="duplicate name 'sharded'"):
        loads_config(only + "\n" + only, source="s.toml")


def test_sweep_points_cartesian_sorted() -> None:
    spec = WorkloadSpec(
        name="w",
        function="m:f",
        dims={"m": 8, "n": 4, "k": 2},
        args=(ArgSpec(("m", "k"), "float32"), ArgSpec(("k", "n"), "float32")),
        sweep={"n": (32, 16), "m": (2, 1)},
    )
    points = spec.sweep_points()
    assert points == [
        {"m": 1, "n": 16, "k": 2},
        {"m": 1, "n": 32, "k": 2},
        {"m": 2, "n": 16, "k": 2},
        {"m": 2, "n": 32, "k": 2},
    ]
    assert spec.resolve_shapes(points[1]) == [((1, 2), "float32"), ((2, 32), "float32")]
    assert spec.resolve_shapes() == [((8, 2), "float32"), ((2, 4), "float32")]
    no_sweep = WorkloadSpec("v", "m:f", {"n": 3}, (ArgSpec(("n",), "int8"),))
    assert no_sweep.sweep_points() == [{"n": 3}]


def test_sweep_at_the_limit_is_accepted(tmp_path: Path) -> None:
    values = list(range(1, MAX_SWEEP_POINTS + 1))
    config = loads_config(
        f"""
        [[workload]]
        function = "m:f"
        dims = {{ n = 1 }}
        args = [ {{ shape = ["n"], dtype = "float32" }} ]
        sweep = {{ n = {values} }}
        """.replace("\n        ", "\n"),
        source="x.toml",
    )
    assert len(config.workloads[0].sweep_points()) == MAX_SWEEP_POINTS


# ---------------------------------------------------------------------------------------------
# Errors: each names the file, the workload and the problem


def _workload(extra: str = "", *, args: str | None = None, dims: str = "{ n = 4 }") -> str:
    args = args if args is not None else '[ { shape = ["n", 2], dtype = "float32" } ]'
    return f"""
[[workload]]
name = "w1"
function = "pkg.mod:fn"
dims = {dims}
args = {args}
{extra}
"""


WORKLOAD_ERRORS = [
    ("unknown key in workload", _workload('colour = "red"'), "unknown key 'colour'"),
    ("missing function", '[[workload]]\nname = "w1"\nargs = []\n', "missing 'function'"),
    ("path without colon", _workload().replace("pkg.mod:fn", "pkg.mod.fn"), "import path"),
    ("path with slash", _workload().replace("pkg.mod:fn", "pkg/mod.py:fn"), "import path"),
    ("path empty attr", _workload().replace("pkg.mod:fn", "pkg.mod:"), "import path"),
    ("path digit start", _workload().replace("pkg.mod:fn", "1pkg:fn"), "import path"),
    ("bad reference", _workload('reference = "nope"'), "'reference' must be an import path"),
    ("function not str", _workload().replace('"pkg.mod:fn"', "3"), "import path"),
    ("missing args", '[[workload]]\nname = "w1"\nfunction = "m:f"\n', "missing 'args'"),
    ("args not list", _workload(args='"n"'), "'args' must be a list"),
    ("arg not table", _workload(args="[ 3 ]"), "args[0]: expected a table"),
    (
        "unknown key in arg",
        _workload(args='[ { shape = [2], dtype = "float32", dtyp = "x" } ]'),
        "args[0]: unknown key 'dtyp'",
    ),
    ("missing shape", _workload(args='[ { dtype = "float32" } ]'), "missing 'shape'"),
    ("missing dtype", _workload(args="[ { shape = [2] } ]"), "missing 'dtype'"),
    ("shape not list", _workload(args='[ { shape = 4, dtype = "int8" } ]'), "must be a list"),
    ("zero dim", _workload(args='[ { shape = [0], dtype = "int8" } ]'), "not a positive integer"),
    ("negative dim", _workload(args='[ { shape = [-3], dtype = "int8" } ]'), "positive integer"),
    ("float dim", _workload(args='[ { shape = [2.5], dtype = "int8" } ]'), "positive integer"),
    ("bool dim", _workload(args='[ { shape = [true], dtype = "int8" } ]'), "positive integer"),
    ("huge dim", _workload(args='[ { shape = [4294967296], dtype = "int8" } ]'), "at most"),
    (
        "undefined dim name",
        _workload(args='[ { shape = ["m"], dtype = "int8" } ]'),
        "'m' is not defined in dims (defined: n)",
    ),
    ("unknown dtype", _workload(args='[ { shape = [2], dtype = "float8" } ]'), "unknown dtype"),
    ("dtype not str", _workload(args="[ { shape = [2], dtype = 4 } ]"), "unknown dtype"),
    ("dims not table", _workload(dims="[4]"), "'dims' must be a table"),
    ("dim value zero", _workload(dims="{ n = 0 }"), "dims.n"),
    ("dim value string", _workload(dims='{ n = "4" }'), "dims.n"),
    ("dim bad name", _workload(dims='{ "a b" = 4 }'), "not a valid name"),
    (
        "sweep name not in dims",
        _workload("sweep = { m = [1, 2] }"),
        "sweep name 'm' is not in dims",
    ),
    ("sweep value zero", _workload("sweep = { n = [0, 2] }"), "sweep.n"),
    ("sweep value float", _workload("sweep = { n = [1.5] }"), "sweep.n"),
    ("sweep value string", _workload('sweep = { n = ["4"] }'), "sweep.n"),
    ("sweep empty list", _workload("sweep = { n = [] }"), "non-empty list"),
    ("sweep not list", _workload("sweep = { n = 4 }"), "non-empty list"),
    ("sweep empty table", _workload("sweep = {}"), "'sweep' is empty"),
    ("sweep not table", _workload("sweep = [4]"), "'sweep' must be a table"),
    (
        "sweep too large",
        _workload(
            f"sweep = {{ n = {list(range(1, 10))}, k = {list(range(1, 10))} }}",
            dims="{ n = 4, k = 2 }",
        ),
        f"81 points; at most {MAX_SWEEP_POINTS}",
    ),
    ("rtol negative", _workload("rtol = -1.0"), "'rtol' must be a non-negative"),
    ("atol nan", _workload("atol = nan"), "'atol' must be a non-negative"),
    ("atol string", _workload('atol = "small"'), "'atol' must be a number"),
    ("rtol huge int", _workload(f"rtol = {10**400}"), "'rtol' must be a non-negative finite"),
    ("name empty", _workload().replace('name = "w1"', 'name = "  "'), "non-empty string"),
    # sharded workloads (the default arg is f32[n=4, 2])
    ("partition without mesh", _workload('partition = [["", ""]]'), "'partition' needs a 'mesh'"),
    ("out_partition without mesh", _workload('out_partition = [""]'), "'out_partition' needs a"),
    ("mesh without partition", _workload("mesh = { d = 2 }"), "'mesh' needs 'partition'"),
    ("mesh not table", _workload("mesh = 8"), "'mesh' must be a table of axis name = size"),
    ("mesh empty", _workload("mesh = {}"), "'mesh' is empty"),
    ("mesh size zero", _workload("mesh = { d = 0 }"), "mesh.d: 0 is not a positive integer"),
    ("mesh size string", _workload('mesh = { d = "2" }'), "mesh.d"),
    ("mesh bad axis name", _workload('mesh = { "a b" = 2 }'), "not a valid axis name"),
    (
        "mesh too large",
        _workload("mesh = { x = 4, y = 4 }"),
        f"the mesh has 16 devices; the sharded analysis runs on {MAX_MESH_DEVICES}",
    ),
    (
        "sweep with mesh",
        _workload('mesh = { d = 2 }\npartition = [["d", ""]]\nsweep = { n = [2, 4] }'),
        "sweeps of sharded workloads are not supported",
    ),
    (
        "partition not list",
        _workload('mesh = { d = 2 }\npartition = "d"'),
        "'partition' must be a list with one list per argument",
    ),
    (
        "partition count",
        _workload('mesh = { d = 2 }\npartition = [["d", ""], ["", ""]]'),
        "'partition' has 2 entries but the workload has 1 args",
    ),
    (
        "partition entry not list",
        _workload('mesh = { d = 2 }\npartition = ["d"]'),
        "partition[0]: expected a list with one mesh axis name",
    ),
    (
        "partition wrong rank",
        _workload('mesh = { d = 2 }\npartition = [["d"]]'),
        "partition[0]: has 1 entries but args[0] has 2 dimensions",
    ),
    (
        "partition entry not string",
        _workload('mesh = { d = 2 }\npartition = [[1, ""]]'),
        "partition[0]: entries must be mesh axis names",
    ),
    (
        "unknown axis",
        _workload('mesh = { d = 2 }\npartition = [["x", ""]]'),
        "partition[0]: unknown axis 'x' (mesh axes: d)",
    ),
    (
        "axis twice",
        _workload('mesh = { d = 2 }\npartition = [["d", "d"]]'),
        "partition[0]: axis 'd' shards more than one dimension",
    ),
    (
        "not divisible",
        _workload('mesh = { d = 8 }\npartition = [["d", ""]]'),
        "partition[0]: dimension 0 of args[0] (4 at the declared dims) is not divisible by "
        "mesh axis 'd' (8)",
    ),
    (
        "not divisible, literal dim",
        _workload('mesh = { d = 4 }\npartition = [["", "d"]]'),
        "dimension 1 of args[0] (2 at the declared dims) is not divisible by mesh axis 'd' (4)",
    ),
    (
        "out_partition unknown axis",
        _workload('mesh = { d = 2 }\npartition = [["d", ""]]\nout_partition = ["e"]'),
        "out_partition: unknown axis 'e' (mesh axes: d)",
    ),
    (
        "out_partition not list",
        _workload('mesh = { d = 2 }\npartition = [["d", ""]]\nout_partition = "d"'),
        "out_partition: expected a list",
    ),
]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [case[1:] for case in WORKLOAD_ERRORS],
    ids=[case[0] for case in WORKLOAD_ERRORS],
)
def test_workload_errors(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, text, name="bad.toml")
    with pytest.raises(InputError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith("bad.toml: workload ")
    assert any(label in message for label in ("workload 'w1':", "workload 'fn':", "workload #1:"))
    assert fragment in message
    assert "\n" not in message
    assert str(tmp_path) not in message


SETUP = '[[workload]]\nname = "s"\nsetup = "pkg.mod:setup"\ndims = { n = 2 }\n'


@pytest.mark.parametrize(("extra", "fragment"), [
    ('function = "pkg.mod:fn"', "'function' cannot be used with 'setup'"),
    ("sweep = { n = [1, 2] }", "'sweep' cannot be used with 'setup'"),
    ("mesh = { d = 2 }", "'mesh' cannot be used with 'setup'"),
    ('setup = "pkg.mod:other"', "TOML syntax error"),  # a key given twice
    ("backend_dims = { tpu = { m = 2 } }", "backend_dims.tpu: 'm' is not in dims (defined: n)"),
])
def test_a_setup_workload_declares_no_function_or_arguments(extra: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        loads_config(SETUP + extra + "\n", source="s.toml")
    assert fragment in str(info.value)
    assert str(info.value).startswith("s.toml: ")
    (spec,) = loads_config(SETUP, source="s.toml").workloads
    assert (spec.setup, spec.function, spec.args, spec.dims) == ("pkg.mod:setup", "", (), {"n": 2})


def test_an_unknown_key_is_reported_before_the_problems_of_its_table() -> None:
    """A typo explains the rest: a table's unknown key comes first, whatever else is wrong in
    it or below it; another table's problems keep the file's order."""
    typo = _workload('dimz = { n = 4 }', dims="{ n = 0 }")
    with pytest.raises(InputError, match=r"workload 'w1': unknown key 'dimz'; allowed: name, "
                       r"function, dims, args, sweep, reference, rtol, atol, mesh, partition, "
                       r"out_partition, setup, backend_dims$"):
        loads_config(typo, source="t.toml")
    with pytest.raises(InputError, match=r"^t\.toml: unknown key 'colour'; allowed: schema, "
                       r"preset, budgets, workload$"):
        loads_config('colour = "red"\n', source="t.toml")  # no workload either
    with pytest.raises(InputError, match=r"^t\.toml: workload 'w1': dims\.n: 0 is not a "):
        loads_config(_workload(dims="{ n = 0 }") + _workload('colour = 1').replace("w1", "w2"),
                     source="t.toml")


def test_workload_named_by_index_when_it_has_no_usable_name() -> None:
    second = "[[workload]]\nfunction = 7\nargs = []\n"
    with pytest.raises(InputError, match=r"^c\.toml: workload #2: 'function' must be"):
        loads_config(_workload() + second, source="c.toml")
    bad_name = '[[workload]]\nname = 4\nfunction = "pkg.mod:fn"\nargs = []\n'
    with pytest.raises(InputError, match=r"^c\.toml: workload 'fn': 'name' must be a non-empty"):
        loads_config(bad_name, source="c.toml")


def test_duplicate_names() -> None:
    with pytest.raises(InputError, match=r"workload #2: duplicate name 'w1' \(also workload #1\)"):
        loads_config(_workload() + _workload(), source="d.toml")
    defaulted = '[[workload]]\nfunction = "a:f"\nargs = []\n' * 2
    with pytest.raises(InputError, match="duplicate name 'f'"):
        loads_config(defaulted, source="d.toml")


TOP_ERRORS = [
    ("unknown top key", 'presett = "H100"\n' + _workload(), "unknown key 'presett'"),
    ("bad schema", "schema = 2\n" + _workload(), "unsupported schema 2"),
    ("schema string", 'schema = "1"\n' + _workload(), "unsupported schema"),
    ("bad preset", 'preset = "H300"\n' + _workload(), "unknown chip preset 'H300'"),
    ("preset not str", "preset = 100\n" + _workload(), "preset must be a string"),
    ("no workloads", 'preset = "H100"\n', "no workloads"),
    ("empty workload list", "workload = []\n", "no workloads"),
    ("workload table", '[workload]\nfunction = "a:b"\n', "write [[workload]]"),
    ("workload not table", "workload = 3\n", "must be an array of tables"),
    ("workload item not table", "workload = [1]\n", "workload #1: expected a table"),
    ("budgets not table", "budgets = 3\n" + _workload(), "[budgets] must be a table"),
    (
        "unknown budget key",
        "[budgets]\npeek = 1\n" + _workload(),
        "[budgets] unknown key 'peek'",
    ),
    (
        "budget wrong family",
        '[budgets]\npeak = "20 GB/s"\n' + _workload(),
        "[budgets] peak: '20 GB/s' is a bandwidth",
    ),
    ("budget zero", "[budgets]\nbandwidth = 0\n" + _workload(), "must be positive"),
    ("budget bool", "[budgets]\npeak = true\n" + _workload(), "expected a rate string"),
    ("budget huge int", f"[budgets]\npeak = {10**400}\n" + _workload(), "must be positive and"),
    ("toml syntax", "schema = \n", "TOML syntax error"),
    ("toml duplicate key", "schema = 1\nschema = 1\n", "TOML syntax error"),
]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [case[1:] for case in TOP_ERRORS],
    ids=[case[0] for case in TOP_ERRORS],
)
def test_top_level_errors(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        load_config(write(tmp_path, text, name="top.toml"))
    message = str(info.value)
    assert message.startswith("top.toml: ")
    assert fragment in message
    assert "\n" not in message


def test_toml_syntax_error_gives_line() -> None:
    with pytest.raises(InputError, match=r"line 3"):
        loads_config('schema = 1\n\npreset = "H100\n', source="s.toml")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^nothere\.toml: config file not found$"):
        load_config(tmp_path / "nothere.toml")


def test_folder_instead_of_file(tmp_path: Path) -> None:
    folder = tmp_path / "conf.toml"
    folder.mkdir()
    with pytest.raises(InputError, match=r"^conf\.toml: is a folder"):
        load_config(folder)


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, VALID)

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(InputError, match=r"^workloads\.toml: cannot read .*Permission denied$"):
        load_config(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.toml"
    path.write_bytes(b'preset = "caf\xe9"\n')
    with pytest.raises(
        InputError, match=r"^latin\.toml: not UTF-8 text \(byte 0xe9 at offset 13\)"
    ):
        load_config(path)


# ---------------------------------------------------------------------------------------------
# Importing user functions


@pytest.mark.usefixtures("isolated_imports")
def test_import_callable_from_current_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    fn = import_callable(
        "examples.my_workloads:scaled_matmul", config_name="workloads.toml", workload="w"
    )
    assert callable(fn)
    assert fn.__name__ == "scaled_matmul"


@pytest.mark.usefixtures("isolated_imports")
def test_import_callable_from_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not the repository: the config's folder must be enough
    config = load_config(EXAMPLE)
    for spec in config.workloads:
        assert callable(config.load_function(spec))
        reference = config.load_reference(spec)
        assert reference is not None and callable(reference)


@pytest.mark.usefixtures("isolated_imports")
def test_example_workloads_match_their_references(monkeypatch: pytest.MonkeyPatch) -> None:
    import jax

    config = load_config(EXAMPLE)
    rng = np.random.default_rng(0)
    for spec in config.workloads:
        fn = jax.jit(config.load_function(spec))
        reference = config.load_reference(spec)
        assert reference is not None and spec.rtol is not None and spec.atol is not None
        point = spec.sweep_points()[0]
        args = [
            rng.standard_normal(shape).astype(dtype) for shape, dtype in spec.resolve_shapes(point)
        ]
        got = np.asarray(fn(*args), dtype=np.float64)
        want = np.asarray(reference(*args))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=spec.rtol, atol=spec.atol)


@pytest.mark.usefixtures("isolated_imports")
def test_import_callable_missing_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(InputError) as info:
        import_callable("examples.nope:f", config_name="workloads.toml", workload="my matmul")
    assert str(info.value) == (
        "workloads.toml: workload 'my matmul': cannot import 'examples.nope:f': "
        "No module named 'examples.nope'"
    )


@pytest.mark.usefixtures("isolated_imports")
def test_import_callable_bad_targets(tmp_path: Path) -> None:
    (tmp_path / "leaf_mod.py").write_text("VALUE = 3\n\ndef f():\n    return 1\n")
    (tmp_path / "broken_raises.py").write_text("1 / 0\n")
    (tmp_path / "broken_syntax.py").write_text("def f(:\n")
    (tmp_path / "broken_exits.py").write_text("import sys\nsys.exit(3)\n")
    cases = {
        "leaf_mod:g": "leaf_mod has no 'g'",
        "leaf_mod:f.inner": "leaf_mod.f has no 'inner'",
        "leaf_mod:VALUE": "is an integer, not a function",
        "broken_raises:f": "ZeroDivisionError while importing broken_raises",
        "broken_syntax:f": "SyntaxError while importing broken_syntax",
        "broken_exits:f": "SystemExit while importing broken_exits",
        "leaf_mod": "is not an import path",
        "../leaf_mod:f": "is not an import path",
    }
    for path, fragment in cases.items():
        with pytest.raises(InputError) as info:
            import_callable(path, config_name="c.toml", workload="w", base_dir=tmp_path)
        message = str(info.value)
        assert message.startswith("c.toml: workload 'w': ")
        assert fragment in message, message
    assert import_callable("leaf_mod:f", config_name="c.toml", workload="w", base_dir=tmp_path)()


# ---------------------------------------------------------------------------------------------
# Fuzzing: nothing but InputError, and whatever loads is usable


def _check_usable(config: Config) -> None:
    assert config.workloads or config.sharded
    assert not any(w.is_sharded for w in config.workloads)
    for spec in (*config.workloads, *config.sharded):
        points = spec.sweep_points()
        assert 1 <= len(points) <= MAX_SWEEP_POINTS
        for point in points:
            for shape, dtype in spec.resolve_shapes(point):
                assert all(isinstance(d, int) and d > 0 for d in shape)
                assert dtype in DTYPES
    for spec in config.sharded:
        assert spec.sweep is None and spec.partition is not None
        assert 1 <= spec.mesh_devices <= MAX_MESH_DEVICES
        sizes = dict(spec.mesh or ())
        for axes, (shape, _) in zip(spec.partition, spec.resolve_shapes(), strict=True):
            assert len(axes) == len(shape)
            assert all(not a or n % sizes[a] == 0 for a, n in zip(axes, shape, strict=True))
    json.dumps(config.to_json(), allow_nan=False)


_KEYS = st.sampled_from(
    [
        "schema", "preset", "budgets", "peak", "bandwidth", "workload", "name", "function",
        "dims", "args", "shape", "dtype", "sweep", "reference", "rtol", "atol", "n", "m", "x y",
        "mesh", "partition", "out_partition", "x", "y",
    ]
) | st.text(max_size=6)  # fmt: skip
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(
        ["float32", "bfloat16", "n", "m", "a.b:c", "20 GB/s", "1 GFLOP/s", "H100", "x", "y", ""]
    )
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=25,
)


def _valid_document(text: str) -> dict[str, Any]:
    return loads_config(text).to_dict()


@st.composite
def _mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A valid document (with or without sharded workloads) with a few random edits inside."""
    document = copy.deepcopy(_valid_document(draw(st.sampled_from([VALID, VALID_SHARDED]))))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        node: Any = document
        while True:
            children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            containers = [(k, v) for k, v in children if isinstance(v, dict | list) and v]
            if not containers or draw(st.booleans()):
                break
            node = draw(st.sampled_from(containers))[1]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if isinstance(node, dict):
            if action == "add" or not node:
                node[draw(_KEYS)] = draw(_VALUES)
            else:
                key = draw(st.sampled_from(sorted(node, key=str)))
                if action == "delete":
                    del node[key]
                else:
                    node[key] = draw(_VALUES)
        elif action == "add" or not node:
            node.append(draw(_VALUES))
        else:
            index = draw(st.integers(min_value=0, max_value=len(node) - 1))
            if action == "delete":
                del node[index]
            else:
                node[index] = draw(_VALUES)
    return document


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_mutated() | st.dictionaries(_KEYS, _VALUES, max_size=5) | _VALUES)
def test_fuzz_dicts_raise_only_input_error(document: Any) -> None:
    try:
        config = config_from_dict(document, source="fuzz.toml")
    except InputError as exc:
        message = str(exc)
        assert message.startswith("fuzz.toml:")
        assert "\n" not in message
        assert "Input should" not in message  # pydantic's error, worded in the project's words
    else:
        _check_usable(config)


_TOML_PIECES = st.sampled_from(
    [
        "schema = 1\n", 'preset = "H100"\n', "[budgets]\n", 'peak = "1 GFLOP/s"\n',
        "bandwidth = 3e9\n", "[[workload]]\n", 'function = "m:f"\n', 'name = "a"\n',
        "dims = { n = 4 }\n", 'args = [ { shape = ["n"], dtype = "float32" } ]\n',
        "sweep = { n = [1, 2] }\n", "rtol = 1e-3\n", "mesh = { x = 2 }\n",
        'partition = [["x"]]\n', 'out_partition = [""]\n', "[workload]\n", "=", "[", "]", "{", "}",
        '"', "\n", "nan", "inf", "0", "-1", "x = ", "\x00", "\u00e9", "'''", "#",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(text=st.lists(_TOML_PIECES, max_size=14).map("".join) | st.text(max_size=60))
def test_fuzz_toml_text_raises_only_input_error(text: str) -> None:
    try:
        config = loads_config(text, source="fuzz.toml")
    except InputError as exc:
        assert str(exc).startswith("fuzz.toml:")
    else:
        _check_usable(config)


def test_fuzz_checks_can_fail() -> None:
    """The usable-config check rejects a spec with a broken shape (so the fuzz test can fail)."""
    bad = WorkloadSpec("w", "m:f", {"n": 2}, (ArgSpec(("n", 0), "float32"),))
    config = Config(None, Budgets(), (bad,), "x.toml")
    with pytest.raises(AssertionError):
        _check_usable(config)
    uneven = WorkloadSpec("s", "m:f", {}, (ArgSpec((3,), "float32"),), mesh=(("d", 2),),
                          partition=(("d",),))  # fmt: skip
    with pytest.raises(AssertionError):
        _check_usable(Config(None, Budgets(), (), "x.toml", sharded=(uneven,)))


# ----------------------------------------------------------------------- check tolerances


@pytest.mark.parametrize(("line", "key"), [
    ("rtol = -1e-3", "rtol"), ("atol = -0.0001", "atol"), ("rtol = inf", "rtol"),
    ("atol = -inf", "atol"), ("rtol = nan", "rtol"), ("atol = true", "atol"),
])
def test_bad_tolerances_name_the_workload_and_the_key(line: str, key: str) -> None:
    with pytest.raises(InputError) as info:
        loads_config(_workload(line), source="mine.toml")
    message = str(info.value)
    assert message.startswith("mine.toml: workload 'w1':")
    assert f"'{key}' must be" in message
    assert "\n" not in message


def _tolerance_config(dtype: str, extra: str = "") -> Config:
    return loads_config(f"""
[[workload]]
name = "mm"
function = "roofline_report.observe.workloads:_matmul"
dims = {{ n = 8 }}
args = [ {{ shape = ["n", "n"], dtype = "{dtype}" }}, {{ shape = ["n", "n"], dtype = "{dtype}" }} ]
reference = "numpy:matmul"
{extra}
""")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32"])
def test_config_tolerances_default_to_the_result_dtype(dtype: str) -> None:
    jax = pytest.importorskip("jax")
    from roofline_report import tolerances
    from roofline_report.observe import user

    cfg = _tolerance_config(dtype)
    w = user.workload_from_spec(cfg, cfg.workloads[0])
    # Without jax_enable_x64 a float64 workload computes, and is checked, in float32.
    result = "float32" if dtype == "float64" and not jax.config.jax_enable_x64 else dtype
    assert (w.rtol, w.atol) == tolerances.for_dtype(result)


def test_config_tolerances_given_are_kept() -> None:
    pytest.importorskip("jax")
    from roofline_report.observe import user

    cfg = _tolerance_config("bfloat16", "rtol = 0.5")
    w = user.workload_from_spec(cfg, cfg.workloads[0])
    assert (w.rtol, w.atol) == (0.5, 3e-2)
    cfg = _tolerance_config("float16", "rtol = 0\natol = 0")
    w = user.workload_from_spec(cfg, cfg.workloads[0])
    assert (w.rtol, w.atol) == (0.0, 0.0)


def test_the_tolerance_table() -> None:
    from roofline_report import tolerances

    assert tolerances.for_dtype("float32") == (2e-5, 2e-5)
    assert tolerances.for_dtype("bfloat16").rtol > tolerances.for_dtype("float16").rtol
    assert tolerances.for_dtype("float16").rtol > tolerances.for_dtype("float32").rtol
    assert tolerances.for_dtype("float32").rtol > tolerances.for_dtype("float64").rtol
    assert tolerances.for_dtype("complex64") == tolerances.for_dtype("float32")
    assert tolerances.for_dtype("complex128") == tolerances.for_dtype("float64")
    for exact in ("int8", "int32", "uint8", "bool"):
        assert tolerances.for_dtype(exact) == (0.0, 0.0)
    assert tolerances.for_dtype("float8_e4m3fn") == tolerances.LOOSE
    assert tolerances.for_dtypes(["float32", "bfloat16"]) == tolerances.for_dtype("bfloat16")
    assert all(name in DTYPES for name in tolerances.DEFAULTS if not name.startswith("complex"))
