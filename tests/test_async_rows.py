"""An asynchronous pair's row on a real TPU v5e run: its event on the device is its transfer's
issue (and whatever of the transfer nothing hid), so no roof at its intensity times it: no
share of the hardware roof, no headroom, no lever, a word in its row; its program's roof still
counts its bytes."""

from __future__ import annotations

import gzip
from pathlib import Path

from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.records import Analysis
from roofline_report.report.kernel_view import ASYNCHRONOUS_WORDS, _kernel_row
from roofline_report.results import io as results_io

TPU_PART_A = (Path(__file__).resolve().parent / "fixtures" / "tpu_v5e_results"
              / "heldout_part_a.json.gz")


def _analysis() -> Analysis:
    return analyse(results_io.loads(gzip.decompress(TPU_PART_A.read_bytes()).decode("utf-8")))


def test_an_asynchronous_copy_has_no_share_of_a_roof_and_is_no_lever() -> None:
    an = _analysis()
    rows = [(p, r) for p in an.programs if p.kernels is not None for r in p.kernels.rows]
    pairs = [(p, r) for p, r in rows if r.asynchronous]
    assert pairs, "the fixture's programs hold copy-start and slice-start pairs"
    # their bytes are counted and their events timed, as before
    assert any(r.bytes > 0 and r.seconds for _, r in pairs)
    for program, row in pairs:
        assert row.hardware is not None  # still in the program's roof
        assert row.share_of_hardware_roof is None and row.headroom is None
        assert row.above_roof is None
        assert row.name not in {getattr(lever, "kernel", None) for lever in program.levers}
        view = _kernel_row(row)
        assert view.of_roof.text == "—" and view.roof.text == "—"
        assert ASYNCHRONOUS_WORDS in view.why
        assert program.hardware is not None  # the program keeps its roof
    # a kernel that is not a pair keeps its share
    assert any(r.share_of_hardware_roof is not None for _, r in rows if not r.asynchronous)
