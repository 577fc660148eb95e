"""A workload's name of any length and in any alphabet gives a working report: file names and
anchors are derived from it with one bounded rule (:func:`roofline_report.report.meta.name_slug`),
its text is escaped in HTML and Markdown, and a name that cannot be printed is refused before
anything is measured."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from roofline_report import cli
from roofline_report.config import loads_config, name_problem
from roofline_report.errors import EXIT_INPUT, InputError
from roofline_report.report import meta
from roofline_report.report.markdown import escape as md_escape
from roofline_report.results import io as results

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "cpu_results.json"

#: Names in other alphabets, right-to-left scripts, emoji, and HTML/Markdown punctuation.
ODD_NAMES = ("行列積のテスト", "שכבה ראשונה", "طبقة الانتباه", "🚀 fast path 🔥",
             "<b>bold</b> & *stars* | [link](x) `tick`", "Ünïcødé – naïve")
SLUG = re.compile(r"[A-Za-z0-9_-]+")


# --- the rule -------------------------------------------------------------------------------


def test_short_plain_names_are_kept_and_known_anchors_do_not_move() -> None:
    assert meta.workload_anchor("matmul") == "w-matmul"
    assert meta.workload_anchor("matmul_bf16") == "w-matmul_bf16"
    digest = hashlib.sha1(b"scaled matmul").hexdigest()[:6]
    assert meta.workload_anchor("scaled matmul") == f"w-scaled-matmul-{digest}"
    assert meta.figure_name("kernels", "seed_tanh_matmul") == "kernels_seed_tanh_matmul"


@pytest.mark.parametrize("name", ["L" * 260, "x" * 5000, "a b" * 3000, *ODD_NAMES, "...",
                                  "user:" + "名" * 400, "L" * meta.SLUG_CHARS,
                                  "L" * (meta.SLUG_CHARS + 1)])
def test_every_name_gives_a_short_safe_slug(name: str) -> None:
    slug = meta.name_slug(name)
    assert SLUG.fullmatch(slug), slug
    assert 1 <= len(slug) <= meta.SLUG_CHARS + 7
    assert meta.figure_name("kernels", name) == f"kernels_{slug}"
    assert meta.name_slug(name) == slug  # the same in every run
    anchor = meta.workload_anchor(name)
    assert anchor == f"w-{meta.anchor_slug(name)}" and not any(ch.isspace() for ch in anchor)
    assert len(anchor) <= 2 + meta.SLUG_CHARS + 7
    if name.isascii():
        assert anchor == f"w-{slug}"  # an ASCII name's anchor is its file name's slug


def test_long_names_that_share_a_beginning_get_different_slugs() -> None:
    names = ["L" * 300 + "a", "L" * 300 + "b", "l" * 301, *ODD_NAMES, "行列積", "行列"]
    slugs = [meta.name_slug(x) for x in names]
    assert len(set(slugs)) == len(slugs)


def test_a_name_in_another_alphabet_keeps_its_letters_in_its_anchor() -> None:
    """File names stay ASCII (the name's digest); an anchor keeps the name's letters."""
    digest = hashlib.sha1("行列積".encode()).hexdigest()[:6]
    assert meta.name_slug("行列積") == digest
    assert meta.workload_anchor("行列積") == f"w-行列積-{digest}"
    digest = hashlib.sha1("Café layer".encode()).hexdigest()[:6]
    assert meta.workload_anchor("Café layer") == f"w-café-layer-{digest}"


# --- names that cannot be printed: refused early ----------------------------------------------


@pytest.mark.parametrize(("name", "fragment"), [
    ("", "must be a non-empty string"), ("   ", "must be a non-empty string"),
    (7, "must be a non-empty string"), ("two\nlines", "U+000A"), ("nul\x00", "U+0000"),
    ("bell\x07", "U+0007"), ("half \ud800", "lone surrogate"),
])
def test_a_name_that_cannot_be_printed_is_refused(name: object, fragment: str) -> None:
    why = name_problem(name)
    assert why is not None and fragment in why


@pytest.mark.parametrize("name", ["L" * 5000, *ODD_NAMES, "tab\u00a0space", "zero\u200bwidth"])
def test_any_length_and_alphabet_is_a_name(name: str) -> None:
    assert name_problem(name) is None


def test_a_config_name_with_a_control_character_is_refused() -> None:
    text = ('[[workload]]\nname = "two\\nlines"\nfunction = "examples.workloads:mlp"\n'
            'args = [{ shape = [4, 4], dtype = "float32" }]\n')
    with pytest.raises(InputError, match=r"w\.toml: workload .*'name' must be one line"):
        loads_config(text, source="w.toml")


# --- through --from-json ----------------------------------------------------------------------


def _with_user_names(names: tuple[str, ...]) -> dict[str, Any]:
    """The fixture with its first workloads renamed as a user's programs of these names (a
    user's program has a per-kernel figure named after it)."""
    data = results.load(FIXTURE)
    for i, name in enumerate(names, 1):
        w = data["workloads"][i]
        w.update(name=f"user:{name}", title=name, user=True)
    results.validate(data)
    return data


def _render(data: dict[str, Any], folder: Path, capsys: pytest.CaptureFixture[str],
            file_name: str = "results.json") -> Path:
    saved = folder / file_name
    folder.mkdir(parents=True, exist_ok=True)
    saved.write_text(results.dumps(data), encoding="utf-8")
    out = folder / "out"
    code = cli.main(["--from-json", str(saved), "--out", str(out)])
    err = capsys.readouterr().err
    assert code in (0, 3), err
    assert "Glyph" not in err and "Warning" not in err  # no font warnings for other scripts
    return out


def _figure_files(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "figures").iterdir())


@pytest.mark.slow
def test_from_json_with_a_5000_character_name(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    name = "L" * 5000
    out = _render(_with_user_names((name,)), tmp_path / "long", capsys)
    expected = f"{meta.figure_name('kernels', 'user:' + name)}.svg"
    assert expected in _figure_files(out)
    assert max(len(f) for f in _figure_files(out)) <= len("kernels_") + meta.SLUG_CHARS + 11
    html = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert name in html and name in md  # the title is shown whole
    ids = re.findall(r'id="(w-[^"]*)"', html)
    assert f'w-{meta.name_slug("user:" + name)}' in ids
    assert max(len(i) for i in ids) <= meta.SLUG_CHARS + 20  # with suffixes such as -kernels
    assert f"figures/{expected}" in md


@pytest.mark.slow
def test_from_json_of_a_file_with_a_long_name(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The results file's own name may be as long as the file system allows."""
    out = _render(results.load(FIXTURE), tmp_path / ("r" * 200), capsys,
                  file_name="results-" + "x" * 230 + ".json")
    assert (out / "report.html").is_file()


@pytest.mark.slow
def test_from_json_with_names_in_other_alphabets(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = _render(_with_user_names(ODD_NAMES), tmp_path / "odd", capsys)
    figures = _figure_files(out)
    html = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    for name in ODD_NAMES:
        assert f"{meta.figure_name('kernels', 'user:' + name)}.svg" in figures
        assert f'id="{meta.workload_anchor("user:" + name)}"' in html
    # Text in the page is escaped: HTML's and Markdown's punctuation is shown, not obeyed.
    odd = ODD_NAMES[4]
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; *stars* | [link](x) `tick`" in html
    assert "<b>bold</b>" not in html
    assert md_escape(odd) in md and odd not in md
    for name in (*ODD_NAMES[:4], ODD_NAMES[5]):
        assert name in html and md_escape(name) in md
    # The figure keeps the name as text (the reader's fonts draw it), escaped for XML.
    svg = (out / "figures" / f"{meta.figure_name('kernels', 'user:' + ODD_NAMES[0])}.svg"
           ).read_text(encoding="utf-8")
    assert ODD_NAMES[0] in svg


def test_duplicate_names_are_refused_by_from_json(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data["workloads"][2]["name"] = data["workloads"][1]["name"]
    saved = tmp_path / "dup.json"
    saved.write_text(json.dumps(data), encoding="utf-8")
    assert cli.main(["--from-json", str(saved), "--out", str(tmp_path / "out")]) == EXIT_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f'error: {saved}: workloads[2].name "matmul" is also the name of '
                   "workloads[1]; workload names are unique in a run"]
    assert not (tmp_path / "out").exists()


# --- through analyze() ------------------------------------------------------------------------


def _tanh_layer(x: Any, w: Any) -> Any:
    import jax.numpy as jnp

    return jnp.tanh(x @ w)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["L" * 260, "行列積 🚀 שכבה"])
def test_analyze_with_a_long_or_foreign_name_writes_its_report(name: str, tmp_path: Path
                                                               ) -> None:
    pytest.importorskip("jax")
    import numpy as np

    import roofline_report

    x = np.ones((16, 16), np.float32)
    out = tmp_path / "report"
    record = roofline_report.analyze(_tanh_layer, x, x, name=name, out=out).record
    assert record["title"] == name
    figure = out / "figures" / f"{meta.figure_name('kernels', record['name'])}.svg"
    assert figure.is_file()
    assert name in (out / "report.html").read_text(encoding="utf-8")
    assert md_escape(name) in (out / "report.md").read_text(encoding="utf-8")


def test_analyze_refuses_a_name_with_a_newline_before_measuring(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jax")
    import numpy as np

    import roofline_report
    from roofline_report.observe import run as measure

    def never(*_a: object, **_k: object) -> None:
        raise AssertionError("measured a workload whose name was refused")

    monkeypatch.setattr(measure, "run", never)
    monkeypatch.setattr(measure, "measure_workload", never)
    x = np.ones((4, 4), np.float32)
    with pytest.raises(InputError, match=r"analyze\(\): name= must be one line"):
        roofline_report.analyze(_tanh_layer, x, x, name="my\nlayer", out=tmp_path / "r")
    assert not (tmp_path / "r").exists()
