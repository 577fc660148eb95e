"""The rendered report in a real browser: headless Debian chromium driven by Playwright.

One browser per module; the page is loaded four times (light and dark colour scheme, 1280 px and
375 px wide), each load watched for console messages and network requests, and screenshotted into
``.test-artifacts/browser/`` for a person to look at. Skipped when chromium or the ``playwright``
package is missing; never runs ``playwright install`` (it would download a browser).
"""

from __future__ import annotations

import re
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal

import pytest

# Each test here loads a whole report in a browser: left out by -m "not slow" too.
pytestmark = [pytest.mark.browser, pytest.mark.slow]

playwright_sync = pytest.importorskip(
    "playwright.sync_api",
    reason="the 'playwright' package is not installed (pip install -e .[test])")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("chromium is not installed (Debian: apt-get install chromium; `make test` does it "
                "as root)", allow_module_level=True)

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-quic"]
SHOTS = Path(__file__).resolve().parent.parent / ".test-artifacts" / "browser"
PAGE_TIMEOUT_MS = 180_000
Scheme = Literal["light", "dark"]


@dataclass(frozen=True)
class Variant:
    scheme: Scheme
    width: int

    @property
    def name(self) -> str:
        return f"{self.scheme}-{self.width}"


VARIANTS = [Variant(s, w) for s in ("light", "dark") for w in (1280, 375)]
DESKTOP = VARIANTS[0]


@dataclass
class Load:
    """One page load: the live page and what it did while loading."""

    page: Any  # playwright.sync_api.Page
    url: str
    console: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot: Path | None = None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium for the whole module (launch failures fail, they do not skip)."""
    with playwright_sync.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def loads(browser: Any, rendered_report: Path) -> Iterator[dict[str, Load]]:
    """report.html loaded once per variant, each screenshotted (full page) into SHOTS."""
    report = rendered_report / "report.html"
    url = report.as_uri()
    SHOTS.mkdir(parents=True, exist_ok=True)
    contexts = []
    out: dict[str, Load] = {}
    for v in VARIANTS:
        ctx = browser.new_context(viewport={"width": v.width, "height": 900},
                                  color_scheme=v.scheme, device_scale_factor=1)
        # A loaded 2-core machine can take longer than Playwright's 30 s default to load and
        # screenshot a long page: the tests set their own limits.
        ctx.set_default_timeout(PAGE_TIMEOUT_MS)
        ctx.set_default_navigation_timeout(PAGE_TIMEOUT_MS)
        contexts.append(ctx)
        page = ctx.new_page()
        load = Load(page=page, url=url)

        def route(r: Any, load: Load = load) -> None:
            # Anything but the file itself (or an inline data: URI) is recorded, then refused,
            # so a stray fetch can neither pass nor hang the test.
            if r.request.url in (load.url,) or r.request.url.startswith("data:"):
                r.continue_()
            else:
                r.abort()

        ctx.route("**/*", route)
        page.on("request", lambda req, load=load: load.requests.append(req.url))
        page.on("console", lambda msg, load=load: load.console.append(f"{msg.type}: {msg.text}")
                if msg.type in ("error", "warning") else None)
        page.on("pageerror", lambda exc, load=load: load.page_errors.append(str(exc)))
        page.goto(url, wait_until="load")
        shot = SHOTS / f"report-{v.name}.png"
        page.screenshot(path=str(shot), full_page=True)
        load.screenshot = shot
        out[v.name] = load
    try:
        yield out
    finally:
        for ctx in contexts:
            ctx.close()


def _ids(vs: list[Variant]) -> list[str]:
    return [v.name for v in vs]


# --- every load ------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids(VARIANTS))
def test_loads_without_console_errors_or_warnings(loads: dict[str, Load], variant: Variant) -> None:
    load = loads[variant.name]
    assert load.console == [] and load.page_errors == [], (load.console, load.page_errors)


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids(VARIANTS))
def test_requests_nothing_but_the_file_itself(loads: dict[str, Load], variant: Variant) -> None:
    load = loads[variant.name]
    assert load.url in load.requests, "the page load itself was not observed"
    others = [u for u in load.requests if u != load.url and not u.startswith("data:")]
    assert others == [], f"the report requested other resources: {others}"


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids(VARIANTS))
def test_no_horizontal_overflow(loads: dict[str, Load], variant: Variant) -> None:
    page = loads[variant.name].page
    widths = page.evaluate("""() => ({
        doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,
        viewport: window.innerWidth})""")
    assert widths["viewport"] == variant.width
    assert widths["doc"] <= variant.width + 1, widths
    assert widths["body"] <= variant.width + 1, widths


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids(VARIANTS))
def test_figures_render_inside_the_viewport(loads: dict[str, Load], variant: Variant) -> None:
    boxes = loads[variant.name].page.evaluate("""() => Array.from(
        document.querySelectorAll('svg'), s => {
            const r = s.getBoundingClientRect();
            return {id: s.closest('figure')?.id ?? null, w: r.width, h: r.height,
                    left: r.left, right: r.right};
        })""")
    assert boxes, "the page has no inline SVG"
    for b in boxes:
        assert b["id"] is not None, f"an SVG outside any <figure>: {b}"
        assert b["w"] > 0 and b["h"] > 0, f"figure {b['id']} has an empty box: {b}"
        assert b["left"] >= -1 and b["right"] <= variant.width + 1, f"{b['id']} is cut off: {b}"


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids(VARIANTS))
def test_screenshot_written(loads: dict[str, Load], variant: Variant) -> None:
    shot = loads[variant.name].screenshot
    assert shot is not None and shot.is_file()
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == variant.width and height >= 900, (width, height)


# --- colour schemes --------------------------------------------------------------------------

_CONTRAST_JS = """(selectors) => {
    const rgb = s => s.match(/[\\d.]+/g).slice(0, 4).map(Number);
    const lum = ([r, g, b]) => {
        const f = c => {
            c /= 255;
            return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = el => {
        for (let e = el; e; e = e.parentElement) {
            const c = rgb(getComputedStyle(e).backgroundColor);
            if (c.length < 4 || c[3] > 0) return c;
        }
        return [255, 255, 255];
    };
    // Text a reader can reveal counts too: open every <details> while measuring.
    const closed = Array.from(document.querySelectorAll('details:not([open])'));
    closed.forEach(d => { d.open = true; });
    const out = [];
    for (const sel of selectors) {
        for (const el of document.querySelectorAll(sel)) {
            if (!el.checkVisibility()) continue;  // not rendered (print-only, hidden)
            const fg = lum(rgb(getComputedStyle(el).color)), bg = lum(background(el));
            const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
            out.push({sel, text: el.textContent.trim().slice(0, 40), ratio,
                      fg: getComputedStyle(el).color, bg: background(el).join(',')});
        }
    }
    closed.forEach(d => { d.open = false; });
    return {body: lum(background(document.body)), items: out};
}"""

TEXT_SELECTORS = ["body", "p.lede", "figcaption", "a", "th", "td", "code", ".kind", ".banner",
                  ".ok", ".bad", ".warn", "footer", "summary"]


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v.width == 1280],
                         ids=_ids([v for v in VARIANTS if v.width == 1280]))
def test_colour_scheme_applies_and_text_is_legible(loads: dict[str, Load],
                                                    variant: Variant) -> None:
    """The emulated scheme reaches the page, and text meets WCAG AA contrast (4.5:1) on it."""
    got = loads[variant.name].page.evaluate(_CONTRAST_JS, TEXT_SELECTORS)
    if variant.scheme == "dark":
        assert got["body"] < 0.2, f"dark scheme, but the background is light: {got['body']}"
    else:
        assert got["body"] > 0.8, f"light scheme, but the background is dark: {got['body']}"
    poor = sorted({(i["sel"], i["text"], round(i["ratio"], 2), i["fg"], i["bg"])
                   for i in got["items"] if i["ratio"] < 4.5})
    assert got["items"], "no text element was found to check"
    assert poor == [], f"text below 4.5:1 contrast in the {variant.scheme} scheme: {poor[:10]}"


# --- document structure (desktop, light) -----------------------------------------------------


def test_every_figure_has_a_caption_and_one_svg(loads: dict[str, Load]) -> None:
    figs = loads[DESKTOP.name].page.evaluate("""() => Array.from(
        document.querySelectorAll('figure'), f => ({
            id: f.id, svgs: f.querySelectorAll('svg').length,
            caption: f.querySelector(':scope > figcaption')?.textContent.trim() ?? ''}))""")
    assert figs, "the page has no <figure>"
    for f in figs:
        assert f["svgs"] == 1, f
        assert len(f["caption"]) > 10, f"figure {f['id']} has no real caption: {f}"


def test_every_svg_has_title_and_desc(loads: dict[str, Load]) -> None:
    svgs = loads[DESKTOP.name].page.evaluate("""() => Array.from(
        document.querySelectorAll('svg'), s => {
            const child = tag => Array.from(s.children).find(c => c.localName === tag);
            const labelled = (s.getAttribute('aria-labelledby') || '')
                .split(/\\s+/).filter(Boolean);
            return {
                id: s.closest('figure')?.id ?? null,
                title: child('title')?.textContent.trim() ?? '',
                desc: child('desc')?.textContent.trim() ?? '',
                role: s.getAttribute('role'),
                dangling: labelled.filter(id => !document.getElementById(id)),
            };
        })""")
    assert svgs
    for s in svgs:
        assert s["title"], f"SVG in {s['id']} has no <title>"
        assert s["desc"], f"SVG in {s['id']} has no <desc>"
        assert s["role"] == "img", s
        assert s["dangling"] == [], f"aria-labelledby names missing ids: {s}"


def test_svg_references_stay_inside_their_figure(loads: dict[str, Load]) -> None:
    """<use href="#id"> and url(#id) resolve, and to an element of the same SVG: inlined
    figures must not borrow each other's markers or clip paths."""
    bad = loads[DESKTOP.name].page.evaluate("""() => {
        const out = [];
        for (const svg of document.querySelectorAll('svg')) {
            const refs = [];
            for (const el of svg.querySelectorAll('*')) {
                const h = el.getAttribute('href') ?? el.getAttribute('xlink:href');
                if (h && h.startsWith('#')) refs.push(h.slice(1));
                for (const a of ['clip-path', 'mask', 'fill', 'stroke', 'style']) {
                    const v = el.getAttribute(a) || '';
                    for (const m of v.matchAll(/url\\(#([^)]+)\\)/g)) refs.push(m[1]);
                }
            }
            for (const id of refs) {
                const target = document.getElementById(id);
                if (!target || target.closest('svg') !== svg)
                    out.push({figure: svg.closest('figure')?.id, id, found: !!target});
            }
        }
        return out;
    }""")
    assert bad == [], f"SVG references outside their own figure: {bad[:10]}"


def test_inline_figures_match_the_figure_files(loads: dict[str, Load],
                                               rendered_report: Path) -> None:
    ids = loads[DESKTOP.name].page.evaluate(
        "() => Array.from(document.querySelectorAll('figure'), f => f.id)")
    files = sorted(p.stem for p in (rendered_report / "figures").glob("*.svg"))
    assert sorted(i.removeprefix("fig-") for i in ids) == files


def test_contents_links_resolve(loads: dict[str, Load]) -> None:
    links = loads[DESKTOP.name].page.evaluate("""() => Array.from(
        document.querySelectorAll('a[href^="#"]'), a => ({
            href: a.getAttribute('href'), toc: !!a.closest('nav'),
            found: !!document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)))
        }))""")
    toc = [a for a in links if a["toc"]]
    assert len(toc) >= 5, f"the table of contents has too few links: {toc}"
    missing = [a["href"] for a in links if not a["found"]]
    assert missing == [], f"in-page links to ids that do not exist: {missing}"


def test_contents_numbers_match_section_numbers(loads: dict[str, Load]) -> None:
    """The contents list is an <ol>: where a heading carries a number, it is the same one."""
    items = loads[DESKTOP.name].page.evaluate("""() => Array.from(
        document.querySelectorAll('nav ol > li > a[href^="#"]'), (a, i) => {
            const target = document.getElementById(a.getAttribute('href').slice(1));
            const h = target?.querySelector('h2, h3');
            return {ordinal: i + 1, href: a.getAttribute('href'),
                    heading: h ? h.textContent.trim() : ''};
        })""")
    numbered = [(i["ordinal"], i["href"], i["heading"]) for i in items
                if re.match(r"\d+\.\s", i["heading"])]
    assert numbered, "no section heading is numbered"
    wrong = [(n, href, h) for n, href, h in numbered if not h.startswith(f"{n}.")]
    assert wrong == [], f"contents number vs section heading: {wrong}"


def test_contents_link_scrolls_to_its_section(loads: dict[str, Load]) -> None:
    page = loads[DESKTOP.name].page
    href = page.evaluate("() => Array.from(document.querySelectorAll('nav a[href^=\"#\"]'))"
                         ".at(0).getAttribute('href')")
    page.click(f'nav a[href="{href}"]')
    top = page.evaluate(f"() => document.getElementById({href[1:]!r}).getBoundingClientRect().top")
    page.evaluate("() => window.scrollTo(0, 0)")
    assert abs(top) < 5, f"clicking {href} left its section at y={top}"


def test_solution_is_closed_by_default(loads: dict[str, Load]) -> None:
    page = loads[DESKTOP.name].page
    state = page.evaluate("""() => Array.from(
        document.querySelectorAll('#exercise details'), d => ({
            open: d.open,
            summary: d.querySelector('summary')?.textContent ?? '',
            hidden: Array.from(d.children).filter(c => c.localName !== 'summary')
                         .every(c => !c.checkVisibility())}))""")
    assert len(state) == 1, f"expected one solution <details> in #exercise: {state}"
    assert "solution" in state[0]["summary"].lower(), state
    assert state[0]["open"] is False and state[0]["hidden"] is True, state


class _ScriptFinder(HTMLParser):
    """Collects anything that would run script: <script>, on* handlers, javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.found.append("<script>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}>")
            if value and value.strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value[:30]}>")


def test_the_page_needs_no_script(loads: dict[str, Load], rendered_report: Path) -> None:
    count = loads[DESKTOP.name].page.evaluate("() => document.scripts.length")
    assert count == 0
    finder = _ScriptFinder()
    finder.feed((rendered_report / "report.html").read_text(encoding="utf-8"))
    assert finder.found == [], finder.found


def test_a_300_character_name_does_not_widen_the_page(browser: Any, tmp_path: Path) -> None:
    """A program named by a 300-character identifier wraps in the contents and the headings;
    the page stays as wide as the window (tables and code scroll inside themselves)."""
    from roofline_report import cli
    from roofline_report.results import io as results

    data = results.load(Path(__file__).resolve().parent / "fixtures" / "cpu_results.json")
    name = "a_very_long_program_name_" * 12
    data["workloads"][1].update(name=f"user:{name}", title=name, user=True)
    saved = tmp_path / "results.json"
    saved.write_text(results.dumps(data), encoding="utf-8")
    assert cli.main(["--from-json", str(saved), "--out", str(tmp_path / "out")]) in (0, 3)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(PAGE_TIMEOUT_MS)
    ctx.set_default_navigation_timeout(PAGE_TIMEOUT_MS)
    try:
        page = ctx.new_page()
        page.goto((tmp_path / "out" / "report.html").as_uri(), wait_until="load")
        assert name[:40] in page.content()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
    finally:
        ctx.close()
