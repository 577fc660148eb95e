"""Every number the report and the analysis's prose show is written by text.py (or
units.py): no exponent notation ("1e+41"), no 40-digit integers, no "3-th"; and the sentence on
the ridge's matmul size says what a size below 1 or beyond any memory means."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roofline_report import cli
from roofline_report.analysis import study
from roofline_report.report import views
from roofline_report.results import io as results

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "roofline_report"
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"

#: Number formatting that bypasses text.py: a precision or exponent format spec in an
#: f-string or a %-format, or round() (whose result is then printed as Python writes it).
_FORMATTING = re.compile(r"\{[^{}]*:[^{}]*\.\d+[gGfFeE%]\}|\{[^{}]*:[gGeE%]\}|\bround\(|"
                         r"%\.\d+[gGfFeE]")
#: The formatters themselves.
_HOMES = {PACKAGE / "text.py", PACKAGE / "units.py"}


def test_no_number_is_formatted_outside_the_formatter() -> None:
    files = [*(PACKAGE / "report").rglob("*.py"), *(PACKAGE / "analysis").rglob("*.py"),
             *(PACKAGE / "ingest").rglob("*.py"), PACKAGE / "compare_cli.py"]
    found = [f"{f.relative_to(REPO)}:{i}: {line.strip()}"
             for f in files if f not in _HOMES
             for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if _FORMATTING.search(line)]
    assert not found, "\n".join(found)


def _report(tmp_path: Path, *flags: str) -> str:
    out = tmp_path / "r"
    assert cli.main(["--from-json", str(FIXTURE), "--out", str(out), *flags]) in (0, 3)
    return (out / "report.md").read_text(encoding="utf-8")


def _no_raw_numbers(md: str) -> None:
    # Exponent notation as Python writes it, and integers too long to read.
    assert not re.findall(r"\d(?:\.\d+)?e[+-]\d", md), re.findall(r".{30}\de[+-]\d.{10}", md)
    assert not re.findall(r"\d{16,}", md)
    assert not re.findall(r"\d-th\b", md)


@pytest.mark.slow
def test_a_bandwidth_of_1e_minus_30(tmp_path: Path) -> None:
    md = _report(tmp_path, "--bandwidth", "1e-30 B/s")
    _no_raw_numbers(md)
    assert "is at 1×10⁴¹ FLOP/B `H`: a square float32 matmul of size n = 6×10⁴¹ `H`" in md
    assert ("whose three matrices would take 4.32×10⁸⁴ B `H`, beyond 1 PB `H` (more than any "
            "device's memory holds), so every square float32 matmul that fits in memory is "
            "below the ridge: memory-bound.") in md
    assert "The ridge is at 1×10⁴¹ FLOP/byte" in md  # the figure's caption agrees


@pytest.mark.slow
def test_a_peak_of_100_flops(tmp_path: Path) -> None:
    md = _report(tmp_path, "--peak", "100")
    _no_raw_numbers(md)
    assert ("a square float32 matmul of size n = 3×10⁻⁸ `H`, below the smallest size n = 1, so "
            "no square float32 matmul is below the ridge: every size is compute-bound.") in md
    assert "3e-08" not in md and "5e-09" not in md


@pytest.mark.slow
def test_an_ordinary_ridge_is_one_size(tmp_path: Path) -> None:
    md = _report(tmp_path, "--peak", "1 PFLOP/s")
    assert "is at 50000 FLOP/B `H`: a square float32 matmul of size n = 300000 `H`." in md


@pytest.mark.parametrize(("peak", "bandwidth", "ending"), [
    (100.0, 20e9, "every size is compute-bound."),
    (100e9, 1e-30, "memory-bound."),
    (100e9, 20e9, ""),
])
def test_the_ridge_sentence_follows_the_numbers(peak: float, bandwidth: float,
                                                ending: str) -> None:
    model = study.hypothetical_model(peak, bandwidth)
    parts = views._ridge_size(model)
    text = "".join(p if isinstance(p, str) else p.text for p in parts)
    size = model.ridge_square_size
    assert model.ridge_square_bytes == pytest.approx(3 * 4 * size**2)
    if ending:
        assert text.endswith(ending)
    else:
        assert text == ": a square float32 matmul of size n = 30."


def test_the_analysis_prose_uses_one_percent_and_ratio_rule() -> None:
    from roofline_report.analysis import gate, levels

    assert gate.parse("roof<-0.5pp").meaning == "share of the roof down by more than 0.5 " \
        "percentage points"
    why = levels.implausible("write-new", 1e9, 100e9)
    assert why is not None and "is 100 times below" in why and "(more than 20 times)" in why
    why = levels.implausible("read", 10e9, 100e9)
    assert why is not None and "is 10% of read-write's" in why and "under 25%" in why
    data = results.load(FIXTURE)
    assert data  # the fixture renders through the same rules (the tests above)
