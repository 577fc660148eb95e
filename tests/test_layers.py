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
#: and the entry points (the command lines, ``profile()``) orchestrate from above.
LAYERS: dict[str, int] = {
    # what everything may use: errors, kinds of numbers, the kernel patterns' names, plain
    # arithmetic, formats, the version, interrupts and the child processes they stop
    "errors": 0, "kinds": 0, "wire": 0, "tolerances": 0, "interrupts": 0, "quantiles": 0,
    "heap": 0, "version": 0, "children": 0, "progress": 0, "pattern_names": 0,
    "roofline": 0, "backends": 0, "units": 1, "text": 2, "preset_records": 2, "presets": 2,
    "networks": 3,
    "device_recognition": 3, "config": 3,
    # observations: the readers and the results document
    "hlo": 1, "traces": 1, "results": 3, "ingest": 4,
    # the model, then the words and figures
    "analysis": 5, "report": 6,
    # outputs and entry points
    "api": 7, "output": 7, "observe": 8, "cli": 9, "compare_cli": 9, "profile_cli": 9,
    "entry": 10, "__main__": 10, "__init__": 10,
}


def _part(module: str) -> str | None:
    """The part of the package a dotted module name belongs to (None outside it)."""
    parts = module.split(".")
    if parts[0] != "roofline_report":
        return None
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _module_names(package: Path) -> set[str]:
    """The dotted name of every module of ``package`` (a folder named ``roofline_report``),
    ``roofline_report.x`` for a package ``x/__init__.py``."""
    names = set()
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.add(".".join(parts))
    return names


def _runtime_imports(path: Path, modules: set[str], *, types: bool = False
                     ) -> list[tuple[int, str]]:
    """Imports that run (those under ``if TYPE_CHECKING:`` only name types), at module top or
    inside a function, each as the module it runs: ``from roofline_report.x import y`` is an
    import of ``roofline_report.x.y`` where that is a module of ``modules``, else of
    ``roofline_report.x`` (so ``from roofline_report import __version__`` imports the package's
    ``__init__``). With ``types``, the imports that only name types too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = set() if types else {
        id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
        and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.append((node.lineno, sub if sub in modules else node.module))
    return found


def layer_violations(package: Path) -> list[str]:
    """Every import that runs from a lower layer up to a higher one, as 'file:line imports x'."""
    modules = _module_names(package)
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        own = rel.split("/")[0] if "/" in rel else rel[:-3]
        for line, module in _runtime_imports(path, modules):
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
    (package / "__init__.py").write_text("__version__ = '0'\n")
    (package / "text.py").write_text("")
    (package / "analysis" / "model.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from roofline_report.report.format import n\n"       # up: analysis -> report
        "from roofline_report import text\n"                  # down: fine
        "if TYPE_CHECKING:\n    from roofline_report.report import views\n"  # types only
        "def version():\n    from roofline_report import __version__\n")  # up, to __init__
    (package / "traces" / "read.py").write_text("from roofline_report.analysis import stats\n")
    assert layer_violations(package) == [
        "analysis/model.py:2 imports roofline_report.report.format",
        "analysis/model.py:7 imports roofline_report",
        "traces/read.py:1 imports roofline_report.analysis"]


# --- no import cycle ---------------------------------------------------------------------------


def import_graph(package: Path, *, types: bool = False) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of the package it imports when it runs, at
    module top or inside a function (:func:`_runtime_imports`), with the packages that run
    first: importing ``a.b.c`` runs ``a/b/__init__.py`` before it (not the importer's own
    packages, which run before the importer itself, nor the top package's, which runs first of
    all). With ``types``, the imports that only name types (``if TYPE_CHECKING:``) too."""
    modules = _module_names(package)
    graph: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        edges: set[str] = set()
        for _, module in _runtime_imports(path, modules, types=types):
            while module and module not in modules:  # an attribute of a module: the module
                module = module.rpartition(".")[0]
            if not module or module == name:
                continue
            edges.add(module)
            dotted = module.split(".")
            for i in range(2, len(dotted)):
                parent = ".".join(dotted[:i])
                if not (name == parent or name.startswith(parent + ".")):
                    edges.add(parent)
        graph[name] = edges
    return graph


def import_cycles(package: Path, *, types: bool = False) -> list[list[str]]:
    """The modules that import one another round a cycle: each strongly connected group of
    more than one module of :func:`import_graph`, sorted (Tarjan's algorithm, iterative)."""
    graph = import_graph(package, types=types)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return sorted(groups)


def test_no_import_cycle() -> None:
    assert len(import_graph(PACKAGE)) > 100  # the modules were found
    assert import_cycles(PACKAGE) == []


def test_no_import_cycle_even_through_the_imports_that_name_types() -> None:
    """A module that names another's types under ``TYPE_CHECKING`` while that one imports it
    is a circle all the same to a reader: none is left."""
    assert import_cycles(PACKAGE, types=True) == []


def test_the_cycle_check_sees_a_cycle_closed_inside_a_function(tmp_path: Path) -> None:
    package = tmp_path / "roofline_report"
    (package / "hlo").mkdir(parents=True)
    (package / "ingest").mkdir()
    (package / "__init__.py").write_text("")
    (package / "hlo" / "__init__.py").write_text("")
    (package / "hlo" / "cost.py").write_text("from roofline_report.hlo.calls import n\n")
    (package / "hlo" / "calls.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "n = 1\n"
        "def f():\n    from roofline_report.hlo import cost\n"  # closes cost <-> calls
        "if TYPE_CHECKING:\n    from roofline_report.hlo.tree import T\n")  # types only
    (package / "hlo" / "tree.py").write_text("from roofline_report.hlo import calls\n")
    # counting the imports that name types, tree closes a circle with calls too
    assert import_cycles(package, types=True) == [
        ["roofline_report.hlo.calls", "roofline_report.hlo.cost", "roofline_report.hlo.tree"]]
    # ingest/__init__ imports read; read imports hlo.cost: no cycle, its own package runs first
    (package / "ingest" / "__init__.py").write_text("from roofline_report.ingest import read\n")
    (package / "ingest" / "read.py").write_text("import roofline_report.hlo.cost\n")
    assert import_cycles(package) == [["roofline_report.hlo.calls", "roofline_report.hlo.cost"]]
    # through a package's __init__, which runs before any module of the package
    (package / "hlo" / "__init__.py").write_text(
        "def load():\n    from roofline_report.ingest import read\n")
    assert import_cycles(package) == [
        ["roofline_report.hlo", "roofline_report.ingest", "roofline_report.ingest.read"],
        ["roofline_report.hlo.calls", "roofline_report.hlo.cost"]]
