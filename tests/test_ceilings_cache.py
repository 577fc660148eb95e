"""The ceilings cache: measured once per machine and software, reused, replaced on request.

Keys (what makes a measurement valid), the file round trip, damaged and foreign files ignored
with a note, a folder that cannot be written, the plan rule (a full entry serves a quick run,
never the reverse), ``--remeasure``, the report's sentence on where the ceilings came from, and
that tests keep the cache inside their temporary folders.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

import roofline_report
from roofline_report import cli
from roofline_report.analysis.analyse import analyse
from roofline_report.analysis.ceilings_origin import ceilings_origin
from roofline_report.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, InputError
from roofline_report.observe.ceilings import cache, load
from roofline_report.report import views
from roofline_report.results import io as results_io

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"

ENV: dict[str, Any] = {
    "backend": "cpu", "device_kind": "cpu", "device_count": 1, "python": "3.11.9",
    "jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.1.0", "platform": "Linux x86_64",
    "cpu_model": "AMD EPYC 7B13", "cpu_count": 2,
}
AT = "2026-12-01T08:38:41Z"


@pytest.fixture(scope="module")
def fixture_doc() -> dict[str, Any]:
    return results_io.load(FIXTURE)


def ceilings_record(doc: dict[str, Any], *, quick: bool) -> dict[str, Any]:
    """The fixture run's ceilings record (measured for real on a CPU), as a given plan's."""
    record = copy.deepcopy(doc["ceilings"])
    record.pop("origin", None)
    record["quick"] = quick
    return record


def key(quick: bool = False, **changes: Any) -> cache.Key:
    return cache.key_for({**ENV, **changes}, quick=quick)


# ---------------------------------------------------------------------------------- keys


def test_equal_machines_and_software_have_equal_keys() -> None:
    a, b = key(), cache.key_for(dict(ENV), quick=False)
    assert a == b
    assert a.digest == b.digest and a.filename == b.filename
    assert a.filename.startswith("ceilings-full-")
    # Facts of the environment that do not bear on the ceilings do not change the key.
    assert key(python="3.12.1", numpy="1.26.4", platform="Linux aarch64") == a


@pytest.mark.parametrize("change", [
    {"cpu_model": "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"},
    {"cpu_count": 4},
    {"jax": "0.11.2"},
    {"jaxlib": "0.11.2"},
    {"backend": "gpu"},
    {"device_kind": "NVIDIA H200"},
    {"device_count": 8},
])
def test_another_machine_or_software_is_another_key_and_a_miss(
        change: dict[str, Any], tmp_path: Path, fixture_doc: dict[str, Any]) -> None:
    here = key()
    assert cache.save(here, ceilings_record(fixture_doc, quick=False), AT, tmp_path) == []
    other = key(**change)
    assert other != here and other.digest != here.digest and other.filename != here.filename
    assert cache.lookup(other, tmp_path) == (None, [])
    assert cache.lookup(here, tmp_path)[0] is not None


def test_project_version_plan_and_format_are_in_the_key(tmp_path: Path,
                                                        fixture_doc: dict[str, Any]) -> None:
    full = key()
    assert cache.key_for(ENV, quick=False, version="0.2.0").digest != full.digest
    assert key(quick=True).digest != full.digest and key(quick=True).plan == "quick"
    assert dataclasses.replace(full, format=cache.CACHE_FORMAT + 1).digest != full.digest
    # A quick entry never serves a full run.
    assert cache.save(key(quick=True), ceilings_record(fixture_doc, quick=True), AT,
                      tmp_path) == []
    assert cache.lookup(full, tmp_path) == (None, [])


# ---------------------------------------------------------------------------- round trip


def test_round_trip(tmp_path: Path, fixture_doc: dict[str, Any]) -> None:
    record = ceilings_record(fixture_doc, quick=False)
    assert cache.save(key(), {**record, "origin": {"cached": False}}, AT, tmp_path) == []
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [key().filename]  # no temporary file left behind
    entry, notes = cache.lookup(key(), tmp_path)
    assert notes == []
    assert entry is not None
    assert results_io.plain(entry.ceilings) == record  # the origin is the run's, not saved
    assert entry.measured_at == AT and entry.key == key()


def test_the_plan_rule(tmp_path: Path, fixture_doc: dict[str, Any]) -> None:
    """A full entry serves a quick run; the more recent of full and quick serves it."""
    quick = key(quick=True)
    assert cache.save(key(), ceilings_record(fixture_doc, quick=False), AT, tmp_path) == []
    entry, _ = cache.lookup(quick, tmp_path)
    assert entry is not None and entry.key.plan == "full"
    assert entry.ceilings.quick is False
    later = "2026-12-02T00:00:00Z"
    assert cache.save(quick, ceilings_record(fixture_doc, quick=True), later, tmp_path) == []
    entry, _ = cache.lookup(quick, tmp_path)
    assert entry is not None and entry.key.plan == "quick" and entry.measured_at == later
    entry, _ = cache.lookup(key(), tmp_path)
    assert entry is not None and entry.key.plan == "full" and entry.measured_at == AT


# ------------------------------------------------------------------- damaged and foreign


def _signed(document: dict[str, Any]) -> dict[str, Any]:
    """A cache file's content with the digest of that content (as save writes it)."""
    body = {k: v for k, v in document.items() if k != "digest"}
    return {**body, "digest": cache.content_digest(body)}


def _valid_file(doc: dict[str, Any]) -> dict[str, Any]:
    return _signed({"format": cache.CACHE_FORMAT, "key": key().fields(),
                    "measured_at": AT, "ceilings": ceilings_record(doc, quick=False)})


def _damage(kind: str, doc: dict[str, Any]) -> str:
    good = _valid_file(doc)
    if kind == "not json":
        return json.dumps(good)[:500]  # truncated
    if kind == "not an object":
        return "[1, 2]"
    if kind == "nan":
        return json.dumps(good).replace('"cache_bytes": ', '"cache_bytes": NaN, "x": ', 1)
    if kind == "extra key":
        return json.dumps({**good, "comment": "hand-edited"})
    if kind == "missing key":
        return json.dumps({k: v for k, v in good.items() if k != "measured_at"})
    if kind == "format":
        return json.dumps(_signed({**good, "format": cache.CACHE_FORMAT + 1}))
    if kind == "foreign key":  # another machine's entry copied under this machine's name
        return json.dumps(_signed({**good, "key": key(cpu_model="another CPU").fields()}))
    if kind == "digest":
        return json.dumps({**good, "digest": "0" * 64})
    if kind == "key digest":  # the digest of the key alone, as format 8 wrote it
        return json.dumps({**good, "digest": key().digest})
    if kind == "measured_at":
        return json.dumps(_signed({**good, "measured_at": "yesterday"}))
    bad = copy.deepcopy(good)
    if kind == "schema":
        bad["ceilings"]["compute"][0]["value"] = -1.0
    elif kind == "unknown ceilings key":
        bad["ceilings"]["flux"] = 1
    elif kind == "other plan":
        bad["ceilings"]["quick"] = True
    elif kind == "other device":
        bad["ceilings"]["device_kind"] = "NVIDIA H200"
    elif kind == "with origin":
        bad["ceilings"]["origin"] = {"cached": False, "measured_at": AT, "key": "x"}
    else:
        raise AssertionError(kind)
    return json.dumps(_signed(bad))


DAMAGES = ["not json", "not an object", "nan", "extra key", "missing key", "format",
           "foreign key", "digest", "key digest", "measured_at", "schema",
           "unknown ceilings key",
           "other plan", "other device", "with origin"]


@pytest.mark.parametrize("kind", DAMAGES)
def test_a_damaged_or_foreign_file_is_ignored_with_a_note(
        kind: str, tmp_path: Path, fixture_doc: dict[str, Any]) -> None:
    _write(tmp_path / key().filename, _damage(kind, fixture_doc))
    entry, notes = cache.lookup(key(), tmp_path)
    assert entry is None
    assert len(notes) == 1, notes
    assert notes[0].startswith(f"the cached ceilings {key().filename} were ignored: ")
    assert str(tmp_path) not in notes[0]  # notes name the file, not the user's folder


def test_the_valid_file_of_the_damage_tests_is_accepted(tmp_path: Path,
                                                        fixture_doc: dict[str, Any]) -> None:
    """The control of the damage tests: the file they start from is an entry."""
    _write(tmp_path / key().filename, json.dumps(_valid_file(fixture_doc)))
    entry, notes = cache.lookup(key(), tmp_path)
    assert entry is not None and notes == []


def _write(path: Path, text: str) -> None:
    """A file as the cache writes one: readable and writable by its owner alone."""
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)


def test_a_file_that_cannot_be_decoded_is_a_note(tmp_path: Path) -> None:
    (tmp_path / key().filename).write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / key().filename).chmod(0o600)
    entry, notes = cache.lookup(key(), tmp_path)
    assert entry is None and len(notes) == 1 and "could not be read" in notes[0]


def test_a_folder_that_cannot_be_written_is_a_note(tmp_path: Path,
                                                   fixture_doc: dict[str, Any]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    notes = cache.save(key(), ceilings_record(fixture_doc, quick=False), AT, blocker / "ceilings")
    assert len(notes) == 1 and notes[0].startswith("the ceilings could not be saved to the cache")
    assert str(tmp_path) not in notes[0]
    assert blocker.read_text(encoding="utf-8") == "not a folder"
    # Reading from it is a miss, not an error.
    assert cache.lookup(key(), blocker / "ceilings")[0] is None


def test_a_record_that_would_not_be_read_back_is_not_saved(tmp_path: Path,
                                                           fixture_doc: dict[str, Any]) -> None:
    record = ceilings_record(fixture_doc, quick=False)
    record["compute"] = "broken"
    notes = cache.save(key(), record, AT, tmp_path)
    assert len(notes) == 1 and notes[0].startswith("the ceilings were not saved to the cache")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- where


def test_the_cache_folder_of_each_platform() -> None:
    home = Path("/home/someone")
    assert cache.cache_root({}, "linux", home) == home / ".cache" / "roofline-report"
    assert cache.cache_root({"XDG_CACHE_HOME": "/var/cache/me"}, "linux", home) == \
        Path("/var/cache/me/roofline-report")
    # A relative XDG_CACHE_HOME is invalid (the XDG specification): ignored.
    assert cache.cache_root({"XDG_CACHE_HOME": "rel"}, "linux", home) == \
        home / ".cache" / "roofline-report"
    assert cache.cache_root({}, "darwin", home) == \
        home / "Library" / "Caches" / "roofline-report"
    assert cache.cache_root({"LOCALAPPDATA": "C:/Users/me/AppData/Local"}, "win32", home) == \
        Path("C:/Users/me/AppData/Local/roofline-report")
    assert cache.cache_root({}, "win32", home) == home / "AppData" / "Local" / "roofline-report"
    for platform in ("linux", "darwin", "win32"):
        assert cache.cache_root({cache.ENV_VAR: "/tmp/rr", "XDG_CACHE_HOME": "/x",
                                 "LOCALAPPDATA": "/y"}, platform, home) == Path("/tmp/rr")
    assert cache.ceilings_folder({cache.ENV_VAR: "/tmp/rr"}) == Path("/tmp/rr/ceilings")


def test_tests_keep_the_cache_in_a_temporary_folder(
        tmp_path_factory: pytest.TempPathFactory, ceilings_cache_folder: Path) -> None:
    """conftest points ROOFLINE_REPORT_CACHE at a fresh folder under pytest's temporary
    folder, for each test and for the session's fixtures: no test reads or writes the user's
    cache, and no two runs of the suite share one."""
    base = tmp_path_factory.getbasetemp().resolve()
    folder = Path(os.environ[cache.ENV_VAR]).resolve()
    assert folder == ceilings_cache_folder.resolve()
    assert folder.is_relative_to(base)
    assert cache.ceilings_folder().resolve().is_relative_to(base)
    assert list(folder.iterdir()) == []  # empty: nothing from another test


# ------------------------------------------------------- checked before they are believed


def _loads(others_share: float | None) -> dict[str, Any]:
    """A LoadReading record of a 1-second round on 2 cores with other processes holding
    ``others_share`` of them (None: unknown)."""
    return {"wall_s": 1.0, "others_cpu_s": None if others_share is None else 2.0 * others_share,
            "cores": 2, "loadavg": [0.5, 0.6]}


def _with_loads(record: dict[str, Any], share: float | None,
                whole: float | None = None) -> dict[str, Any]:
    """``record`` with each compute and streaming round's load (``share`` of the cores held by
    others) and, with ``whole``, the whole measurement's."""
    out = copy.deepcopy(record)
    for group in ("compute", "bandwidth"):
        for entry in out[group]:
            entry["round_loads"] = [_loads(share) for _ in entry["rounds"]]
    if whole is not None:
        out["conditions"] = _loads(whole)
    return out


def _saved(tmp_path: Path, doc: dict[str, Any]) -> Path:
    assert cache.save(key(), ceilings_record(doc, quick=False), AT, tmp_path) == []
    path = tmp_path / key().filename
    assert cache.lookup(key(), tmp_path)[0] is not None  # the control: it is read back
    return path


def _ignored(tmp_path: Path, fragment: str) -> str:
    entry, notes = cache.lookup(key(), tmp_path)
    assert entry is None, "the entry was used"
    assert len(notes) == 1 and fragment in notes[0], notes
    assert str(tmp_path) not in notes[0]
    return notes[0]


@pytest.mark.parametrize("factor", [10.0, 0.1])
def test_rates_edited_after_saving_are_ignored_as_altered(
        factor: float, tmp_path: Path, fixture_doc: dict[str, Any]) -> None:
    """A valid cache file whose rates were multiplied by 10 (or divided) after it was saved:
    the digest covers the content, so the file is ignored as altered."""
    path = _saved(tmp_path, fixture_doc)
    data = json.loads(path.read_text(encoding="utf-8"))
    for group in ("compute", "bandwidth"):
        for entry in data["ceilings"][group]:
            if entry["value"] is not None:
                entry["value"] *= factor
                entry["rounds"] = [r * factor if r else r for r in entry["rounds"]]
    _write(path, json.dumps(data))
    note = _ignored(tmp_path, "were ignored: it was altered after it was saved")
    assert note.startswith(f"the cached ceilings {key().filename}")


def test_a_file_of_another_user_is_ignored(tmp_path: Path, fixture_doc: dict[str, Any],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = _saved(tmp_path, fixture_doc)
    owner = path.stat().st_uid
    real_lstat = os.lstat

    def lstat(p: Any) -> os.stat_result:
        info = real_lstat(p)
        if Path(p) == path:  # the file, and only it, belongs to someone else
            values = list(info)
            values[4] = owner + 1  # st_uid
            return os.stat_result(values)
        return info

    monkeypatch.setattr(os, "lstat", lstat)
    note = _ignored(tmp_path, "were ignored: it is owned by another user")
    assert note.endswith("another user")  # no user ids: the note goes onto the page


def test_a_file_others_may_write_is_ignored(tmp_path: Path, fixture_doc: dict[str, Any]
                                            ) -> None:
    path = _saved(tmp_path, fixture_doc)
    assert path.stat().st_mode & 0o077 == 0  # saved for its owner alone
    path.chmod(0o664)
    _ignored(tmp_path, "it is writable by group or others (mode -rw-rw-r--)")
    path.chmod(0o646)
    _ignored(tmp_path, "it is writable by group or others")


def test_a_folder_of_another_user_is_neither_read_nor_written(
        tmp_path: Path, fixture_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache folder is a symbolic link to a folder owned by someone else (here: every
    folder is someone else's, os.getuid says another user runs the build)."""
    theirs = tmp_path / "theirs"
    _saved(theirs, fixture_doc)
    before = {p.name: p.read_bytes() for p in theirs.iterdir()}
    link = tmp_path / "mine"
    link.symlink_to(theirs, target_is_directory=True)
    me = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: me + 1)
    entry, notes = cache.lookup(key(), link)
    assert entry is None
    assert notes == ["the ceilings cache was not read: the ceilings cache folder is a "
                     "symbolic link to a folder owned by another user"]
    record = ceilings_record(fixture_doc, quick=False)
    record["dispatch"] = {**record["dispatch"], "value": 1.0}
    notes = cache.save(key(), record, "2026-12-02T00:00:00Z", link)
    assert len(notes) == 1 and notes[0].startswith("the ceilings were not saved to the cache: "
                                                   "the ceilings cache folder is a symbolic")
    assert {p.name: p.read_bytes() for p in theirs.iterdir()} == before  # nothing written
    # Not a link: the folder itself is someone else's.
    assert cache.lookup(key(), theirs)[1][0].endswith(
        "the ceilings cache folder is owned by another user")


def test_a_fifo_is_not_opened(tmp_path: Path) -> None:
    """A FIFO under the entry's name would block a reader that opened it: it is never
    opened, and is a note."""
    os.mkfifo(tmp_path / key().filename, 0o600)
    _ignored(tmp_path, "it is a FIFO, not a regular file")


def test_a_symbolic_link_as_the_file_is_ignored(tmp_path: Path, fixture_doc: dict[str, Any]
                                                ) -> None:
    elsewhere = tmp_path / "elsewhere"
    _saved(elsewhere, fixture_doc)
    (tmp_path / key().filename).symlink_to(elsewhere / key().filename)
    _ignored(tmp_path, "it is a symbolic link, not a file")


def test_a_huge_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / key().filename
    with path.open("wb") as f:  # sparse: no disk used
        f.truncate(cache.MAX_FILE_BYTES + 1)
    path.chmod(0o600)
    _ignored(tmp_path, f"it is {cache.MAX_FILE_BYTES + 1} bytes, more than a cache file's")


def test_ceilings_measured_under_load_are_not_saved(tmp_path: Path,
                                                    fixture_doc: dict[str, Any]) -> None:
    record = ceilings_record(fixture_doc, quick=False)
    loaded = _with_loads(record, 0.6)
    notes = cache.save(key(), loaded, AT, tmp_path)
    assert len(notes) == 1
    assert notes[0].startswith("the ceilings were not saved to the cache: measured under load "
                               "(other work held the cores while matmul float32, ")
    assert notes[0].endswith("the next run measures them again")
    assert list(tmp_path.iterdir()) == []
    # The whole measurement under load, its rounds unknown: not saved either.
    notes = cache.save(key(), _with_loads(record, None, whole=0.5), AT, tmp_path)
    assert notes and "other processes took 50% of the cores' time" in notes[0]
    assert list(tmp_path.iterdir()) == []
    # Quiet rounds (a tenth of the cores held by others) are saved, with their loads.
    quiet = _with_loads(record, 0.1, whole=0.05)
    assert cache.save(key(), quiet, AT, tmp_path) == []
    entry, notes = cache.lookup(key(), tmp_path)
    assert entry is not None and notes == []
    saved = results_io.plain(entry.ceilings)
    assert saved["conditions"] == quiet["conditions"]
    assert saved["compute"][0]["round_loads"] == quiet["compute"][0]["round_loads"]


def test_an_entry_marked_as_measured_under_load_is_ignored(
        tmp_path: Path, fixture_doc: dict[str, Any]) -> None:
    """A file that says its ceilings were measured under load (left by another version, or
    copied in) is not used, however valid otherwise."""
    good = _valid_file(fixture_doc)
    good["ceilings"] = _with_loads(good["ceilings"], 0.9)
    _write(tmp_path / key().filename, json.dumps(_signed(good)))
    _ignored(tmp_path, "were ignored: measured under load (other work held the cores while")


def test_a_run_measures_afresh_over_a_doctored_cache(
        monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any],
        ceilings_cache_folder: Path) -> None:
    """In a build: a cache entry doctored ×10 is a note and a fresh measurement, which
    replaces it."""
    from roofline_report.observe import run as measure
    from roofline_report.observe.ceilings import machine

    folder = ceilings_cache_folder / "ceilings"
    record = ceilings_record(fixture_doc, quick=False)
    assert cache.save(key(), record, AT, folder) == []
    path = folder / key().filename
    data = json.loads(path.read_text(encoding="utf-8"))
    data["ceilings"]["compute"][0]["value"] *= 10
    _write(path, json.dumps(data))
    counting = Counting(fixture_doc)
    monkeypatch.setattr(machine, "measure_ceilings", counting)
    said: list[str] = []
    data = measure._ceilings(measure.RunOptions(quick=False), ENV, "2026-12-02T00:00:00Z",
                             said.append, measure.Skips())
    assert counting.calls == 1 and data["origin"]["cached"] is False
    assert data["compute"][0]["value"] == record["compute"][0]["value"]
    assert len(data["origin"]["notes"]) == 1
    assert "altered after it was saved" in data["origin"]["notes"][0]
    entry, notes = cache.lookup(key(), folder)
    assert entry is not None and notes == [] and entry.measured_at == "2026-12-02T00:00:00Z"


def test_a_run_under_load_is_not_cached_and_the_next_measures_again(
        monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any],
        ceilings_cache_folder: Path) -> None:
    from roofline_report.observe import run as measure
    from roofline_report.observe.ceilings import machine

    shares = [0.7, 0.05]

    def measure_ceilings(**kwargs: Any) -> dict[str, Any]:
        return _with_loads(ceilings_record(fixture_doc, quick=bool(kwargs["quick"])),
                           shares.pop(0))

    monkeypatch.setattr(machine, "measure_ceilings", measure_ceilings)
    said: list[str] = []
    first = measure._ceilings(measure.RunOptions(), ENV, AT, said.append, measure.Skips())
    assert first["origin"]["cached"] is False
    assert "measured under load" in first["origin"]["notes"][0]
    assert not (ceilings_cache_folder / "ceilings" / key().filename).exists()
    second = measure._ceilings(measure.RunOptions(), ENV, AT, said.append, measure.Skips())
    assert second["origin"] == {"cached": False, "measured_at": AT, "key": key().digest,
                                "notes": []}
    assert shares == []  # measured twice
    third = measure._ceilings(measure.RunOptions(), ENV, AT, said.append, measure.Skips())
    assert third["origin"]["cached"] is True  # the quiet one was saved


# ---------------------------------------------------------------------- in a build


class QuietProbe:
    """Load readings of a quiet two-core machine: each reading a second after the last, this
    process's CPU time all the busy time there was."""

    def __init__(self, others_per_s: float = 0.0) -> None:
        self.t = 0.0
        self.others = others_per_s

    def __call__(self) -> load.Sample:
        self.t += 1.0
        return load.Sample(wall=self.t, busy_s=(1.0 + self.others) * self.t, cores=2,
                           own_s=self.t, loadavg=0.1)


class Counting:
    """A stand-in for measure_ceilings that returns the fixture's real ceilings record, as the
    plan asked for, and counts its calls."""

    def __init__(self, doc: dict[str, Any], *, this_machine: bool = False) -> None:
        self.doc = doc
        self.calls = 0
        # A build's cache key is this machine's, and the cache refuses a record of another
        # backend or device (a CPU's record on a TPU is never saved): as this machine's.
        self.this_machine = this_machine

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        record = ceilings_record(self.doc, quick=bool(kwargs["quick"]))
        if self.this_machine:
            from roofline_report.observe.lower import environment

            env = environment()
            record["backend"], record["device_kind"] = env["backend"], env["device_kind"]
        # Each measurement differs (a rate), so a reuse can be told from a new measurement.
        record["dispatch"] = {**record["dispatch"], "value": 1e-6 * self.calls}
        return record


def test_run_measures_once_then_reuses_and_remeasure_replaces(
        monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any],
        ceilings_cache_folder: Path) -> None:
    from roofline_report.observe import run as measure
    from roofline_report.observe.ceilings import machine

    counting = Counting(fixture_doc)
    monkeypatch.setattr(machine, "measure_ceilings", counting)
    said: list[str] = []

    def ceilings(at: str, **options: Any) -> dict[str, Any]:
        skips = measure.Skips()
        data = measure._ceilings(measure.RunOptions(quick=True, **options), ENV, at,
                                 said.append, skips)
        assert skips.items == []
        return data

    first = ceilings("2026-12-01T00:00:00Z")
    assert counting.calls == 1
    assert first["origin"] == {"cached": False, "measured_at": "2026-12-01T00:00:00Z",
                               "key": key(quick=True).digest, "notes": []}
    saved = ceilings_cache_folder / "ceilings" / key(quick=True).filename
    assert saved.is_file()

    second = ceilings("2026-12-04T12:00:00Z")
    assert counting.calls == 1  # reused, not measured
    assert second["origin"] == {"cached": True, "measured_at": "2026-12-01T00:00:00Z",
                                "key": key(quick=True).digest, "notes": []}
    assert second["dispatch"]["value"] == first["dispatch"]["value"]
    assert any("reused from the cache" in s for s in said)

    third = ceilings("2026-12-05T00:00:00Z", remeasure=True)
    assert counting.calls == 2
    assert third["origin"]["cached"] is False
    assert third["dispatch"]["value"] != first["dispatch"]["value"]
    fourth = ceilings("2026-12-06T00:00:00Z")
    assert counting.calls == 2
    assert fourth["origin"]["measured_at"] == "2026-12-05T00:00:00Z"  # the replacement
    assert fourth["dispatch"]["value"] == third["dispatch"]["value"]
    for data in (first, second, third, fourth):
        results_io.validate({**fixture_doc, "ceilings": data})


def test_a_damaged_entry_in_a_run_is_a_note_and_is_measured_again(
        monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any],
        ceilings_cache_folder: Path) -> None:
    from roofline_report.observe import run as measure
    from roofline_report.observe.ceilings import machine

    counting = Counting(fixture_doc)
    monkeypatch.setattr(machine, "measure_ceilings", counting)
    folder = ceilings_cache_folder / "ceilings"
    folder.mkdir()
    (folder / key().filename).write_text("{not json", encoding="utf-8")
    said: list[str] = []
    data = measure._ceilings(measure.RunOptions(quick=False), ENV, AT, said.append,
                             measure.Skips())
    assert counting.calls == 1
    assert data["origin"]["cached"] is False
    assert len(data["origin"]["notes"]) == 1 and "not JSON" in data["origin"]["notes"][0]
    assert any(s.startswith("note: the cached ceilings") for s in said)
    # The measurement replaced the damaged file.
    entry, notes = cache.lookup(key(), folder)
    assert entry is not None and notes == []


def test_an_unwritable_cache_in_a_run_is_a_note(
        monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any], tmp_path: Path) -> None:
    from roofline_report.observe import run as measure
    from roofline_report.observe.ceilings import machine

    blocker = tmp_path / "blocker"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(cache.ENV_VAR, str(blocker))
    monkeypatch.setattr(machine, "measure_ceilings", Counting(fixture_doc))
    skips = measure.Skips()
    data = measure._ceilings(measure.RunOptions(), ENV, AT, lambda _m: None, skips)
    assert data["available"] is True and skips.items == []
    assert data["origin"]["cached"] is False
    assert data["origin"]["notes"][0].startswith("the ceilings could not be saved")


def _build(out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code = cli.main(["--quick", "--no-sweeps", "--no-sharding", "--no-experiments",
                     "--progress", "none", "--out", str(out), *extra])
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return code, doc, (out / "report.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_command_line_reuses_and_remeasure_replaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any]) -> None:
    from roofline_report.observe import run as measure
    from roofline_report.observe import workloads
    from roofline_report.observe.ceilings import machine

    counting = Counting(fixture_doc, this_machine=True)
    monkeypatch.setattr(machine, "measure_ceilings", counting)
    monkeypatch.setattr(measure, "catalog", lambda _backend="cpu": [workloads.SEED])
    code, first, md = _build(tmp_path / "a")
    assert code in (EXIT_OK, EXIT_PARTIAL) and counting.calls == 1
    assert first["ceilings"]["origin"]["cached"] is False
    assert "These ceilings were measured in this run." in md

    code, second, md = _build(tmp_path / "b")
    assert code in (EXIT_OK, EXIT_PARTIAL) and counting.calls == 1
    origin = second["ceilings"]["origin"]
    assert origin["cached"] is True
    assert origin["measured_at"] == first["generator"]["measured_at"]
    assert "reused from the ceilings cache" in md and "--remeasure measures them again" in md

    code, third, _ = _build(tmp_path / "c", "--remeasure")
    assert code in (EXIT_OK, EXIT_PARTIAL) and counting.calls == 2
    assert third["ceilings"]["origin"]["cached"] is False
    assert third["ceilings"]["origin"]["measured_at"] == third["generator"]["measured_at"]
    _, fourth, _ = _build(tmp_path / "d")
    assert counting.calls == 2
    assert fourth["ceilings"]["origin"]["measured_at"] == third["generator"]["measured_at"]

    _, none, _ = _build(tmp_path / "e", "--no-ceilings")
    assert counting.calls == 2 and none["ceilings"]["available"] is False


@pytest.mark.parametrize("argv, fragment", [
    (["--remeasure", "--no-ceilings"], "--remeasure measures the ceilings again"),
    (["--from-json", str(FIXTURE), "--remeasure"], "--remeasure would need a new measurement"),
    (["--remeasure-if-suspect", "--no-ceilings"],
     "--remeasure-if-suspect measures the ceilings again; --no-ceilings measures none"),
    (["--from-json", str(FIXTURE), "--remeasure-if-suspect"],
     "--remeasure-if-suspect would need a new measurement"),
])
def test_remeasure_with_what_measures_no_ceilings_is_bad_input(
        argv: list[str], fragment: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main([*argv, "--progress", "none", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT, err
    assert len(err.strip().splitlines()) == 1 and fragment in err
    assert not (tmp_path / "out").exists()


def _divided(ceilings: dict[str, Any], by: float) -> dict[str, Any]:
    """``ceilings`` with every compute and streaming roof ``by`` times lower."""
    out = copy.deepcopy(ceilings)
    for group in ("compute", "bandwidth"):
        for entry in out[group]:
            if entry.get("value"):
                entry["value"] /= by
            entry["rounds"] = [r / by if r else r for r in entry.get("rounds", [])]
            for point in entry.get("by_size", []):
                point["value"] /= by
    return out


def test_ceilings_the_programs_beat_are_measured_again_with_a_note(
        monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any],
        ceilings_cache_folder: Path) -> None:
    """--remeasure-if-suspect: the fixture's programs (timed for real on a quiet machine) held
    to cached ceilings ten times too low: most beat them, and the ceilings are measured again;
    held to the ceilings they were measured with, they are not."""
    from roofline_report.observe import run as measure
    from roofline_report.observe.ceilings import machine

    counting = Counting(fixture_doc)
    monkeypatch.setattr(machine, "measure_ceilings", counting)
    options = measure.RunOptions(remeasure_if_suspect=True)
    said: list[str] = []
    low = {**copy.deepcopy(fixture_doc), "skipped": []}
    low["ceilings"] = _divided(low["ceilings"], 10.0)
    low["ceilings"]["origin"] = {"cached": True, "measured_at": AT, "key": key().digest,
                                 "notes": []}
    data = measure._remeasure_if_suspect(options, low, ENV, "2026-12-02T00:00:00Z",
                                         said.append, measure.Skips())
    assert counting.calls == 1
    assert data["origin"]["cached"] is False
    assert data["compute"][0]["value"] == fixture_doc["ceilings"]["compute"][0]["value"]
    note = data["origin"]["notes"][0]
    assert note.startswith("measured again in this run (--remeasure-if-suspect): ")
    assert note.endswith(" programs ran faster than the cached ceilings allowed")
    assert any("measuring again" in s for s in said)
    # The new ones are cached.
    assert cache.lookup(key(), ceilings_cache_folder / "ceilings")[0] is not None
    quiet = {**copy.deepcopy(fixture_doc), "skipped": []}
    assert measure._remeasure_if_suspect(options, quiet, ENV, AT, said.append,
                                         measure.Skips()) is quiet["ceilings"]
    assert counting.calls == 1


@pytest.mark.slow
def test_the_command_line_remeasures_suspect_ceilings_only_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture_doc: dict[str, Any]) -> None:
    from roofline_report.analysis.roof_check_records import Above, RoofCheck
    from roofline_report.observe import run as measure
    from roofline_report.observe import suspect_ceilings, workloads
    from roofline_report.observe.ceilings import machine

    counting = Counting(fixture_doc, this_machine=True)
    monkeypatch.setattr(machine, "measure_ceilings", counting)
    monkeypatch.setattr(measure, "catalog", lambda _backend="cpu": [workloads.SEED])
    # The seed's real timing decides nothing here: the check says "suspect" outright.
    beaten = RoofCheck(programs=(Above("seed_tanh_matmul", 3.0, 0.1),), programs_checked=1,
                       kernels=(), kernels_checked=0, causes=())
    monkeypatch.setattr(suspect_ceilings, "suspect", lambda _results: beaten)
    _build(tmp_path / "a")
    assert counting.calls == 1  # measured, cached
    _build(tmp_path / "b")
    assert counting.calls == 1  # reused; the flag not given, nothing measured again
    code, doc, _ = _build(tmp_path / "c", "--remeasure-if-suspect")
    assert code in (EXIT_OK, EXIT_PARTIAL) and counting.calls == 2
    assert doc["ceilings"]["origin"]["cached"] is False
    assert doc["ceilings"]["origin"]["notes"] == [
        "measured again in this run (--remeasure-if-suspect): 1 of 1 program ran faster than "
        "the cached ceilings allowed"]


def _double(x: Any) -> Any:
    return x * 2


def test_analyze_remeasure_is_checked() -> None:
    import numpy as np

    x = np.ones(8, dtype=np.float32)
    with pytest.raises(InputError, match=r"remeasure=True .* needs ceilings=True"):
        roofline_report.analyze(_double, x, remeasure=True)
    with pytest.raises(InputError, match="remeasure= must be True or False"):
        roofline_report.analyze(_double, x, ceilings=True, remeasure="yes")


@pytest.mark.slow
def test_analyze_measures_once_with_a_real_tiny_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ceilings_cache_folder: Path) -> None:
    """analyze(ceilings=True) twice: the real measurement (a tiny plan) is saved by the first
    and read back by the second, which does not measure; remeasure=True measures again."""
    import numpy as np

    from roofline_report.observe.ceilings import machine
    from roofline_report.observe.ceilings.plan import Plan
    from roofline_report.observe.ceilings.sampling import MiB

    tiny = Plan(matmul_sizes=(32,), matmul_max_call_s=1.0, matmul_dtypes=("float32",),
                array_bytes=1 * MiB, samples=3, min_sample_s=1e-3, sweep_samples=2,
                sweep_min_sample_s=5e-4, budget_s=0.1)
    real = machine.measure_ceilings
    calls: list[bool] = []

    def measure(**kwargs: Any) -> dict[str, Any]:
        calls.append(kwargs["quick"])
        return real(**{**kwargs, "plan": tiny})

    monkeypatch.setattr(machine, "measure_ceilings", measure)
    # A quiet machine, whatever the real one's load: no test depends on it.
    monkeypatch.setattr(load, "PROBE", QuietProbe())
    x = np.ones((16, 16), dtype=np.float32)
    roofline_report.analyze(_double, x, ceilings=True, out=tmp_path / "one")
    assert calls == [True]
    roofline_report.analyze(_double, x, ceilings=True, out=tmp_path / "two")
    assert calls == [True]
    roofline_report.analyze(_double, x, ceilings=True, remeasure=True, out=tmp_path / "three")
    assert calls == [True, True]
    docs = [json.loads((tmp_path / n / "results.json").read_text(encoding="utf-8"))
            for n in ("one", "two", "three")]
    assert [d["ceilings"]["origin"]["cached"] for d in docs] == [False, True, False]
    assert docs[1]["ceilings"]["compute"] == docs[0]["ceilings"]["compute"]
    md = (tmp_path / "two" / "report.md").read_text(encoding="utf-8")
    assert "analyze(..., remeasure=True) measures them again" in md
    files = sorted(p.name for p in (ceilings_cache_folder / "ceilings").iterdir())
    assert files == [cache.key_for(docs[0]["environment"], quick=True).filename]


# --------------------------------------------------------------------------- the report


def _with_origin(doc: dict[str, Any], run_at: str, origin: dict[str, Any] | None
                 ) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["generator"]["measured_at"] = run_at
    if origin is None:
        out["ceilings"].pop("origin", None)
    else:
        out["ceilings"]["origin"] = origin
    results_io.validate(out)
    return out


def _sentence(md: str) -> str:
    start = md.index("### Ceilings of this machine")
    return md[start:md.index("| ceiling |", start)]


@pytest.mark.slow
def test_the_report_says_the_ceilings_were_measured_in_the_run(
        fixture_doc: dict[str, Any]) -> None:
    md = views.render(_with_origin(fixture_doc, AT, None)).markdown
    assert "These ceilings were measured in this run." in _sentence(md)
    assert "cache" not in _sentence(md)
    measured = {"cached": False, "measured_at": AT, "key": "0123", "notes": []}
    assert views._ceilings_origin(analyse(_with_origin(fixture_doc, AT, measured))) == \
        ("These ceilings were measured in this run.", ())


CACHED = {"cached": True, "measured_at": AT, "key": "0123456789abcdef",
          "notes": ["the cached ceilings ceilings-full-x.json were ignored: not JSON"]}


@pytest.mark.slow
def test_the_report_says_when_cached_ceilings_were_measured(
        fixture_doc: dict[str, Any]) -> None:
    md = views.render(_with_origin(fixture_doc, "2026-12-04T09:00:00Z", CACHED)).markdown
    sentence = " ".join(_sentence(md).split())
    assert ("These ceilings were measured on 2026-12-01 at 08:38:41 UTC on this machine and "
            "reused from the ceilings cache (age 3 days as of this run); --remeasure measures "
            "them again.") in sentence
    assert "Ceilings cache: the cached ceilings ceilings-full-x.json were ignored: not JSON." \
        in sentence


@pytest.mark.parametrize("run_at, age", [
    ("2026-12-01T20:00:00Z", " (less than a day old as of this run)"),
    ("2026-12-02T08:38:41Z", " (age 1 day as of this run)"),
    ("2026-12-31T08:00:00Z", " (age 29 days as of this run)"),
    ("2026-11-30T08:00:00Z", ""),  # clocks that disagree: no age
])
def test_the_age_is_from_the_runs_own_date(run_at: str, age: str,
                                           fixture_doc: dict[str, Any]) -> None:
    """The age is from the ceilings' measured_at to the run's own (never the clock)."""
    doc = _with_origin(fixture_doc, run_at, CACHED)
    for origin in ("command line", "python"):
        doc["options"]["origin"] = origin
        again = "--remeasure" if origin == "command line" else "analyze(..., remeasure=True)"
        assert views._ceilings_origin(analyse(doc)) == (
            "These ceilings were measured on 2026-12-01 at 08:38:41 UTC on this machine and "
            f"reused from the ceilings cache{age}; {again} measures them again.",
            tuple(CACHED["notes"]))


def test_the_age_is_computed_by_the_analysis(fixture_doc: dict[str, Any]) -> None:
    origin = {"cached": True, "measured_at": AT, "key": "k", "notes": []}
    o = ceilings_origin(results_io.typed(_with_origin(fixture_doc, "2026-12-11T08:38:40Z", origin)))
    assert o is not None and o.cached and o.age_days == 9 and o.measured_at == AT
    # A run dated before its ceilings (clocks that disagree): no age.
    o = ceilings_origin(results_io.typed(_with_origin(fixture_doc, "2026-11-30T00:00:00Z", origin)))
    assert o is not None and o.age_days is None
    assert ceilings_origin(results_io.typed({**fixture_doc, "ceilings": {"available": False,
                                                                      "reason": "x"}})) is None
