"""Faults while measuring: the report still builds, the part says "not available" and why.

Each test breaks one collaborator of ``roofline_report.observe.run`` in-process (a workload that
does
not lower, a wrong result, XLA's cost analysis missing, timing out of memory, the ceilings failing)
and runs the real command line on the seed workload. Expected: exit code 3, the reason in
results.json's ``skipped`` and in report.html's text, and the rest of the report intact.
"""

from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from roofline_report import cli
from roofline_report.errors import EXIT_OK, EXIT_PARTIAL
from roofline_report.observe import lower as lowering
from roofline_report.observe import run as measure
from roofline_report.observe import timer as timing
from roofline_report.observe import workloads
from roofline_report.observe.ceilings import machine as ceilings
from roofline_report.text import plural

#: Each test here builds a whole report: left out by -m "not slow".
pytestmark = pytest.mark.slow

SEED_TITLE = workloads.SEED.title


class _Text(HTMLParser):
    """The visible text of an HTML page (entities decoded), whitespace collapsed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("style", "script"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def page_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    return " ".join("".join(parser.parts).split())


@dataclasses.dataclass
class Build:
    code: int
    err: str
    doc: dict[str, Any]
    text: str  # report.html as text
    markdown: str

    def workload(self, name: str) -> dict[str, Any]:
        return next(w for w in self.doc["workloads"] if w["name"] == name)

    def skipped(self, what: str) -> str:
        """The reason recorded for ``what``; fails if ``what`` is not listed exactly once."""
        reasons = [s["reason"] for s in self.doc["skipped"] if s["what"] == what]
        assert len(reasons) == 1, (what, self.doc["skipped"])
        return str(reasons[0])

    def shows(self, *fragments: str) -> bool:
        return all(" ".join(f.split()) in self.text for f in fragments)


def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
          catalog: list[workloads.Workload], *, with_ceilings: bool = False) -> Build:
    """Run the command line on ``catalog`` (quick; no sweeps, sharding or experiments)."""
    monkeypatch.setattr(measure, "catalog", lambda _backend="cpu": list(catalog))
    out = tmp_path / "report"
    argv = ["--quick", "--no-sweeps", "--no-sharding", "--no-experiments", "--progress", "none",
            "--out", str(out)]
    if not with_ceilings:
        argv.append("--no-ceilings")
    capsys.readouterr()
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (out / "report.html").is_file(), err
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return Build(code, err, doc, page_text((out / "report.html").read_text(encoding="utf-8")),
                 (out / "report.md").read_text(encoding="utf-8"))


def assert_partial(b: Build) -> None:
    assert b.code == EXIT_PARTIAL, b.err
    assert b.err.splitlines()[-1].endswith(
        f"({plural(len(b.doc['skipped']), 'item', 'items')} not available: see the report)")
    assert b.shows("Not available in this run")
    for item in b.doc["skipped"]:
        assert b.shows(f"{item['what']}: {item['reason']}"), item


# ------------------------------------------------------------------------------- control


def test_without_faults_the_build_is_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    b = build(tmp_path, monkeypatch, capsys, [workloads.SEED])
    assert b.code == EXIT_OK, b.err
    assert b.doc["skipped"] == []
    seed = b.workload("seed_tanh_matmul")
    for part in ("lowering", "xla", "timing"):
        assert seed[part]["available"] is True, part
    assert seed["check"]["passed"] is True
    assert not b.shows("Not available in this run")


# -------------------------------------------------------------------------------- faults


def _mismatched(a: Any, b: Any) -> Any:
    return a @ b


def test_a_workload_that_does_not_lower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    broken = workloads.Workload(
        name="mismatched_matmul", title="mismatched a @ b", fn=_mismatched,
        build=lambda d: (np.ones((d["m"], d["k"])), np.ones((d["k"] + 1, d["n"]))),
        reference=None, analytic=workloads.matmul_analytic, dims={"m": 4, "k": 3, "n": 2})
    b = build(tmp_path, monkeypatch, capsys, [workloads.SEED, broken])
    assert_partial(b)
    record = b.workload("mismatched_matmul")
    reason = b.skipped("workload mismatched a @ b: lowering")
    assert record["lowering"] == {"available": False, "reason": reason}
    assert reason.startswith("TypeError: ")
    assert "analytic" in record  # the steps before lowering still ran
    assert b.workload("seed_tanh_matmul")["timing"]["available"] is True  # the others measured


def test_a_result_that_differs_from_its_reference(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    def off_by_one(a: Any, b: Any) -> Any:
        return np.tanh(a @ b) + 1.0

    wrong = dataclasses.replace(workloads.SEED, reference=off_by_one)
    b = build(tmp_path, monkeypatch, capsys, [wrong])
    assert_partial(b)
    check = b.workload("seed_tanh_matmul")["check"]
    assert check["passed"] is False
    # off by one, give or take the backend's own error, which the check's tolerance bounds
    # (a TPU's float32 matmul at default precision is a bfloat16 one)
    assert check["max_abs_error"] == pytest.approx(1.0, abs=check["atol"] + check["rtol"])
    assert b.skipped(f"workload {SEED_TITLE}: check") == "result differs from the NumPy reference"
    assert b.shows("Result checked against NumPy Failed at rtol")
    assert b.workload("seed_tanh_matmul")["timing"]["available"] is True  # still timed


@pytest.mark.parametrize("mode", ["raises", "returns_none", "returns_empty_list"])
def test_xla_cost_analysis_unavailable(mode: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    import jax

    def cost_analysis(_self: Any) -> Any:
        if mode == "raises":
            raise NotImplementedError("cost analysis is not implemented for this backend")
        return None if mode == "returns_none" else []

    monkeypatch.setattr(jax.stages.Compiled, "cost_analysis", cost_analysis)
    b = build(tmp_path, monkeypatch, capsys, [workloads.SEED])
    assert_partial(b)
    seed = b.workload("seed_tanh_matmul")
    reason = b.skipped(f"workload {SEED_TITLE}: XLA cost analysis")
    assert seed["xla"]["available"] is False
    assert seed["xla"]["reason"] == reason
    expected = ("cost analysis is not implemented" if mode == "raises"
                else "the backend returned no cost analysis")
    assert expected in reason
    assert b.shows(f"Not available: {reason}")
    assert seed["hlo_count"].get("available", True)  # our own count does not need XLA's
    assert seed["timing"]["available"] is True


def test_timing_out_of_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    def no_memory(*_args: Any, **_kwargs: Any) -> Any:
        raise MemoryError("cannot allocate the timing buffers")

    monkeypatch.setattr(timing, "time_jitted", no_memory)
    b = build(tmp_path, monkeypatch, capsys, [workloads.SEED])
    assert_partial(b)
    seed = b.workload("seed_tanh_matmul")
    reason = b.skipped(f"workload {SEED_TITLE}: timing")
    assert reason == "MemoryError: cannot allocate the timing buffers"
    assert seed["timing"] == {"available": False, "reason": reason}
    assert "achieved" not in seed  # derived at render time, never stored
    assert seed["check"]["passed"] is True  # the steps before timing still ran
    assert b.shows(f"Not measured: {reason}")


def test_ceilings_measurement_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    def broken(**_kwargs: Any) -> Any:
        raise RuntimeError("the device went away")

    monkeypatch.setattr(ceilings, "measure_ceilings", broken)
    b = build(tmp_path, monkeypatch, capsys, [workloads.SEED], with_ceilings=True)
    assert_partial(b)
    reason = b.skipped("ceilings")
    assert reason == "RuntimeError: the device went away"
    assert b.doc["ceilings"] == {"available": False, "reason": reason}
    assert b.shows(f"Ceilings not measured: {reason}")
    assert "measured_roofline" not in b.markdown  # no figure without ceilings
    assert b.workload("seed_tanh_matmul")["timing"]["available"] is True


def test_one_ceiling_entry_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A ceilings run that reports one entry unavailable (as measure_ceilings does for an
    out-of-memory kernel) is listed as skipped, and the other ceilings are still shown."""
    def partial(**_kwargs: Any) -> dict[str, Any]:
        ok = {"name": "matmul float32", "dtype": "float32", "value": 1e10, "available": True,
              "reason": "", "kind": "measured"}
        failed = {"name": "triad", "value": None, "available": False,
                  "reason": "allocating two 1 GiB arrays failed: MemoryError"}
        stream = {"name": "scale", "value": 2e10, "available": True, "reason": "",
                  "kind": "measured"}
        return {"backend": "cpu", "device_kind": "cpu", "compute": [ok],
                "bandwidth": [stream, failed],
                "dispatch": {"value": 5e-6, "available": True, "reason": ""},
                "peak_compute": ok, "peak_bandwidth": stream, "cache_bytes": None,
                "quick": True}

    monkeypatch.setattr(ceilings, "measure_ceilings", partial)
    b = build(tmp_path, monkeypatch, capsys, [workloads.SEED], with_ceilings=True)
    assert_partial(b)
    assert b.skipped("ceiling triad") == "allocating two 1 GiB arrays failed: MemoryError"
    assert b.shows("not available: allocating two 1 GiB arrays failed: MemoryError")
    assert "measured_roofline" in b.markdown


def test_stablehlo_inspection_failing_is_not_fatal(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def broken(_module: Any) -> Any:
        raise RuntimeError("the MLIR bindings changed")

    monkeypatch.setattr(lowering, "stablehlo_ops", broken)
    b = build(tmp_path, monkeypatch, capsys, [workloads.SEED])
    assert_partial(b)
