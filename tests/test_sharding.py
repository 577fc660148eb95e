"""Sharded workloads: collectives read from HLO text, and the 8-device measurement subprocess.

The 8-device runs happen in child processes (the host-device flag must precede the jax import);
this process keeps its default single CPU device. The one quick child run also analyses a config
file's sharded workloads (``--config``), next to the three built-in matmuls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from roofline_report.analysis.comm import comm_bounds
from roofline_report.config import load_config
from roofline_report.errors import EXIT_INTERNAL, InputError
from roofline_report.observe.sharded_analysis import analyze_sharded
from roofline_report.observe.sharded_collectives import parse_collectives
from roofline_report.observe.sharding import (
    _child_env,
    _last_json,
    host_only,
    main,
    run_sharded_analysis,
    with_device_flag,
)
from roofline_report.results.schema_sharding import ShardedWorkload, Sharding

# --------------------------------------------------------------------------------------------
# Collectives from the IR of the HLO text (pure)
# --------------------------------------------------------------------------------------------

# Lines in the spelling of XLA's optimized HLO (the first two copied from jax 0.10.2 CPU output,
# metadata trimmed; the async pairs in the GPU spelling, with operand types printed).
SYNC_HLO = "\n".join(
    [
        "HloModule jit_mm, entry_computation_layout={(f32[64,64]{1,0}, f32[64,256]{1,0})"
        "->f32[64,256]{1,0}}",
        "",
        "ENTRY %main.1 (param: f32[64,64], param.1: f32[64,256]) -> f32[64,256] {",
        "  %fusion = f32[64,256]{1,0} fusion(%param, %param.1), kind=kCustom, "
        "calls=%fused_computation",
        "  ROOT %all-reduce = f32[64,256]{1,0} all-reduce(%fusion), channel_id=1, "
        "replica_groups=mesh['axis_0'=1,'axis_1'=8] {'axis_1'}, use_global_device_ids=true, "
        "to_apply=%add.clone",
        "}",
    ]
)


def _entry(*lines: str) -> str:
    """Instruction lines as the body of an ENTRY computation (the IR reads whole modules)."""
    return "\n".join(["ENTRY %main (p0: f32[8,256]) -> f32[8] {", *lines, "}"])


ASYNC_HLO = _entry(
    "  %all-gather-start = (f32[8,256]{1,0}, f32[64,256]{1,0}) all-gather-start("
    "f32[8,256]{1,0} %p0), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, "
    "use_global_device_ids=true",
    "  %all-reduce-start.3 = f32[64,256]{1,0} all-reduce-start(f32[64,256]{1,0} %fusion), "
    "channel_id=2, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true, "
    "to_apply=%add",
    "  %all-gather-done = f32[64,256]{1,0} all-gather-done("
    "(f32[8,256]{1,0}, f32[64,256]{1,0}) %all-gather-start)",
    "  %all-reduce-done.3 = f32[64,256]{1,0} all-reduce-done("
    "f32[64,256]{1,0} %all-reduce-start.3)",
    "  %fusion.2 = f32[64,256]{1,0} fusion(%all-gather-done, %all-reduce-done.3), "
    "kind=kLoop, calls=%f",
)


class TestParseCollectives:
    def test_sync_all_reduce_with_mesh_groups(self) -> None:
        [c] = parse_collectives(SYNC_HLO, 8)
        assert c == {
            "instruction": "all-reduce",
            "op": "all-reduce",
            "async": False,
            "shape": [64, 256],
            "dtype": "f32",
            "arrays": [{"dtype": "f32", "shape": [64, 256], "bytes": 65536,
                        "program_dtype": "f32", "program_bytes": 65536}],
            "result_bytes": 65536,
            "group_size": 8,
            "bytes_per_device": 2 * 65536 * 7 // 8,
            "program_dtype": "f32",
            "program_result_bytes": 65536,
            "program_bytes_per_device": 2 * 65536 * 7 // 8,
            "converted": False,
            "dtype_source": "compiled",  # no program given: the compiled dtype stands
            "dtype_note": "",
            "replica_groups": [[0, 1, 2, 3, 4, 5, 6, 7]],
            "trip_count": 1,
            "loops": [],
        }

    def test_the_programs_bfloat16_prices_a_float32_collective(self) -> None:
        """The HLO of a bf16 program on XLA:CPU: the all-reduce runs in f32. The program's op
        at the collective's source location holds bf16 tensors of as many elements."""
        text = "\n".join([
            "HloModule m",
            "FileNames",
            '1 "/somewhere/model.py"',
            "FunctionNames",
            '1 "f"',
            "FileLocations",
            "1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=24 end_column=30}",
            "StackFrames",
            "1 {file_location_id=1 parent_frame_id=1}",
            "",
            "ENTRY %main (p0: f32[64,256]) -> f32[64,256] {",
            "  %p0 = f32[64,256]{1,0} parameter(0)",
            "  ROOT %ar = f32[64,256]{1,0} all-reduce(%p0), channel_id=1, "
            'replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=%add, metadata={op_name="jit(f)/'
            'dot_general" stack_frame_id=1}',
            "}",
        ])
        ops = [{"name": "jit(f)/dot_general", "file": "model.py", "line": 7, "column": 24,
                "types": [["bf16", 64 * 512], ["bf16", 512 * 256], ["bf16", 64 * 256]]},
               {"name": "jit(f)/tanh", "file": "model.py", "line": 9, "column": 4,
                "types": [["f32", 64 * 256]]}]
        [c] = parse_collectives(text, 8, ops)
        assert (c["dtype"], c["program_dtype"], c["converted"]) == ("f32", "bf16", True)
        assert c["dtype_source"] == "program"
        assert (c["result_bytes"], c["program_result_bytes"]) == (65536, 32768)
        assert c["bytes_per_device"] == 2 * c["program_bytes_per_device"] == 114688
        assert "bf16" in c["dtype_note"] and "2×" in c["dtype_note"]
        # an op of another location does not lend its dtype; nothing found: as compiled
        [alone] = parse_collectives(text, 8, ops[1:])
        assert (alone["program_dtype"], alone["dtype_source"]) == ("f32", "compiled")

    def test_async_pairs_take_the_result_from_done(self) -> None:
        gather, reduce = parse_collectives(ASYNC_HLO, 8)
        assert (gather["op"], gather["async"], gather["shape"]) == ("all-gather", True, [64, 256])
        assert gather["group_size"] == 8
        assert gather["bytes_per_device"] == 65536 * 7 // 8
        assert (reduce["instruction"], reduce["op"]) == ("all-reduce-start.3", "all-reduce")
        assert reduce["group_size"] == 4
        assert reduce["bytes_per_device"] == 2 * 65536 * 3 // 4

    def test_start_without_done_uses_the_result_half_of_its_tuple(self) -> None:
        text = (
            "  %cp = (f32[8,16]{1,0}, f32[8,16]{1,0}, u32[], u32[]) collective-permute-start("
            "%x), channel_id=3, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"
        )
        [c] = parse_collectives(_entry(text), 8)
        assert (c["op"], c["shape"], c["group_size"], c["bytes_per_device"]) == (
            "collective-permute",
            [8, 16],
            4,
            512,
        )

    def test_a_combined_collective_is_one_record_of_its_arrays(self) -> None:
        """XLA combines small collectives into one over a tuple: one instruction, one latency,
        the arrays' bytes together (the ring formulas are linear in bytes)."""
        text = (
            "  %all-to-all = (f32[1,16]{1,0}, f32[1,16]{1,0}, /*index=2*/bf16[2,16]{1,0}) "
            "all-to-all(%a, %b, /*index=2*/%c), channel_id=1, replica_groups={}"
        )
        [record] = parse_collectives(_entry(text), 4)
        assert [a["dtype"] for a in record["arrays"]] == ["f32", "f32", "bf16"]
        assert [a["bytes"] for a in record["arrays"]] == [64, 64, 64]
        assert record["shape"] is None and record["dtype"] is None
        assert record["result_bytes"] == 192
        assert record["group_size"] == 4  # {} means every device
        assert record["bytes_per_device"] == 192 * 3 // 4

    def test_reduce_scatter_and_ignored_lines(self) -> None:
        text = _entry(
            "  %reduce_scatter.7 = f32[1,16]{1,0} reduce-scatter(%param.1), channel_id=1, "
            "replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, to_apply=%region_0.0",
            "  %get-tuple-element.2 = f32[1,16]{1,0} get-tuple-element(%all-to-all), index=1",
            "  %fusion = f32[8,256]{1,0} fusion(%all-gather), kind=kLoop, calls=%f",
            '  %c = f32[2]{0} constant({1, 2}), metadata={op_name="all-reduce"}',
        )
        [c] = parse_collectives(text, 8)
        assert (c["op"], c["result_bytes"], c["bytes_per_device"]) == ("reduce-scatter", 64, 448)

    def test_unreadable_groups_give_none(self) -> None:
        text = "  %ar = f32[4]{0} all-reduce(%x), replica_groups=somethingnew, to_apply=%add"
        [c] = parse_collectives(_entry(text), 8)
        assert c["group_size"] is None and c["bytes_per_device"] is None
        assert c["result_bytes"] == 16

    def test_no_collectives(self) -> None:
        assert parse_collectives(_entry("  ROOT %d = f32[2]{0} add(%a, %b)"), 8) == []
        assert parse_collectives("not HLO", 8) == []


def test_device_flag_and_child_env(monkeypatch: pytest.MonkeyPatch) -> None:
    flags = "--xla_cpu_foo=1 --xla_force_host_platform_device_count=2"
    assert with_device_flag(flags, 8) == "--xla_cpu_foo=1 --xla_force_host_platform_device_count=8"
    assert with_device_flag("", 4) == "--xla_force_host_platform_device_count=4"
    monkeypatch.setenv("JAX_NUM_CPU_DEVICES", "1")
    env = _child_env(8)
    assert env["JAX_NUM_CPU_DEVICES"] == "8"
    assert "--xla_force_host_platform_device_count=8" in env["XLA_FLAGS"]
    package_parent = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    assert (package_parent / "roofline_report" / "observe" / "sharding.py").is_file()


def test_the_child_keeps_to_the_host_where_the_parent_holds_the_accelerator() -> None:
    """libtpu lets one process open a host's chips: a child of a process holding the TPU failed
    on its lockfile ("Unable to initialize backend 'tpu'") on a TPU v5e. A GPU is shared, when
    it has the devices asked for; no backend made yet leaves the child to choose."""
    assert not host_only(8, None)
    assert host_only(8, ("tpu", 8)) and host_only(8, ("tpu", 1))
    assert not host_only(8, ("gpu", 8))
    assert host_only(8, ("gpu", 4))


def test_last_json_line() -> None:
    assert _last_json('noise\n{"a": 1}\n') == {"a": 1}
    assert _last_json('{"a": 1}\n{"b": 2}') == {"b": 2}
    assert _last_json("no json here") is None
    assert _last_json("{broken") is None


# --------------------------------------------------------------------------------------------
# The measurement subprocess on 8 emulated devices
# --------------------------------------------------------------------------------------------


REPO = Path(__file__).resolve().parent.parent

# The config the child reads. m, k, n = 32, 64, 16 (distinct, so a transposed shape shows).
SHARDED_CONFIG = """
[[workload]]
name = "contracting"
function = "my_workloads:scaled_matmul"
reference = "my_workloads:scaled_matmul_numpy"
dims = { m = 32, k = 64, n = 16 }
args = [ { shape = ["m", "k"], dtype = "float32" }, { shape = ["k", "n"], dtype = "float32" } ]
mesh = { d = 4 }
partition = [ ["", "d"], ["d", ""] ]

[[workload]]
name = "rows over x, y unused"
function = "my_workloads:scaled_matmul"
dims = { m = 32, k = 64, n = 16 }
args = [ { shape = ["m", "k"], dtype = "float32" }, { shape = ["k", "n"], dtype = "float32" } ]
mesh = { x = 2, y = 2 }
partition = [ ["x", ""], ["", ""] ]
out_partition = ["x", ""]

[[workload]]
name = "missing function"
function = "my_workloads:no_such_function"
args = [ { shape = [8], dtype = "float32" } ]
mesh = { d = 2 }
partition = [ ["d"] ]

[[workload]]
name = "result rank"
function = "my_workloads:row_softmax"
args = [ { shape = [8, 6], dtype = "float32" } ]
mesh = { d = 2 }
partition = [ ["d", ""] ]
out_partition = ["d"]

[[workload]]
name = "not sharded"
function = "my_workloads:row_softmax"
args = [ { shape = [8, 6], dtype = "float32" } ]

[[workload]]
name = "combined bf16 psum"
function = "comm_cases:combined_psum"
args = [ { shape = [16], dtype = "bfloat16" }, { shape = [16], dtype = "bfloat16" },
         { shape = [16], dtype = "bfloat16" }, { shape = [16], dtype = "bfloat16" } ]
mesh = { d = 4 }
partition = [ ["d"], ["d"], ["d"], ["d"] ]

[[workload]]
name = "axis of size one"
function = "comm_cases:size_one_axis"
args = [ { shape = [16], dtype = "float32" }, { shape = [16], dtype = "float32" } ]
mesh = { d = 4, one = 1 }
partition = [ ["d"], ["d"] ]
out_partition = ["d"]

[[workload]]
name = "psum over an axis the mesh lacks"
function = "comm_cases:unknown_axis"
args = [ { shape = [16], dtype = "float32" } ]
mesh = { d = 4 }
partition = [ ["d"] ]

[[workload]]
name = "unknown trip count"
function = "comm_cases:unknown_trips"
args = [ { shape = [16], dtype = "float32" }, { shape = [], dtype = "int32" } ]
mesh = { d = 4 }
partition = [ ["d"], [] ]
out_partition = ["d"]
"""

# Collectives a config's functions write with shard_map on the devices the child gives them.
COMM_CASES = """
import jax
from jax.sharding import PartitionSpec as P


def _mesh(shape, names):
    return jax.make_mesh(shape, names, devices=jax.devices()[:4],
                         axis_types=(jax.sharding.AxisType.Auto,) * len(names))


def combined_psum(a, b, c, d):
    mesh = _mesh((4,), ("d",))
    return jax.shard_map(lambda *xs: jax.lax.psum(xs, "d"), mesh=mesh,
                         in_specs=(P("d"),) * 4, out_specs=(P(),) * 4)(a, b, c, d)


def size_one_axis(a, b):
    mesh = _mesh((4, 1), ("d", "one"))
    return jax.shard_map(lambda a, b: jax.lax.psum(a * b, "one"), mesh=mesh,
                         in_specs=(P("d"), P("d")), out_specs=P("d"))(a, b)


def unknown_axis(x):
    mesh = _mesh((4,), ("d",))
    return jax.shard_map(lambda x: jax.lax.psum(x, "x"), mesh=mesh, in_specs=P("d"),
                         out_specs=P())(x)


def unknown_trips(x, n):
    mesh = _mesh((4,), ("d",))

    def body(x, n):
        return jax.lax.fori_loop(0, n, lambda i, acc: x + jax.lax.psum(acc, "d") * 0.25, x)

    return jax.shard_map(body, mesh=mesh, in_specs=(P("d"), P()), out_specs=P("d"))(x, n)
"""


def _config_folder(base: Path, text: str = SHARDED_CONFIG) -> Path:
    """``base/cfg/sharded.toml`` next to a copy of the examples' module."""
    folder = base / "cfg"
    folder.mkdir()
    (folder / "my_workloads.py").write_bytes((REPO / "examples" / "my_workloads.py").read_bytes())
    (folder / "comm_cases.py").write_text(COMM_CASES, encoding="utf-8")
    (folder / "sharded.toml").write_text(text, encoding="utf-8")
    return folder / "sharded.toml"


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One quick run with a config, started from an unrelated directory (the launcher must not
    need cwd; the config's own folder is enough to import its module)."""
    config = _config_folder(tmp_path_factory.mktemp("config"))
    here = Path.cwd()
    os.chdir(tmp_path_factory.mktemp("elsewhere"))
    try:
        doc = run_sharded_analysis(devices=8, quick=True, timeout=120, config_path=config)
    finally:
        os.chdir(here)
    assert doc.get("available") is True, doc.get("reason")
    yield doc


def _user(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        w for w in doc["workloads"] if w["sharding"] == "user" and w["name"] == name
    ]
    assert len(found) == 1
    return found[0]


def _workload(doc: dict[str, Any], sharding: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [w for w in doc["workloads"] if w["sharding"] == sharding]
    assert len(found) == 1
    return found[0]


@pytest.mark.slow
def test_document_header(sharded: dict[str, Any]) -> None:
    assert sharded["devices"] == 8
    assert [w["sharding"] for w in sharded["workloads"]] == [
        "data", "contracting", "fsdp", "contracting-bfloat16", "dp-step", "fsdp-step",
        "tp-step", "fsdp-scan-step", *["user"] * 8,
    ]  # fmt: skip
    assert [w["name"] for w in sharded["workloads"][8:]] == [
        "contracting", "rows over x, y unused", "missing function", "result rank",
        "combined bf16 psum", "axis of size one", "psum over an axis the mesh lacks",
        "unknown trip count",
    ]  # fmt: skip
    if sharded["platform"] == "cpu":
        assert sharded["emulated"] is True
        assert "emulated" in sharded["note"]
    assert sharded["kinds"]["measured_per_call_s"] == "measured"


@pytest.mark.slow
def test_document_is_plain_json_without_paths(sharded: dict[str, Any]) -> None:
    text = json.dumps(sharded, allow_nan=False, sort_keys=True)
    assert json.loads(text) == sharded

    def strings(node: Any) -> Iterator[str]:
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for key, value in node.items():
                yield key
                yield from strings(value)
        elif isinstance(node, list):
            for item in node:
                yield from strings(item)

    assert not [s for s in strings(sharded) if s.startswith("/") or str(Path.home()) in s]


@pytest.mark.slow
def test_data_parallel_needs_no_collective(sharded: dict[str, Any]) -> None:
    w = _workload(sharded, "data")
    assert w["collectives"] == []
    assert w["per_device"]["comm_bytes"] == 0
    assert w["per_device"]["comm_bytes_hlo"] == 0
    assert w["mesh"]["shape"] == [8]
    assert w["mesh"]["axis_types"] == ["auto"]


@pytest.mark.slow
def test_contracting_axis_all_reduces_the_output(sharded: dict[str, Any]) -> None:
    w = _workload(sharded, "contracting")
    assert w["shapes"]["x"] == [64, 512] and w["shapes"]["w"] == [512, 256]
    [c] = w["collectives"]
    assert (c["op"], c["shape"], c["dtype"]) == ("all-reduce", [64, 256], "f32")
    assert c["result_bytes"] == 64 * 256 * 4 == 65536
    assert c["group_size"] == 8
    assert c["bytes_per_device"] == 2 * 65536 * 7 // 8 == 114688
    assert w["per_device"]["comm_bytes"] == w["per_device"]["comm_bytes_hlo"] == 114688


@pytest.mark.slow
def test_fsdp_all_gathers_the_weights(sharded: dict[str, Any]) -> None:
    w = _workload(sharded, "fsdp")
    [c] = w["collectives"]
    assert (c["op"], c["shape"], c["group_size"]) == ("all-gather", [512, 256], 8)
    assert c["result_bytes"] == 524288
    assert c["bytes_per_device"] == 524288 * 7 // 8 == 458752
    assert w["per_device"]["comm_bytes_hlo"] == 458752


@pytest.mark.slow
def test_fsdp_step_bytes_by_hand(sharded: dict[str, Any]) -> None:
    """Quick sizes: B=64, D=128, F=512, f32, 8 devices. w1[128,512] and w2[512,128] are
    262144 B each; each all-gather sends 262144 x 7/8 = 229376 B per device; each gradient
    reduce-scatter has the operand 262144 B and the result 262144 / 8 = 32768 B, and sends
    32768 x 7 = 229376 B. Per step: 2 x 229376 gathered + 2 x 229376 scattered = 917504 B."""
    w = _workload(sharded, "fsdp-step")
    assert w["check"]["passed"] is True, w["check"]
    ops = sorted((c["op"], c["result_bytes"], c["bytes_per_device"], c["group_size"],
                  c["trip_count"]) for c in w["collectives"])  # fmt: skip
    assert ops == [
        ("all-gather", 262144, 229376, 8, 1), ("all-gather", 262144, 229376, 8, 1),
        ("reduce-scatter", 32768, 229376, 8, 1), ("reduce-scatter", 32768, 229376, 8, 1),
    ]  # fmt: skip
    gathered = sum(c["bytes_per_device"] for c in w["collectives"] if c["op"] == "all-gather")
    scattered = sum(c["bytes_per_device"] for c in w["collectives"]
                    if c["op"] == "reduce-scatter")  # fmt: skip
    assert (gathered, scattered) == (458752, 458752)
    assert w["per_device"]["comm_bytes"] == w["per_device"]["comm_bytes_hlo"] == 917504
    assert w["batch"] == {"global": 64, "per_device": 8}
    assert w["jax_roofline"]["ici_bytes"] == {"d": 917504}  # jax's ring formulas agree


@pytest.mark.slow
def test_fsdp_scan_step_counts_the_loop(sharded: dict[str, Any]) -> None:
    """4 scanned layers of w[128,128] (65536 B): per layer an all-gather sending 65536 x 7/8 =
    57344 B and a reduce-scatter (result 8192 B) sending 8192 x 7 = 57344 B, in two while loops
    of trip count 4: 8 x 57344 = 458752 B per step. jax.experimental.roofline, which costs a
    scan body once, reports a quarter of it."""
    w = _workload(sharded, "fsdp-scan-step")
    assert w["check"]["passed"] is True, w["check"]
    got = sorted((c["op"], c["bytes_per_device"], c["trip_count"], len(c["loops"]))
                 for c in w["collectives"])  # fmt: skip
    assert got == [("all-gather", 57344, 4, 1), ("reduce-scatter", 57344, 4, 1)]
    assert w["per_device"]["comm_bytes_hlo"] == w["per_device"]["comm_bytes"] == 458752
    assert w["jax_roofline"]["ici_bytes"] == {"d": 458752 // 4}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "arrays", "sent"),
    [("dp-step", [262144, 262144], 2 * 458752), ("tp-step", [32768], 57344)],
)
def test_dp_and_tp_steps(sharded: dict[str, Any], step: str, arrays: list[int],
                         sent: int) -> None:
    """DP: each gradient (262144 B) all-reduced, 2 x 262144 x 7/8 = 458752 B each (XLA may
    combine the two into one all-reduce of both: the same bytes, one latency); TP: the output
    [64,128] (32768 B) all-reduced, 2 x 32768 x 7/8 = 57344 B."""
    w = _workload(sharded, step)
    assert w["check"]["passed"] is True, w["check"]
    assert {c["op"] for c in w["collectives"]} == {"all-reduce"}
    assert sorted(a["bytes"] for c in w["collectives"] for a in c["arrays"]) == arrays
    assert sum(c["bytes_per_device"] for c in w["collectives"]) == sent
    assert w["per_device"]["flops"] == 10 * 8 * 128 * 512  # the same matmuls per device
    assert w["comm_scales_with_batch"] is (step == "tp-step")


@pytest.mark.slow
@pytest.mark.parametrize("sharding", ["data", "contracting", "fsdp"])
def test_results_match_numpy_and_costs_are_per_device(
    sharded: dict[str, Any], sharding: str
) -> None:
    w = _workload(sharded, sharding)
    assert w["check"]["passed"] is True, w["check"]
    assert w["check"]["max_abs_err"] <= w["check"]["tolerance"]
    flops = 2 * 64 * 512 * 256 // 8
    assert w["per_device"]["flops"] == flops
    xla_flops = w["xla_per_device"]["flops"]
    if xla_flops is not None:  # per device; the contracting all-reduce adds its sums
        assert flops <= xla_flops <= 1.05 * flops
    samples = w["measured_per_call_s"]  # samples only: the time is derived by the analysis
    assert samples is None or (len(samples) >= 1 and min(samples) > 0)
    assert "measured_seconds" not in w


@pytest.mark.slow
def test_measured_collectives_under_a_hypothetical_budget(sharded: dict[str, Any]) -> None:
    # 100 GFLOP/s, 20 GB/s HBM, 5 GB/s interconnect (assumed, for round numbers).
    w = _workload(sharded, "fsdp")
    per = w["per_device"]
    b = comm_bounds(
        flops=per["flops"],
        hbm_bytes=per["hbm_bytes"],
        comm_bytes=per["comm_bytes_hlo"],
        peak_flops=100e9,
        hbm_bandwidth=20e9,
        interconnect_bandwidth=5e9,
    )
    # flops 2097152 -> 20.97 us; hbm 4*(8*512 + 512*256 + 8*256) = 548864 -> 27.44 us;
    # all-gather 458752 B -> 91.75 us.
    assert b.t_math == pytest.approx(20.97152e-6)
    assert b.t_mem == pytest.approx(27.4432e-6)
    assert b.t_comm == pytest.approx(91.7504e-6)
    assert b.binding == "communication"
    assert b.upper_bound == pytest.approx((20.97152 + 27.4432 + 91.7504) * 1e-6)


# --------------------------------------------------------------------------------------------
# The config's sharded workloads, analysed in the same child
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_user_contracting_matmul_all_reduces_the_output(sharded: dict[str, Any]) -> None:
    """a[32,64] split on k, b[64,16] split on k, over d=4: one all-reduce of f32[32,16]."""
    w = _user(sharded, "contracting")
    [c] = w["collectives"]
    assert (c["op"], c["shape"], c["dtype"], c["group_size"]) == ("all-reduce", [32, 16], "f32", 4)
    assert c["result_bytes"] == 32 * 16 * 4 == 2048
    assert c["bytes_per_device"] == 2 * 2048 * 3 // 4 == 3072  # ring: 2 (n-1)/n x bytes
    per = w["per_device"]
    assert per["comm_bytes"] == per["comm_bytes_hlo"] == 3072
    # shards: a 32x16, b 16x16, the replicated result 32x16, float32
    assert per["hbm_bytes"] == 4 * (32 * 16 + 16 * 16 + 32 * 16) == 5120
    # our count: 2mkn for the matmul and mn for the scaling, split over 4 devices
    assert w["counted"]["flops"] == 2 * 32 * 64 * 16 + 32 * 16 == 66048
    assert w["counted"]["split_devices"] == 4
    assert per["flops"] == 66048 // 4
    assert [a["shard_shape"] for a in w["arguments"]] == [[32, 16], [16, 16]]
    assert [a["partition"] for a in w["arguments"]] == [[None, "d"], ["d", None]]
    assert w["results"] == [
        {"shape": [32, 16], "dtype": "float32", "partition": [None, None], "shard_shape": [32, 16]}
    ]
    assert w["mesh"] == {"axis_names": ["d"], "shape": [4], "axis_types": ["auto"],
                         "device_ids": [0, 1, 2, 3]}
    assert w["check"]["passed"] is True, w["check"]
    assert "my_workloads:scaled_matmul" in w["description"]
    assert "P(None,'d'), float32[64,16] P('d',None)" in w["description"]
    assert "our count / 4" in w["description"]
    xla = w["flops_cross_check"]["xla_per_device"]
    if xla is not None:  # XLA also counts the all-reduce's sums and the unsplit scaling
        assert w["flops_cross_check"]["ratio"] == pytest.approx(xla / per["flops"])
        assert per["flops"] <= xla <= 1.1 * per["flops"]
    assert "error" not in w


@pytest.mark.slow
def test_user_unused_mesh_axis_does_not_split_the_work(sharded: dict[str, Any]) -> None:
    """Rows of a over x=2 of a 2x2 mesh; y shards nothing, so its devices repeat the work."""
    w = _user(sharded, "rows over x, y unused")
    assert w["collectives"] == []
    assert w["counted"]["split_devices"] == 2
    assert w["per_device"]["flops"] == 66048 // 2
    # a's shard 16x64, b whole 64x16, the result's shard 16x16
    assert w["per_device"]["hbm_bytes"] == 4 * (16 * 64 + 64 * 16 + 16 * 16) == 9216
    assert w["per_device"]["comm_bytes"] == 0
    assert w["mesh"]["axis_names"] == ["x", "y"] and w["mesh"]["shape"] == [2, 2]
    # no reference declared: run and timed like an unsharded workload, the check says why not
    assert w["check"] == {"available": False, "ran": True,
                          "reason": "no NumPy reference was declared"}
    assert w["measured_per_call_s"] is None or min(w["measured_per_call_s"]) > 0


@pytest.mark.slow
def test_the_document_is_valid_results_data(sharded: dict[str, Any]) -> None:
    """A sharded workload without a reference once failed the results schema (a null check)
    after everything was measured."""
    from roofline_report.results.schema import Sharding

    Sharding.model_validate(sharded)


@pytest.mark.slow
def test_bfloat16_collectives_are_priced_in_bfloat16(sharded: dict[str, Any]) -> None:
    """x[64,512] @ w[512,256] in bf16 over the contracting axis: XLA:CPU all-reduces the
    partial products in f32 (65536 B on this machine); the program's array is bf16[64,256],
    32768 B, which a GPU or TPU sends: 2 x 32768 x 7/8 = 57344 B per device."""
    w = _workload(sharded, "contracting-bfloat16")
    assert w["check"]["passed"] is True, w["check"]
    [c] = w["collectives"]
    assert (c["op"], c["dtype"], c["program_dtype"]) == ("all-reduce", "f32", "bf16")
    assert c["converted"] is True and c["dtype_source"] == "program"
    assert (c["result_bytes"], c["program_result_bytes"]) == (65536, 32768)
    assert c["program_bytes_per_device"] == 57344 and c["bytes_per_device"] == 114688
    per = w["per_device"]
    # the analytic model (itemsize 2) and the HLO read in the program's dtype agree
    assert per["comm_bytes"] == per["comm_bytes_hlo"] == 57344
    assert per["comm_bytes_compiled"] == 114688
    assert any("XLA:CPU" in note and "bf16" in note for note in w["notes"])
    # the float32 program is read as float32: nothing converted
    f32 = _workload(sharded, "contracting")["collectives"][0]
    assert (f32["program_dtype"], f32["converted"]) == ("f32", False)


@pytest.mark.slow
def test_a_combined_psum_is_one_collective(sharded: dict[str, Any]) -> None:
    """psum of four bf16[16] arrays split over d=4: one all-reduce of four bf16[4] (f32 on
    this CPU), priced once: its latency is that of one all-reduce, its bytes all four's."""
    from roofline_report.analysis.comm_network import flat_network
    from roofline_report.analysis.comm_step import step_comm_time
    from roofline_report.results.schema_sharding import ShardedCollective

    w = _user(sharded, "combined bf16 psum")
    [c] = w["collectives"]
    assert c["op"] == "all-reduce" and len(c["arrays"]) == 4
    assert [a["program_dtype"] for a in c["arrays"]] == ["bf16"] * 4
    assert c["program_result_bytes"] == 4 * 4 * 2 == 32
    assert c["program_bytes_per_device"] == 2 * 32 * 3 // 4 == 48
    assert w["per_device"]["comm_bytes"] == 48 and w["per_device"]["comm_bytes_compiled"] == 96
    typed = [ShardedCollective.model_validate(r) for r in w["collectives"]]
    comm = step_comm_time(typed, flat_network(1e9, 1e-6), algorithm="ring")
    assert comm.steps == 2 * 3  # one ring all-reduce over 4 devices, not four
    assert comm.t_latency == pytest.approx(6e-6)


@pytest.mark.slow
def test_a_collective_over_an_axis_of_size_one_sends_nothing(sharded: dict[str, Any]) -> None:
    w = _user(sharded, "axis of size one")
    assert "error" not in w
    [c] = w["collectives"]
    assert c["group_size"] == 1 and c["bytes_per_device"] == 0
    assert w["per_device"]["comm_bytes"] == 0


@pytest.mark.slow
def test_an_unknown_trip_count_is_flagged_with_the_bytes(sharded: dict[str, Any]) -> None:
    """A psum in a fori_loop whose bound is an argument: the compiled while loop has no known
    trip count. The bytes (24 = 2 x 16 x 3/4, counted once) are returned as a lower bound."""
    w = _user(sharded, "unknown trip count")
    [c] = w["collectives"]
    assert c["trip_count"] is None and len(c["loops"]) == 1
    per = w["per_device"]
    assert per["comm_bytes"] == 24 and per["comm_bytes_complete"] is False
    assert any("unknown trip count" in note and "lower bound" in note for note in w["notes"])


@pytest.mark.slow
def test_the_step_study_of_the_document(sharded: dict[str, Any]) -> None:
    """The analysis of the child's document: every workload priced, the unknown trip count a
    lower bound, the training steps projected on a chip with a two-level network."""
    from roofline_report.analysis.sharding_records import (
        JaxRooflineCompared,
        NotProjected,
        ProjectedStep,
    )
    from roofline_report.analysis.study import step_study

    model = step_study(Sharding.model_validate(sharded), 100e9, 20e9, 5e9, preset="H100 SXM")
    rows = {r.name: r for r in model.rows}
    assert rows["unknown trip count"].bounds.comm_lower_bound is True
    [one] = [r for r in model.collectives if r.workload == "axis of size one"]
    assert one.unit_axes == ("one",) and one.priced is not None and one.priced.time == 0
    assert rows["training step, FSDP"].bounds.comm_lower_bound is False
    # FSDP's memory traffic adds its gathered weights and scattered gradients
    fsdp = rows["training step, FSDP"]
    assert fsdp.bounds.memory_bytes > _workload(sharded, "fsdp-step")["per_device"]["hbm_bytes"]
    projected = {(r.name, r.devices): r for r in model.projection.rows}
    # quick sizes: w1 has 128 rows; 256 devices cannot split it
    refused = projected[("training step, FSDP", 256)]
    assert isinstance(refused, NotProjected)
    assert "w1 dimension 0 (128)" in refused.reason
    dp = projected[("training step, data parallel", 64)]
    assert isinstance(dp, ProjectedStep)
    assert [level.level for level in dp.bounds.levels] == ["NVLink 4", "InfiniBand NDR"]
    assert model.jax_roofline
    assert all(isinstance(r, JaxRooflineCompared) for r in model.jax_roofline)


@pytest.mark.slow
def test_user_failures_stay_with_their_workload(sharded: dict[str, Any]) -> None:
    missing = _user(sharded, "missing function")
    assert "has no 'no_such_function'" in missing["error"]
    assert "per_device" not in missing and missing["collectives"] == []
    assert "not analysed" in missing["description"]
    rank = _user(sharded, "result rank")
    assert rank["error"] == "'out_partition' has 1 entries but the result has 2 dimensions"
    # jax raises a bare AssertionError for a psum over an axis the mesh lacks: the entry names it
    axis = _user(sharded, "psum over an axis the mesh lacks")
    assert axis["error"] == ("a collective of comm_cases:unknown_axis runs over mesh axis 'x', "
                             "which the mesh lacks (mesh axes: d)")
    # the built-ins and the good user workloads still report, and bounds skip the failures
    assert all("error" not in w for w in sharded["workloads"][:10])


@pytest.mark.slow
def test_main_process_skips_sharded_workloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roofline_report.observe import run as measure
    from roofline_report.observe import user

    path = _config_folder(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    had = "my_workloads" in sys.modules
    try:
        config = load_config(path)
        assert [w.name for w in config.workloads] == ["not sharded"]
        workloads = user.workloads_from_config(config)
        options = measure.RunOptions(
            quick=True, ceilings=False, sweeps=False, sharding=False, experiments=False,
            builtin=False, user_workloads=tuple(workloads), config_source=config.source,
            config_path=str(path),
        )  # fmt: skip
        data = measure.run(options)
    finally:
        if not had:
            sys.modules.pop("my_workloads", None)
    assert [r["title"] for r in data["workloads"]] == ["not sharded"]
    assert data["workloads"][0]["timing"]
    assert "config_path" not in data["options"] and str(tmp_path) not in json.dumps(data)


def test_cli_passes_the_config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline_report import cli
    from roofline_report.observe import run as measure

    path = _config_folder(tmp_path)
    seen: list[Any] = []

    def fake_run(options: Any, progress: Any = None) -> dict[str, Any]:
        seen.append(options)
        raise RuntimeError("stop here")

    monkeypatch.setattr(measure, "run", fake_run)
    monkeypatch.setattr(sys, "path", list(sys.path))
    had = "my_workloads" in sys.modules
    try:
        code = cli.main(["--config", str(path), "--progress", "none",
                         "--out", str(tmp_path / "out")])  # fmt: skip
    finally:
        if not had:
            sys.modules.pop("my_workloads", None)
    assert code == EXIT_INTERNAL
    [options] = seen
    assert options.config_path == str(path)
    assert [w.title for w in options.user_workloads] == ["not sharded"]


def test_child_on_one_device_reports_config_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In this process (one device): a mesh too large for it, and a config that cannot load,
    become error entries; ``--no-builtin`` leaves the built-ins out, as --only-config asks."""
    two_devices = """
[[workload]]
function = "my_workloads:row_softmax"
args = [ { shape = [8, 6], dtype = "float32" } ]
mesh = { d = 2 }
partition = [ ["d", ""] ]
"""
    path = _config_folder(tmp_path, two_devices)
    monkeypatch.setattr(sys, "path", list(sys.path))
    had = "my_workloads" in sys.modules
    try:
        assert main(["--devices", "1", "--quick", "--no-builtin", "--config", str(path)]) == 0
    finally:
        if not had:
            sys.modules.pop("my_workloads", None)
    doc = json.loads(capsys.readouterr().out)
    assert doc["builtin"] is False
    assert [w["sharding"] for w in doc["workloads"]] == ["user"]
    assert doc["workloads"][0]["error"] == "the mesh needs 2 devices but 1 are available"
    assert main(["--devices", "1", "--quick", "--no-builtin", "--config",
                 str(tmp_path / "gone.toml")]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    [failed] = doc["workloads"]
    assert failed["name"] == "config gone.toml"
    assert failed["error"] == "gone.toml: config file not found"
    assert str(tmp_path) not in json.dumps(doc)


MIXED_MODULE = """
import jax.numpy as jnp

def mixed(a, i):
    return a.astype(jnp.float32) + i.astype(jnp.float32)
"""


def test_user_workload_in_this_process_uses_each_dtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-device mesh: nothing is split, and every shard is the whole array."""
    import jax

    from roofline_report.observe.sharded_user import user_workload

    (tmp_path / "rr_mixed_mod.py").write_text(MIXED_MODULE, encoding="utf-8")
    (tmp_path / "m.toml").write_text(
        '[[workload]]\nfunction = "rr_mixed_mod:mixed"\nmesh = { d = 1 }\n'
        'args = [ { shape = [8, 4], dtype = "bfloat16" }, { shape = [8, 4], dtype = "int32" } ]\n'
        'partition = [ ["d", ""], ["", ""] ]\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        config = load_config(tmp_path / "m.toml")
        [spec] = config.sharded
        w = user_workload(config, spec, jax.devices()[:1], quick=True)
    finally:
        sys.modules.pop("rr_mixed_mod", None)
    assert [a["dtype"] for a in w["arguments"]] == ["bfloat16", "int32"]
    assert w["results"][0]["dtype"] == "float32"
    assert w["per_device"]["hbm_bytes"] == 8 * 4 * (2 + 4 + 4) == 320
    assert w["counted"]["split_devices"] == 1
    assert w["per_device"]["flops"] == w["counted"]["flops"] > 0
    assert w["collectives"] == [] and w["per_device"]["comm_bytes"] == 0
    assert w["name"] == "mixed" and "error" not in w


def test_bad_config_path_argument() -> None:
    with pytest.raises(InputError, match="config_path must be a path"):
        run_sharded_analysis(devices=8, quick=True, timeout=10, config_path=3)  # type: ignore[arg-type]


SHARD_MAP_SCRIPT = """
import json
import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
from roofline_report.observe.sharded_analysis import analyze_sharded, make_mesh

mesh = make_mesh(jax, jax.devices("cpu")[:8])

def body(x):
    a = jax.lax.psum_scatter(x, "d", scatter_dimension=0, tiled=True)
    b = jax.lax.all_to_all(x, "d", 0, 0, tiled=True)
    c = jax.lax.ppermute(x, "d", [(i, (i + 1) % 8) for i in range(8)])
    return a, b, c

fn = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=(P("d"), P("d"), P("d")))
s = NamedSharding(mesh, P("d"))
x = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
print(json.dumps(analyze_sharded(fn, (x,), (s,), (s, s, s), time_it=False)))
"""


@pytest.mark.slow
def test_explicit_collectives_in_real_hlo() -> None:
    """psum_scatter, all_to_all and ppermute of a per-device f32[8,16] (512 bytes)."""
    env = _child_env(8)
    proc = subprocess.run(
        [sys.executable, "-c", SHARD_MAP_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = _last_json(proc.stdout)
    assert result is not None
    sent: dict[str, int] = {}
    for c in result["collectives"]:
        sent[c["op"]] = sent.get(c["op"], 0) + c["bytes_per_device"]
    assert sent == {
        "reduce-scatter": 64 * 7,  # result f32[1,16]; operand 8 times larger
        "all-to-all": 512 * 7 // 8,
        "collective-permute": 512,
    }
    assert result["comm_bytes"] == 448 + 448 + 512


# --------------------------------------------------------------------------------------------
# Failures are reported, not raised; bad input raises InputError
# --------------------------------------------------------------------------------------------


def test_timeout_is_reported() -> None:
    doc = run_sharded_analysis(devices=8, quick=True, timeout=0.01)
    assert doc["available"] is False
    assert "timed out" in doc["reason"]


def test_a_failing_child_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "false")
    doc = run_sharded_analysis(devices=2, quick=True, timeout=30)
    assert doc["available"] is False
    assert "printed no result" in doc["reason"] or "could not start" in doc["reason"]


@pytest.mark.parametrize(
    ("devices", "timeout"), [(0, 10.0), (True, 10.0), (2.5, 10.0), (8, 0), (8, float("nan"))]
)
def test_bad_launch_arguments(devices: Any, timeout: Any) -> None:
    with pytest.raises(InputError):
        run_sharded_analysis(devices=devices, quick=True, timeout=timeout)


@pytest.mark.slow
def test_cli_in_this_process_on_one_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--devices", "1", "--quick"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["available"] is True and doc["devices"] == 1
    for w in doc["workloads"]:
        # one device: nothing to communicate (a collective left in a loop has a group of one)
        assert all(c["group_size"] == 1 and c["bytes_per_device"] == 0
                   for c in w["collectives"])  # fmt: skip
        assert w["per_device"]["comm_bytes"] == 0
        assert w["check"]["passed"] is True


def test_too_many_devices_is_unavailable(capsys: pytest.CaptureFixture[str]) -> None:
    import jax

    available = len(jax.devices("cpu"))
    assert main(["--devices", str(available + 1), "--quick"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["available"] is False
    assert "devices requested" in doc["reason"]


class TestAnalyzeShardedInputs:
    def sharding(self) -> Any:
        import jax

        spec: Any = jax.sharding.PartitionSpec
        mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("d",))
        return jax.sharding.NamedSharding(mesh, spec())

    def test_single_device_function(self) -> None:
        s = self.sharding()
        x = np.ones((4, 4), np.float32)
        result = analyze_sharded(
            lambda a: a * 2, (x,), (s,), s, reference=lambda a: a * 2, time_it=False
        )
        assert result["devices"] == 1
        assert result["collectives"] == [] and result["comm_bytes"] == 0
        assert result["check"]["passed"] is True
        assert result["measured_per_call_s"] is None

    def test_a_wrong_result_fails_the_check(self) -> None:
        s = self.sharding()
        x = np.ones((4, 4), np.float32)
        result = analyze_sharded(lambda a: a * 2, (x,), (s,), s, reference=lambda a: a * 3)
        assert result["check"]["passed"] is False
        assert result["check"]["max_abs_err"] == pytest.approx(1.0)

    def test_bad_inputs_raise_input_error(self) -> None:
        s = self.sharding()
        x = np.ones((4, 4), np.float32)
        with pytest.raises(InputError, match="callable"):
            analyze_sharded("not a function", (x,), (s,), s)  # type: ignore[arg-type]
        with pytest.raises(InputError, match="in_shardings"):
            analyze_sharded(lambda a: a, (x, x), (s,), s)

        def broken(a: Any) -> Any:
            raise TypeError("unsupported operand")

        with pytest.raises(InputError, match="does not compile") as info:
            analyze_sharded(broken, (x,), (s,), s)
        assert "\n" not in str(info.value)


def test_jax_roofline_is_installed_with_the_project() -> None:
    """jax.experimental.roofline imports absl, which jax does not depend on: the project
    does, so the comparison column is filled in a default install."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(d.replace(" ", "").startswith("absl-py") for d in project["dependencies"])
    from jax.experimental import roofline

    assert callable(roofline.roofline)


def test_an_unavailable_jax_roofline_says_why() -> None:
    from roofline_report.analysis.sharding_records import JaxRooflineUnavailable, ShardingStudy
    from roofline_report.analysis.study import step_study
    from roofline_report.report.sharding_view import sharding

    doc = json.loads((REPO / "tests" / "fixtures" / "cpu_results.json").read_text(
        encoding="utf-8"))["sharding"]
    reason = "jax.experimental.roofline: ModuleNotFoundError: No module named 'absl'"
    for w in doc["workloads"]:
        if w.get("jax_roofline"):
            w["jax_roofline"] = {"available": False, "reason": reason}
    observed = Sharding.model_validate(doc)
    model = step_study(observed, 100e9, 20e9, 5e9)
    assert model.jax_roofline
    assert all(isinstance(r, JaxRooflineUnavailable) for r in model.jax_roofline)
    view = sharding(ShardingStudy(observed, steps=model)).steps  # type: ignore[union-attr]
    assert view is not None
    assert all(r.why == f"not available: {reason}" for r in view.jax_roofline)
    assert view.jax_unavailable == reason


def test_a_sharded_time_is_the_first_quartile_of_its_samples() -> None:
    """One time per call for sharded programs too: the samples' first quartile; a file from
    before samples were kept reads its one stored time."""
    from roofline_report.analysis.stats import own_time
    from roofline_report.analysis.study import sharded_seconds

    samples = [4e-3, 1e-3, 2e-3, 3e-3, 9e-3]
    assert (sharded_seconds(ShardedWorkload(name="w", measured_per_call_s=samples))
            == own_time(samples) == 2e-3)
    assert sharded_seconds(ShardedWorkload(name="w", measured_seconds=5e-3)) == 5e-3
    assert sharded_seconds(ShardedWorkload(name="w")) is None


def test_the_time_bounds_figure_states_the_time_bounds_table() -> None:
    """One computation of a sharded workload's bounds: the communication roofline figure's
    T_mem, T_comm, bounds and binding are the alpha-beta table's (a training step's memory
    traffic with its collectives' buffers; T_comm with its latency)."""
    from roofline_report.analysis import study
    from roofline_report.results import io as results_io

    data = results_io.read(Path(__file__).resolve().parent / "fixtures" / "cpu_results.json")
    sharding = data.sharding
    assert isinstance(sharding, Sharding)
    figure = study.comm_study(sharding, 100e9, 20e9, 5e9)
    table = study.step_study(sharding, 100e9, 20e9, 5e9)
    by_index = {r.index: r.bounds for r in table.rows}
    assert len(figure.bounds) >= 8
    for r in figure.bounds:
        t, b = by_index[r.index], r.bounds
        assert (b.t_math, b.t_mem, b.t_comm, b.lower_bound, b.upper_bound, b.binding) == (
            t.t_math, t.t_mem, t.t_comm, t.lower_bound, t.upper_bound, t.binding), r.name
    steps = [r.bounds for r in figure.bounds if r.sharding == "dp-step"]
    assert steps and steps[0].t_mem > steps[0].t_math  # the buffers make it memory-bound
