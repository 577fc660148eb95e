"""What a user of the command line sees: exit codes, one error line, and an untouched output folder.

Bad input exits with 2, prints exactly one line starting with ``error:`` on stderr (no traceback)
and creates or changes nothing. A failed or interrupted build leaves the previous report
byte-identical. Most tests re-render a saved results.json (tests/fixtures/cpu_results.json, or
while it is absent one measured once per module, in-process, from the seed and a small swept
matmul with tiny ceilings) so that the file runs in seconds.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roofline_report import cli, output
from roofline_report.errors import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_PARTIAL
from roofline_report.report import views as render
from roofline_report.results import io as results_io

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"


# ------------------------------------------------------------------------------------ helpers


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (hidden ones too): file bytes, or None for a folder."""
    out: dict[str, bytes | None] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = None if p.is_dir() and not p.is_symlink() else (
            p.read_bytes() if p.is_file() else os.readlink(p).encode())
    return out


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the CLI in-process; returns (exit code, stderr)."""
    capsys.readouterr()
    code = cli.main(argv)
    return code, capsys.readouterr().err


def assert_one_error_line(err: str, *fragments: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, err)


def small_measurement(mp: pytest.MonkeyPatch) -> None:
    """Make a measuring run small: the seed and a 64^3 matmul swept over 3 sizes, tiny ceilings."""
    from roofline_report.observe import run as measure
    from roofline_report.observe import workloads
    from roofline_report.observe.ceilings import machine as ceilings
    from roofline_report.observe.ceilings.plan import Plan
    from roofline_report.observe.ceilings.sampling import MiB

    tiny = Plan(matmul_sizes=(32, 64), matmul_max_call_s=1.0, matmul_dtypes=("float32",),
                array_bytes=1 * MiB, samples=3, min_sample_s=1e-3, sweep_samples=2,
                sweep_min_sample_s=5e-4, budget_s=0.2)
    matmul = dataclasses.replace(workloads.by_name("matmul"), dims={"m": 64, "k": 64, "n": 64},
                                 sweep={"m": (16, 32, 64), "k": (16, 32, 64), "n": (16, 32, 64)})
    real = ceilings.measure_ceilings
    mp.setattr(measure, "catalog", lambda _backend="cpu": [workloads.SEED, matmul])
    mp.setattr(ceilings, "measure_ceilings", lambda **kw: real(**{**kw, "plan": tiny}))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved results.json: the committed fixture, else a small measurement on this machine."""
    if FIXTURE.is_file():
        return FIXTURE
    out = tmp_path_factory.mktemp("saved") / "report"
    with pytest.MonkeyPatch.context() as mp:
        small_measurement(mp)
        code = cli.main(["--quick", "--no-sharding", "--progress", "none", "--out", str(out)])
    assert code in (EXIT_OK, EXIT_PARTIAL)
    return out / "results.json"


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Work in an empty folder (the default --out is relative), with sys.path restored after."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    had = set(sys.modules)
    yield work
    for name in ("my_workloads", "rr_raising_module"):  # imported from this test's folder
        if name not in had:
            sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def rendered(saved: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rendered") / "report"
    assert cli.main(["--from-json", str(saved), "--out", str(out)]) in (EXIT_OK, EXIT_PARTIAL)
    return out


@pytest.fixture
def previous(rendered: Path, cwd: Path) -> Path:
    """A report folder written by the tool (the one later builds must leave untouched)."""
    return Path(shutil.copytree(rendered, cwd / "report", symlinks=True))


# ------------------------------------------------------------------------------ bad input


def _write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _shape_variant(saved: Path, change: str) -> str:
    doc: dict[str, Any] = json.loads(saved.read_text(encoding="utf-8"))
    if change == "schema_version":
        doc["schema_version"] = 99
    elif change == "no_workloads":
        del doc["workloads"]
    elif change == "workloads_object":
        doc["workloads"] = {"seed": 1}
    elif change == "budget_zero":
        doc["assumptions"]["peak"] = 0
    elif change == "negative_median":
        doc["workloads"][0]["timing"]["per_call_s"][0] = -1e-3
    elif change == "string_flops":
        doc["workloads"][0]["analytic"]["flops"] = "8192"
    elif change == "misspelt_key":
        doc["options"]["quik"] = doc["options"].pop("quick")
    elif change == "version_1":
        doc["schema_version"] = 1
    elif change == "skipped_strings":
        doc["skipped"] = ["ceilings"]
    elif change == "lone_surrogate":
        doc["workloads"][0]["title"] = "\ud800"  # valid JSON ("\\ud800"), not valid Unicode
    return json.dumps(doc)


BAD_JSON: dict[str, tuple[bytes | str, str]] = {
    "not_json": ("this is not JSON\n", "not valid JSON"),
    "empty": ("", "not valid JSON"),
    "list": ("[1, 2, 3]\n", "JSON object"),
    "foreign_object": ('{"name": "some other tool"}\n', "schema_version"),
    "non_utf8": (b"\xff\xfe{\x00}\x00", "UTF-8"),
    "nan": ('{"schema_version": NaN}', "non-finite"),
    "huge_integer": ("1" * 5000, "too many digits"),
    "deep_nesting": ("[" * 100_000 + "]" * 100_000, "JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_from_json_refuses_a_bad_file(case: str, cwd: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    data, fragment = BAD_JSON[case]
    path = _write(cwd / "results.json", data)
    before = snapshot(cwd)
    code, err = run(["--from-json", str(path), "--out", "report"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "results.json", fragment)
    assert snapshot(cwd) == before


@pytest.mark.parametrize(("change", "fragment"), [
    ("schema_version", "schema version 99 is not supported"),
    ("no_workloads", "missing key 'workloads'"),
    ("workloads_object", "workloads: Input should be a valid list"),
    ("budget_zero", "assumptions.peak: Input should be greater than 0"),
    ("negative_median", "workloads[0].timing.per_call_s[0]: Input should be greater than 0"),
    ("string_flops", "workloads[0].analytic.flops: Input should be a valid integer"),
    ("misspelt_key", "options: missing key 'quick'; 1 more problem"),
    ("version_1", "schema version 1 stored derived values"),
    ("skipped_strings", "skipped[0]"),
    ("lone_surrogate", "not valid Unicode"),
    ("truncated", "not valid JSON"),
])
def test_from_json_refuses_a_damaged_results_file(change: str, fragment: str, saved: Path,
                                                  cwd: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    text = saved.read_text(encoding="utf-8")
    text = text[: len(text) // 2] if change == "truncated" else _shape_variant(saved, change)
    path = _write(cwd / "results.json", text)
    before = snapshot(cwd)
    code, err = run(["--from-json", str(path), "--out", "report"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, fragment)
    assert snapshot(cwd) == before


def test_from_json_refuses_a_folder_and_a_missing_file(cwd: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (cwd / "folder").mkdir()
    before = snapshot(cwd)
    code, err = run(["--from-json", str(cwd / "folder")], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "is a folder")
    code, err = run(["--from-json", str(cwd / "missing.json")], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "no such file")
    assert snapshot(cwd) == before


@pytest.mark.slow
@pytest.mark.parametrize(("flags", "expected"), [
    (["--bandwidth", "100 GB/s"], "1 TB/s"),
    (["--peak", "10 GFLOP/s", "--bandwidth", "1 TB/s"], "compute-bound"),
])
def test_from_json_takes_assumptions(flags: list[str], expected: str, saved: Path, cwd: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Budgets are assumptions, not measurements: a saved run re-renders under others, and the
    sentences follow the new numbers."""
    code, _ = run(["--from-json", str(saved), "--out", "other", *flags], capsys)
    assert code in (EXIT_OK, EXIT_PARTIAL)
    md = (cwd / "other" / "report.md").read_text(encoding="utf-8")
    if "--peak" not in flags:  # 100 GB/s x 24/7 FLOP/B = 343 GFLOP/s, above the 100 GFLOP/s
        assert "343 GFLOP/s `H`, above the compute budget" in md
        assert "**compute-bound**" in md
    else:  # the ridge is 0.01 FLOP/B: every exercise intensity is over it
        assert "under the ridge" not in md
        assert expected in md
    # Observations only: the same document (a profile's per-call samples may be written in
    # another form; loading reads them back in full).
    assert results_io.load(cwd / "other" / "results.json") == results_io.load(saved)


@pytest.mark.parametrize("flag", [["--quick"], ["--no-sweeps"], ["--config", "x.toml"]])
def test_from_json_refuses_measuring_flags(flag: list[str], saved: Path, cwd: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(cwd)
    code, err = run(["--from-json", str(saved), *flag], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, flag[0], "new measurement")
    assert snapshot(cwd) == before


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--progress", "loud"], "invalid choice"),
    (["--peak", "20GB/s"], "is a bandwidth"),
    (["--peak", "abc"], "cannot read 'abc'"),
    (["--bandwidth", "-1"], "must be positive"),
    (["--bandwidth", "20 Gb/s"], "bits"),
    (["--interconnect", "inf GB/s"], "--interconnect"),
    (["--only-config"], "--only-config needs --config"),
    (["--preset", "nosuchchip"], "unknown chip preset 'nosuchchip'"),
])
def test_bad_flags_are_one_line_and_write_nothing(argv: list[str], fragment: str, cwd: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run([*argv, "--no-ceilings", "--no-sweeps", "--no-sharding"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, fragment)
    assert snapshot(cwd) == {}


@pytest.mark.parametrize("value", ["", "  "])
def test_a_blank_preset_is_refused_with_one_line(value: str, saved: Path, cwd: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """'--preset ""' is not silently ignored while '--preset "  "' is refused: both are the
    same mistake, refused with the same line, for a measuring run and a re-render alike."""
    lines = set()
    for argv in (["--preset", value, "--no-ceilings"],
                 ["--from-json", str(saved), "--preset", value]):
        code, err = run(argv, capsys)
        assert code == EXIT_INPUT
        assert_one_error_line(err, "--preset: give a chip preset's name")
        lines.add(err)
    assert len(lines) == 1
    assert snapshot(cwd) == {}


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "value", "read", "unit"), [
    ("--peak", "100", "100 FLOP/s", "FLOP/s"), ("--bandwidth", "2e10", "20 GB/s", "B/s"),
    ("--interconnect", " 5e9 ", "5 GB/s", "B/s"),
])
def test_a_budget_without_a_unit_says_how_it_was_read(flag: str, value: str, read: str,
                                                      unit: str, saved: Path, cwd: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    code, err = run(["--from-json", str(saved), "--out", "r", flag, value], capsys)
    assert code in (EXIT_OK, EXIT_PARTIAL)
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert notes == [f"note: {flag} {value.strip()} read as {read} (a number without a unit "
                     f"is in {unit})"]
    # With a unit, nothing to say.
    code, err = run(["--from-json", str(saved), "--out", "r", flag, f"{read}"], capsys)
    assert code in (EXIT_OK, EXIT_PARTIAL) and "note:" not in err


def test_the_note_on_a_bare_number_never_joins_an_error_line(
        cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bad input stays one line: the note is said once every input was accepted."""
    for argv in (["--from-json", "missing.json", "--peak", "100"],
                 ["--peak", "100", "--preset", ""],
                 ["--peak", "100", "--only-config", "--no-ceilings"]):
        code, err = run(argv, capsys)
        assert code == EXIT_INPUT
        assert_one_error_line(err)
    assert snapshot(cwd) == {}


def test_the_help_says_how_a_bare_number_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, even at '--'
    assert "abarenumberisinFLOP/s('--peak100'is100FLOP/s)" in text
    assert text.count("abarenumberisinB/s") == 2


CONFIGS = {
    "toml_syntax": ("schema = 1\n[[workload]\n", "TOML syntax error"),
    "unknown_key": ('schema = 1\ncolour = "red"\n', "unknown key 'colour'"),
    "missing_module": ('[[workload]]\nfunction = "rr_no_such_module:f"\n'
                       'args = [{ shape = [4], dtype = "float32" }]\n',
                       "No module named 'rr_no_such_module'"),
    "module_raises": ('[[workload]]\nfunction = "rr_raising_module:f"\n'
                      'args = [{ shape = [4], dtype = "float32" }]\n',
                      "RuntimeError while importing rr_raising_module"),
    "missing_function": ('[[workload]]\nfunction = "my_workloads:no_such_function"\n'
                         'args = [{ shape = [4], dtype = "float32" }]\n', "has no"),
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_bad_config_is_one_line_and_writes_nothing(case: str, cwd: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    text, fragment = CONFIGS[case]
    folder = cwd / "cfg"
    folder.mkdir()
    _write(folder / "my_workloads.py", (EXAMPLES / "my_workloads.py").read_bytes())
    _write(folder / "rr_raising_module.py", "raise RuntimeError('broken on import')\n")
    _write(folder / "bad.toml", text)
    before = snapshot(cwd)
    code, err = run(["--config", str(folder / "bad.toml"), "--no-ceilings"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "bad.toml", fragment)
    after = {k: v for k, v in snapshot(cwd).items() if "__pycache__" not in k}
    assert after == before


def test_the_examples_config_is_valid() -> None:
    """The bad-config cases above differ from a config that loads."""
    from roofline_report import config

    cfg = config.load_config(str(EXAMPLES / "workloads.toml"))
    assert len(cfg.workloads) == 3


# --------------------------------------------------------------------------- bad --out


def test_out_refuses_a_file(saved: Path, cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(cwd / "notes.txt", "mine\n")
    before = snapshot(cwd)
    code, err = run(["--from-json", str(saved), "--out", "notes.txt"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "is a file")
    assert snapshot(cwd) == before


def test_out_refuses_a_foreign_folder(saved: Path, cwd: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    (cwd / "docs").mkdir()
    _write(cwd / "docs" / "index.md", "mine\n")
    before = snapshot(cwd)
    code, err = run(["--from-json", str(saved), "--out", "docs"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "not empty")
    assert snapshot(cwd) == before


def test_out_refuses_a_previous_report_holding_user_files(
        saved: Path, previous: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(previous / "my-notes.txt", "mine\n")
    before = snapshot(previous.parent)
    code, err = run(["--from-json", str(saved), "--out", str(previous)], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "did not write", "my-notes.txt")
    assert snapshot(previous.parent) == before


def test_out_refuses_a_symlink(saved: Path, previous: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    (previous.parent / "link").symlink_to(previous)
    before = snapshot(previous.parent)
    code, err = run(["--from-json", str(saved), "--out", "link"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "symbolic link")
    assert snapshot(previous.parent) == before


def test_out_refuses_the_repository_root(saved: Path, cwd: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    beside = sorted(p.name for p in REPO.parent.iterdir())
    code, err = run(["--from-json", str(saved), "--out", str(REPO)], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "project root")
    assert not (REPO / output.MANIFEST).exists()
    assert sorted(p.name for p in REPO.parent.iterdir()) == beside


def test_out_under_a_file_is_refused(saved: Path, cwd: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    _write(cwd / "notes.txt", "mine\n")
    before = snapshot(cwd)
    code, err = run(["--from-json", str(saved), "--out", "notes.txt/report"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "--out")
    assert snapshot(cwd) == before


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_out_where_folders_cannot_be_created(saved: Path, cwd: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """/proc refuses new folders even for root: refused from the path alone."""
    code, err = run(["--from-json", str(saved), "--out", "/proc/roofline-report-test"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "system folder /proc")
    assert not Path("/proc/roofline-report-test").exists()


@pytest.mark.parametrize("out", ["/", "/usr", "/proc/roofline-report-test"])
def test_out_in_system_places_is_refused_before_measuring(
        out: str, cwd: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def measuring(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("measured before refusing --out")

    monkeypatch.setattr(cli, "_measure", measuring)
    monkeypatch.setattr(Path, "rglob", measuring)
    code, err = run(["--out", out, "--quick", "--progress", "none"], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, f"--out {out}:")


@pytest.mark.parametrize("out", ["/", "/usr"])
def test_compare_out_goes_through_the_same_check(
        out: str, saved: Path, cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["compare", str(saved), str(saved), "--out", out], capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, f"--out {out}:")


def _lock(folder: Path) -> bool:
    """Make ``folder`` refuse new entries: chmod for a normal user; root ignores permissions, so
    as root the folder is made immutable (chattr +i). False if that is not possible here."""
    if os.geteuid() != 0:
        os.chmod(folder, 0o555)
        return not os.access(folder, os.W_OK)
    try:
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
    except OSError:
        return False
    return done.returncode == 0


def _unlock(folder: Path) -> None:
    if os.geteuid() != 0:
        os.chmod(folder, 0o755)
    else:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True, check=False)


def test_out_in_a_read_only_folder(saved: Path, cwd: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    locked = cwd / "locked"
    locked.mkdir()
    if not _lock(locked):
        _unlock(locked)
        pytest.skip("cannot make a folder read-only here (chmod or chattr +i)")
    try:
        code, err = run(["--from-json", str(saved), "--out", str(locked / "report")], capsys)
        entries = list(locked.iterdir())
    finally:
        _unlock(locked)
    assert code == EXIT_INPUT
    assert_one_error_line(err, "cannot write in locked")
    assert entries == []


@pytest.mark.slow
def test_errors_in_a_real_process_have_no_traceback(tmp_path: Path) -> None:
    """The same contract when run as ``python generate.py`` (argparse and the interpreter)."""
    bad = _write(tmp_path / "results.json", b"\x00\x01 not json")
    for argv, fragment in ((["--no-such-flag"], "unrecognized"),
                           (["--from-json", str(bad)], "not valid JSON")):
        proc = subprocess.run([sys.executable, str(REPO / "generate.py"), *argv],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120,
                              check=False)
        assert proc.returncode == EXIT_INPUT
        assert proc.stdout == ""
        assert_one_error_line(proc.stderr, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


# ------------------------------------------------------------------------- output safety


def test_a_failed_render_leaves_the_previous_report(saved: Path, previous: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(previous.parent)

    def broken(_results: Any, _assumptions: Any = None) -> Any:
        raise RuntimeError("the renderer broke")

    monkeypatch.setattr(render, "render", broken)
    code, err = run(["--from-json", str(saved), "--out", str(previous)], capsys)
    # Saved data that does not render is reported as a problem of that file.
    assert code == EXIT_INPUT
    assert_one_error_line(err, "unexpected structure", "RuntimeError: the renderer broke")
    assert snapshot(previous.parent) == before


def test_interrupt_while_measuring_leaves_the_previous_report(
        previous: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from roofline_report.observe import run as measure

    before = snapshot(previous.parent)

    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(measure, "run", interrupted)
    code, err = run(["--out", str(previous), "--quick", "--progress", "none"], capsys)
    assert code == 130
    assert "interrupted" in err and "untouched" in err
    assert "Traceback" not in err
    assert snapshot(previous.parent) == before


@pytest.mark.slow
def test_interrupt_while_swapping_leaves_the_previous_report(
        saved: Path, previous: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(previous.parent)
    real_replace = os.replace
    calls: list[str] = []

    def replace_then_interrupt(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        calls.append(str(dst))
        if len(calls) == 1:  # the old report has been moved aside: the worst moment
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    code, err = run(["--from-json", str(saved), "--out", str(previous)], capsys)
    assert code == 130
    assert "Traceback" not in err
    assert snapshot(previous.parent) == before  # no staging or .old folder left either


def _fresh(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a measuring run return the saved results without measuring."""
    from roofline_report.observe import run as measure

    doc = json.loads(saved.read_text(encoding="utf-8"))
    monkeypatch.setattr(measure, "run", lambda *_a, **_k: doc)


@pytest.mark.parametrize("debug", [False, True])
def test_internal_error_while_rendering_fresh_results(debug: bool, saved: Path, previous: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _fresh(saved, monkeypatch)
    before = snapshot(previous.parent)

    def broken(_results: Any, _assumptions: Any = None) -> Any:
        raise ValueError("figure limits are inverted\nsecond line of detail")

    monkeypatch.setattr(render, "render", broken)
    argv = ["--out", str(previous), "--progress", "none", *(["--debug"] if debug else [])]
    code, err = run(argv, capsys)
    assert code == EXIT_INTERNAL
    last = err.splitlines()[-1]
    assert last.startswith("internal error: ValueError: figure limits are inverted")
    assert "second line" not in last
    if debug:
        assert "Traceback (most recent call last)" in err
        assert "second line of detail" in err
    else:
        assert err.splitlines() == [last]
        assert "--debug" in last
    assert snapshot(previous.parent) == before


def test_debug_shows_the_cause_of_a_saved_file_that_does_not_render(
        saved: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def broken(_results: Any, _assumptions: Any = None) -> Any:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(render, "render", broken)
    code, err = run(["--from-json", str(saved), "--out", "report", "--debug"], capsys)
    assert code == EXIT_INPUT
    assert "Traceback (most recent call last)" in err
    assert err.splitlines()[-1].startswith(f"error: {saved.name}: unexpected structure")
    assert not (cwd / "report").exists()


@pytest.mark.slow
def test_a_fresh_build_replaces_a_previous_report(saved: Path, previous: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The control case for the tests above: the same calls without a fault succeed."""
    _fresh(saved, monkeypatch)
    (previous / "report.md").write_text("stale\n", encoding="utf-8")
    code, err = run(["--out", str(previous), "--progress", "none"], capsys)
    assert code in (EXIT_OK, EXIT_PARTIAL), err
    assert err.startswith(f"wrote {previous / 'report.html'} and {previous / 'report.md'}")
    assert len(err.splitlines()) == 1
    assert (previous / "report.md").read_text(encoding="utf-8") != "stale\n"
    assert sorted(p.name for p in previous.parent.iterdir()) == ["report"]


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_progress_is_a_live_line_on_a_terminal_and_plain_lines_otherwise() -> None:
    from roofline_report.progress import Progress

    term = _Stream(tty=True)
    p = Progress("auto", term)
    p("ceilings of this machine")
    p("workload 1/3: tanh(a @ b)")
    p.done()
    text = term.getvalue()
    assert "\r\033[K" in text and "\n" not in text
    assert "workload 1/3" in text

    log = _Stream(tty=False)
    p = Progress("auto", log)
    p("ceilings of this machine")
    p("workload 1/3: tanh(a @ b)")
    p.done()
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith("roofline-report: [") for line in lines)
    assert "\033" not in log.getvalue()

    quiet = _Stream(tty=True)
    Progress("none", quiet)("anything")
    assert quiet.getvalue() == ""


# ---------------------------------------------------------------------- one command line


PACKAGE = REPO / "roofline_report"
SHARED = ("--out", "--preset", "--title", "--progress", "--debug", "--version")
OWN = {"report": ("--from-json", "--quick", "--config", "--peak", "--list-presets"),
       "profile": ("LOGDIR", "--run", "--module", "--ceilings", "--jobs"),
       "compare": ("RESULTS_JSON", "--fail-if")}


def _options_defined(source: str) -> list[str]:
    """The option strings of every ``add_argument`` call in ``source``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "add_argument":
            found += [a.value for a in node.args if isinstance(a, ast.Constant)
                      and isinstance(a.value, str) and a.value.startswith("-")]
    return found


def test_each_option_and_the_parser_are_defined_once() -> None:
    """One command line: no option is defined twice across the package's command-line modules
    (those at its top; the sharding child's arguments are the build's own), and one argparse
    class words a usage error (the check sees a second definition)."""
    sources = [p.read_text(encoding="utf-8") for p in sorted(PACKAGE.glob("*.py"))]
    options = [o for source in sources for o in _options_defined(source)]
    assert set(SHARED) | {o for own in OWN.values() for o in own if o.startswith("-")} \
        <= set(options)
    assert sorted({o for o in options if options.count(o) > 1}) == []
    assert sum(source.count("(argparse.ArgumentParser)") for source in sources) == 1
    twice = _options_defined('p.add_argument("--title")\nq.add_argument("--title", "-t")\n')
    assert twice == ["--title", "--title", "-t"]


@pytest.mark.parametrize("command", sorted(OWN))
def test_each_commands_help_lists_its_options_and_the_shared_ones(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in (*SHARED, *OWN[command]):
        assert option in text, (command, option)
    usage = text.split("\n\n")[0].split()
    others = {o for c, own in OWN.items() if c != command for o in own} - set(OWN[command])
    assert not [o for o in others if o in usage or f"[{o}" in usage]


def test_report_is_the_default_command() -> None:
    for argv in ([], ["--quick", "--out", "x"], ["--from-json", "r.json", "--debug"]):
        ns = cli.parse_args(argv)
        assert ns.command == "report"
        assert vars(ns) == vars(cli.parse_args(["report", *argv]))
    assert cli.parse_args([]).out is None and cli.parse_args([]).progress == "auto"
    assert cli.parse_args(["profile", "logs", "--out", "o", "--run", "r"]).run == "r"
    ns = cli.parse_args(["compare", "a.json", "b.json", "--out", "o", "--fail-if", "time>5%"])
    assert (ns.command, ns.results, ns.fail_if) == ("compare", ["a.json", "b.json"],
                                                    ["time>5%"])


@pytest.mark.parametrize(("argv", "fragment"), [
    (["profile", "logs"], "roofline-report profile: the following arguments are required: "
     "--out (see --help)"),
    (["compare", "a.json", "b.json"], "roofline-report compare: the following arguments are "
     "required: --out"),
    (["compare", "a.json", "b.json", "--out", "o", "--preset", "H100"],
     "compare: --preset does not apply"),
    (["compare", "--out", "o"], "roofline-report compare: the following arguments are "
     "required: RESULTS_JSON"),
    (["profile", "logs", "--out", "o", "--fail-if", "time>5%"],
     "roofline-report profile: unrecognized arguments: --fail-if"),
    (["compare", "a.json", "b.json", "--out", "o", "--jobs", "2"],
     "roofline-report compare: unrecognized arguments: --jobs"),
    (["--fail-if", "time>5%"], "roofline-report: unrecognized arguments: --fail-if"),
    (["profile", "logs", "--out", "o", "--progress", "loud"], "invalid choice: 'loud'"),
])
def test_a_commands_usage_error_is_one_line(argv: list[str], fragment: str, cwd: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(argv, capsys)
    assert code == EXIT_INPUT
    assert_one_error_line(err, fragment)
    assert snapshot(cwd) == {}


def test_debug_is_an_option_of_the_command_line_not_a_word_in_it(
        saved: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """--debug shows the traceback of an internal error of any command; the same word as an
    argument (a results file named "--debug", after "--") is not the flag."""
    from roofline_report import compare_cli

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ValueError("the comparison broke")

    monkeypatch.setattr(compare_cli, "render_comparison", broken)
    shutil.copy(FIXTURE.parent / "cpu_results_v2.json", cwd / "--debug")
    before = snapshot(cwd)
    for argv, traced in ((["compare", "--debug", "--out", "c", str(saved), "--", "--debug"],
                          True),
                         (["compare", "--out", "c", str(saved), "--", "--debug"], False)):
        code, err = run(argv, capsys)
        assert code == EXIT_INTERNAL, err
        assert ("Traceback (most recent call last)" in err) is traced
        assert err.splitlines()[-1].startswith("internal error: ValueError: the comparison "
                                               "broke")
    assert snapshot(cwd) == before
