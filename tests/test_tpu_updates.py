"""A TPU's in-place dynamic-update-slices move whole tiles: the count
(:func:`roofline_report.hlo.tpu.updated_tiles`, the inventory's bytes and its ``update-slice``
pattern) checked on programs compiled for a TPU v5e, and the fact the pattern's roof rests on,
checked against their traced times (tests/fixtures/tpu_v5e_updates/)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.hlo.shapes import parse_shape
from roofline_report.hlo.tpu import updated_tiles

HERE = Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_updates"
TIMES = json.loads((HERE / "times.json").read_text())["ops"]
MiB = 1 << 20


def _inventory(name: str) -> dict[str, Any]:
    return kernel_inventory(gzip.decompress((HERE / f"{name}.txt.gz").read_bytes()).decode())


def _array(text: str) -> Any:
    shape = parse_shape(text)
    assert shape is not None
    return shape.array


def test_an_update_crosses_the_tiles_of_its_extent_along_the_tiled_dimensions() -> None:
    # one lane of each tile down a column: 8,192 rows / 8 = 1,024 tiles, read and written
    assert updated_tiles(_array("f32[8192,4096]{1,0:T(8,128)}"),
                         _array("f32[8192,1]{0,1:T(1,128)}")) == (1024, 4 * MiB, 4 * MiB)
    # one row of each tile along a row: 4,096 / 128 = 32 tiles
    assert updated_tiles(_array("f32[8192,4096]{1,0:T(8,128)}"),
                         _array("f32[1,4096]{1,0}")) == (32, 128 * 1024, 128 * 1024)
    # eight rows cover their tiles whole: written, not read
    assert updated_tiles(_array("f32[8192,4096]{1,0:T(8,128)}"),
                         _array("f32[8,4096]{1,0}")) == (32, 0, 128 * 1024)
    # a dimension as long as the update is covered whole, padding and all (64 of 128 lanes)
    assert updated_tiles(_array("f32[32,7,64]{2,1,0:T(8,128)}"),
                         _array("f32[32,7,64]{2,1,0}"))[1] == 0
    # a cache whose positions are minor-most: one lane of 64 x 8 x 8 tiles
    assert updated_tiles(_array("f32[64,4096,8,64]{1,3,2,0:T(8,128)}"),
                         _array("f32[64,1,8,64]{1,3,2,0}")) == (4096, 16 * MiB, 16 * MiB)
    # a bfloat16 tile is 8 x 128 of its elements, 2 KiB
    assert updated_tiles(_array("bf16[32,8192,1024]{2,1,0:T(8,128)(2,1)}"),
                         _array("bf16[32,1,1024]{2,1,0}")) == (256, 512 * 1024, 512 * 1024)
    # no tiles (a CPU's layout), or shapes that do not pair: nothing to say
    assert updated_tiles(_array("f32[8192,4096]{1,0}"), _array("f32[1,4096]{1,0}")) is None
    assert updated_tiles(_array("f32[8192,4096]{1,0:T(8,128)}"), _array("f32[4096]{0}")) is None


@pytest.mark.parametrize(("name", "kernel", "tiles", "trips"), [
    ("dus_col_f32_2048x4096", "dynamic_update_slice.1", 256, 1),
    ("dus_col_f32_8192x4096", "dynamic_update_slice.1", 1024, 1),
    ("dus_col_f32_32768x4096", "dynamic_update_slice.1", 4096, 1),
    ("dus_row_f32_8192x4096", "dynamic_update_slice.1", 32, 1),
    # a decode step's key-value cache, its positions laid out minor-most by the compiler
    ("heldout_gemma_kv_decode_tpu", "dynamic_update_slice.0", 4096, 1),
    # a selective scan's outputs written a step a trip along a second-minor axis, in HBM and
    # in vector memory
    ("heldout_mamba_selective_scan_tpu", "dynamic_update_slice.8", 512, 128),
    ("heldout_mamba_selective_scan_tpu", "dynamic_update_slice.7", 512, 128),
    # a pairwise interaction's column of a [65536, 27, 27] laid out batch-minor, 378 trips
    ("heldout_dlrm_small_step_tpu", "dynamic-update-slice.3", 512, 378),
])
def test_a_tpu_update_is_counted_by_the_tiles_it_crosses(name: str, kernel: str, tiles: int,
                                                         trips: int) -> None:
    [k] = [k for k in _inventory(name)["kernels"] if k["name"] == kernel]
    assert (k["pattern"], k["pattern_size"], k["trips"]) == ("update-slice", tiles, trips)
    moved = tiles * 4096  # float32 tiles of 8 x 128
    hbm = k["bytes_written"] + k["on_chip_bytes_written"]
    assert hbm == moved  # the whole tiles written, where the update was a fraction of them
    assert k["bytes_read"] + k["on_chip_bytes_read"] >= moved  # and read
    if k["bytes_written"]:  # in HBM: the rule says why its bytes are not the update's
        assert "whole tiles" in k["bytes_rule"]


def test_a_tpu_v5e_took_15_to_21_ns_a_tile_for_these_updates() -> None:
    """What the update-slice roof rests on: the time per tile crossed, not per element updated
    (a column of 8,192 floats and a row of 4,096 differ 32 times in tiles), nor the tiles'
    bytes at the HBM's rate (a 4 KiB tile read and written at 653 GB/s: 12.5 ns)."""
    per_tile = {}
    for name, ops in TIMES.items():
        kernels = {k["name"]: k for k in _inventory(name)["kernels"]}
        for op, (occurrences, total_us) in ops.items():
            k = kernels[op]
            per_tile[(name, op)] = total_us * 1e3 / occurrences / k["pattern_size"]
    large = {key: ns for key, ns in per_tile.items() if key[0] != "dus_row_f32_8192x4096"}
    assert all(14.0 <= ns <= 21.0 for ns in large.values()), large
    # 32 tiles: the update's fixed cost shows (1.1 µs a call)
    assert per_tile[("dus_row_f32_8192x4096", "dynamic_update_slice.1")] > 21.0
