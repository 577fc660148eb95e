"""Only observe/ imports jax: the readers of HLO, traces and results, the analysis and the report
import neither jax nor the measuring package, at module top or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "roofline_report"
READERS = ("hlo", "traces", "ingest", "analysis", "report", "results")


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def _forbidden(module: str) -> bool:
    return module == "jax" or module.startswith(("jax.", "roofline_report.observe"))


def test_only_observe_imports_jax() -> None:
    files = [path for reader in READERS for path in sorted((PACKAGE / reader).rglob("*.py"))]
    assert len(files) > 50  # the packages were found
    offending = [f"{path.relative_to(PACKAGE)}:{line} imports {module}"
                 for path in files for line, module in _imports(path) if _forbidden(module)]
    assert offending == []


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from jax.extend.mlir import ir\n    import jaxlib\n")
    assert [m for _, m in _imports(probe) if _forbidden(m)] == ["jax.extend.mlir"]
