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


# --- imports run one way -----------------------------------------------------------------------

#: Each part of the package and its layer: a module may import its own part and parts of lower
#: layers only. Observations flow up: the readers (hlo, traces) and results below the analysis,
#: the analysis below the report, the report below the outputs; the measuring side (observe)
#: and the trace reader's entry points orchestrate from above.
LAYERS: dict[str, int] = {
    # what everything may use: errors, kinds of numbers, plain arithmetic, formats
    "errors": 0, "kinds": 0, "wire": 0, "tolerances": 0, "interrupts": 0, "quantiles": 0,
    "heap": 0,
    "roofline": 0, "backends": 0, "units": 1, "text": 2, "preset_records": 2, "presets": 2,
    "networks": 3,
    "device_recognition": 3, "config": 3,
    # observations: the readers and the results document
    "hlo": 1, "traces": 1, "results": 3, "ingest": 4,
    # the model, then the words and figures
    "analysis": 5, "report": 6,
    # outputs and entry points
    "api": 7, "output": 7, "observe": 8, "cli": 9, "compare_cli": 9, "entry": 10, "__main__": 10,
    "__init__": 10,
}
#: Modules that stand at another layer than their part: the trace reader's entry points
#: (``profile()`` and its command line) write a report, as the command line does.
ENTRY_POINTS = {"ingest/__init__.py": "cli", "ingest/cli.py": "cli"}


def _part(module: str) -> str | None:
    """The part of the package a dotted module name belongs to (None outside it)."""
    parts = module.split(".")
    if parts[0] != "roofline_report":
        return None
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    """Imports that run (those under ``if TYPE_CHECKING:`` only name types), with
    ``from roofline_report import x`` read as an import of ``roofline_report.x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "roofline_report":
                found += [(node.lineno, f"roofline_report.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def layer_violations(package: Path) -> list[str]:
    """Every import that runs from a lower layer up to a higher one, as 'file:line imports x'."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        own = ENTRY_POINTS.get(rel) or (rel.split("/")[0] if "/" in rel else rel[:-3])
        for line, module in _runtime_imports(path):
            part = _part(module)
            if part is None or part == own or part not in LAYERS:
                continue
            if LAYERS[part] > LAYERS[own]:
                out.append(f"{rel}:{line} imports {module}")
    return out


def test_imports_run_one_way() -> None:
    assert set(LAYERS) >= {p.name for p in PACKAGE.iterdir() if p.is_dir()
                           and (p / "__init__.py").exists()}
    assert set(LAYERS) >= {p.stem for p in PACKAGE.glob("*.py")}  # every part has its layer
    assert layer_violations(PACKAGE) == []


def test_the_layer_check_sees_an_import_running_up(tmp_path: Path) -> None:
    package = tmp_path / "roofline_report"
    (package / "analysis").mkdir(parents=True)
    (package / "traces").mkdir()
    (package / "analysis" / "model.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from roofline_report.report.format import n\n"       # up: analysis -> report
        "from roofline_report import text\n"                  # down: fine
        "if TYPE_CHECKING:\n    from roofline_report.report import views\n")  # types only
    (package / "traces" / "read.py").write_text("from roofline_report.analysis import stats\n")
    assert layer_violations(package) == [
        "analysis/model.py:2 imports roofline_report.report.format",
        "traces/read.py:1 imports roofline_report.analysis"]
