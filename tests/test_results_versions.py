"""results.json versions: version 3 holds observations only; a version-2 file is converted on
reading and renders; version 1, other versions and unknown keys in a closed record are refused in
one line naming the key path (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_report import cli
from roofline_report.analysis.analyse import analyse
from roofline_report.errors import EXIT_INPUT, InputError
from roofline_report.results import convert
from roofline_report.results import io as results
from roofline_report.results.schema_sharding import Sharding

FIXTURES = Path(__file__).resolve().parent / "fixtures"
V2 = FIXTURES / "cpu_results_v2.json"


@pytest.fixture(scope="module")
def v2() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(V2.read_text(encoding="utf-8"))
    assert data["schema_version"] == 2
    return data


def test_a_version_2_file_is_converted_and_keeps_its_samples(v2: dict[str, Any]) -> None:
    v3 = convert.upgrade(v2)
    assert v3["schema_version"] == 3 and v2["schema_version"] == 2  # the input is untouched
    seed = next(w for w in v3["workloads"] if w["name"] == "seed_tanh_matmul")
    old = next(w for w in v2["workloads"] if w["name"] == "seed_tanh_matmul")
    # Samples kept, statistics dropped (they are derived when rendering).
    assert seed["timing"]["per_call_s"] == old["timing"]["per_call"]["samples"]
    assert "per_call" not in seed["timing"]
    # A trace's medians become one sample per traced call, and say so.
    kt = seed["kernel_timing"]
    assert len(kt["calls"]) == old["kernel_timing"]["calls"]
    assert convert.CONVERTED_NOTE in kt["notes"]
    assert all("busy_s" not in k for k in kt["kernels"])
    results.validate(v3)


@pytest.mark.slow
def test_a_version_2_file_renders_with_the_new_analysis(tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert cli.main(["--from-json", str(V2), "--out", str(out), "--progress", "none"]) in (0, 3)
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "hardware roof at its intensity" in md  # the typed analysis's per-kernel table
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert saved["schema_version"] == 3  # written back as version 3
    an = analyse(results.load(V2))
    seed = an.program("seed_tanh_matmul")
    assert seed is not None and seed.prediction is not None and seed.kernels is not None
    assert seed.kernels.trace is not None and seed.kernels.trace.basis == "launch to completion"


def _refused(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "report"
    assert cli.main(["--from-json", str(path), "--out", str(out), "--progress", "none"]) \
        == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert not out.exists()
    return err[0]


@pytest.mark.parametrize(("where", "key_path"), [
    (("workloads", 0, "compiled"), "workloads[0].compiled.surprise"),
    (("environment",), "environment.surprise"),
    (("workloads", 0, "kernels", "kernels", 0), "workloads[0].kernels.kernels[0].surprise"),
    (("sweeps", 0, "points", 0, "hlo_count"), "sweeps[0].points[0].hlo_count.surprise"),
])
def test_an_unknown_key_in_a_closed_record_is_refused_with_its_path(
        v2: dict[str, Any], where: tuple[str | int, ...], key_path: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(json.dumps(v2))
    record: Any = doc
    for part in where:
        record = record[part]
    record["surprise"] = 1
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    line = _refused(path, tmp_path, capsys)
    assert key_path in line and "unknown key" in line


def test_a_version_2_file_of_the_wrong_shapes_is_refused_in_one_line(
        v2: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A version-2 trace whose call count is a list (as a fuzzer wrote it) is bad input,
    not a traceback: one line, exit 2, nothing written."""
    doc = json.loads(json.dumps(v2))
    seed = next(w for w in doc["workloads"] if w["name"] == "seed_tanh_matmul")
    seed["kernel_timing"]["calls"] = [3]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert "a version-2 document that cannot be converted" in _refused(path, tmp_path, capsys)


@pytest.mark.parametrize(("version", "fragment"), [
    (1, "schema version 1 stored derived values"),
    (4, "schema version 4 is not supported"),
    ("3", 'schema_version must be an integer, got "3"'),
])
def test_other_versions_are_refused_in_one_line(v2: dict[str, Any], version: object,
                                                fragment: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    doc = dict(v2, schema_version=version)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert fragment in _refused(path, tmp_path, capsys)


def test_a_run_keeps_samples_never_statistics() -> None:
    data = results.load(FIXTURES / "cpu_results.json")

    def walk(x: Any, path: str) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                assert k not in ("median", "q1", "q3", "iqr", "unstable", "spread", "total_s",
                                 "per_launch_s", "q1_s", "q3_s"), f"{path}.{k}"
                walk(v, f"{path}.{k}")
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")

    walk({k: v for k, v in data.items() if k != "sharding"}, "")


def test_duplicated_workload_names_are_refused(v2: dict[str, Any]) -> None:
    doc = json.loads(json.dumps(v2))
    doc["workloads"].append(dict(doc["workloads"][0]))
    with pytest.raises(InputError, match=r"workloads\[2\]\.name .* is also the name of "):
        results.validate(doc)


def test_the_sharded_collectives_are_typed_and_written_back_as_read() -> None:
    """Each collective of a sharded program is a closed record: read back typed, written out
    key for key as the file holds it ("async" included), an unknown key refused with its path."""
    data = results.load(FIXTURES / "cpu_results.json")
    typed = results.parse(data)
    assert isinstance(typed.sharding, Sharding)
    collectives = [c for w in typed.sharding.workloads for c in w.collectives]
    assert collectives and all(c.op and c.arrays for c in collectives)
    assert results.document(typed)["sharding"] == data["sharding"]
    doc = json.loads(json.dumps(data))
    index = next(i for i, w in enumerate(doc["sharding"]["workloads"]) if w["collectives"])
    doc["sharding"]["workloads"][index]["collectives"][0]["surprise"] = 1
    with pytest.raises(InputError, match=rf"sharding\.workloads\[{index}\]\.collectives\[0\]"
                                         r"\.surprise: unknown key"):
        results.parse(doc)
