"""Each number is defined in one place (the README's table "computed in"), checked over the
package's source by its syntax tree: the definitions exist once, and no module computes a
quantile, a ridge or an error by other means."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "roofline_report"

#: A definition and the one module that holds it.
ONE_PLACE = {
    "quantile": "quantiles.py",
    "median": "quantiles.py",
    "own_time": "analysis/stats.py",
    "relative_error": "analysis/miss.py",
    "ridge": "roofline.py",
    "attainable": "roofline.py",
    "bound_at": "roofline.py",
    "binding": "roofline.py",
    "single_roof_seconds": "roofline.py",
    "roof_share": "analysis/hardware_roof.py",
    "kernel_roof": "analysis/headroom.py",
    "program_levers": "analysis/levers.py",
    "sharded_seconds": "analysis/study.py",
    "percent_text": "text.py",
}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(PACKAGE)), ast.parse(p.read_text(encoding="utf-8")))
            for p in sorted(PACKAGE.rglob("*.py"))]


def definitions(modules: list[tuple[str, ast.Module]], name: str) -> list[str]:
    """The modules that define a module-level function ``name``."""
    return [path for path, tree in modules for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name == name]


def other_statistics(modules: list[tuple[str, ast.Module]]) -> list[str]:
    """Uses of another library's median or quantile outside quantiles.py."""
    found = []
    for path, tree in modules:
        if path == "quantiles.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in (
                    "median", "quantile", "percentile", "nanmedian", "nanpercentile") \
                    and isinstance(node.value, ast.Name) \
                    and node.value.id in ("statistics", "np", "numpy"):
                found.append(f"{path}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_each_definition_is_in_its_one_place() -> None:
    modules = _modules()
    assert len(modules) > 100
    for name, home in ONE_PLACE.items():
        assert definitions(modules, name) == [home], name


def test_no_module_takes_a_median_or_quantile_by_other_means() -> None:
    assert other_statistics(_modules()) == []


def test_the_checks_catch_a_second_definition_and_a_stray_median() -> None:
    extra = ast.parse("import numpy as np\ndef ridge(p, b):\n    return np.median([p / b])\n")
    modules = [*_modules(), ("report/stray.py", extra)]
    assert definitions(modules, "ridge") == ["roofline.py", "report/stray.py"]
    assert other_statistics(modules) == ["report/stray.py:3 np.median"]
