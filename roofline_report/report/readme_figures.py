"""Regenerate the README's figures in figures/ from the committed CPU fixture (no jax).

    python -m roofline_report.report.readme_figures [--check]

With --check, exit 1 if a figure in figures/ differs from what the fixture renders (the test
suite runs this check, so the README never shows stale figures).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from roofline_report.report import views as render
from roofline_report.results import io as results

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "cpu_results.json"
FIGURES = ROOT / "figures"
README_FIGURES = ("seed_roofline", "measured_roofline")


def expected() -> dict[str, str]:
    """The README's figures as the fixture renders them: name -> SVG text."""
    rendered = render.render(results.load(FIXTURE))
    return {name: rendered.figures[name] for name in README_FIGURES}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = args == ["--check"]
    if args and not check:
        print("usage: python -m roofline_report.report.readme_figures [--check]", file=sys.stderr)
        return 2
    stale = []
    for name, svg in expected().items():
        path = FIGURES / f"{name}.svg"
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == svg:
            continue
        if check:
            stale.append(path.name)
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(svg, encoding="utf-8", newline="\n")
            print(f"wrote figures/{path.name}", file=sys.stderr)
    if stale:
        print(f"stale README figures: {', '.join(stale)}; run "
              "python -m roofline_report.report.readme_figures", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
