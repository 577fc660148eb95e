"""A TPU's arrays move in whole tiles: the count charges their tiles' padding
(:attr:`roofline_report.hlo.shapes.Array.padded_nbytes`), checked against a DLRM step traced on
a TPU v5e (tests/fixtures/tpu_v5e_updates/), whose streaming kernels moved their padded bytes at
the HBM's rate and their logical bytes at a third of it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from roofline_report.hlo.kernels import kernel_inventory
from roofline_report.hlo.shapes import parse_shape

HERE = Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_updates"
DLRM = "heldout_dlrm_small_step_tpu"


def test_a_dimension_shorter_than_its_tile_is_stored_as_a_whole_tile() -> None:
    def sizes(text: str) -> tuple[int | None, int | None]:
        shape = parse_shape(text)
        assert shape is not None and shape.array is not None
        return shape.array.nbytes, shape.array.padded_nbytes

    assert sizes("f32[4096,64]{1,0:T(8,128)}") == (1 << 20, 2 << 20)  # 64 lanes of 128
    assert sizes("bf16[65536,1,64]{2,1,0:T(2,128)(2,1)}") == (8 << 20, 32 << 20)
    assert sizes("f32[65536,27,27]{0,2,1:T(8,128)}") == (65536 * 729 * 4, 65536 * 27 * 32 * 4)
    assert sizes("f32[8192,4096]{1,0:T(8,128)}") == (128 << 20, 128 << 20)  # whole tiles
    assert sizes("f32[4096,64]{1,0}") == (1 << 20, 1 << 20)  # no tiles: a CPU's layout
    assert sizes("f32[]{:T(128)}") == (4, 4)


def test_a_tpu_v5e_streamed_padded_arrays_at_the_hbms_rate_counting_their_padding() -> None:
    inventory = kernel_inventory(gzip.decompress((HERE / f"{DLRM}.txt.gz").read_bytes()).decode())
    kernels = {k["name"]: k for k in inventory["kernels"]}
    times = json.loads((HERE / "times.json").read_text())["padded"][DLRM]
    for name, (occurrences, total_us) in times.items():
        k = kernels[name]
        seconds = total_us * 1e-6 / occurrences
        moved = k["bytes_read"] + k["bytes_written"]
        padding = k["padding_bytes_read"] + k["padding_bytes_written"]
        assert padding > 0.4 * moved, name  # mostly padding
        assert "padding" in k["bytes_rule"]
        # the HBM streams 650 to 750 GB/s on that chip: the padded bytes at about its rate,
        # the logical ones at well under it
        assert 450e9 <= moved / seconds <= 850e9, name
        assert (moved - padding) / seconds <= 420e9, name
