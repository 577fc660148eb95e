"""A pytest plugin that prints each failure's reason the moment its test ends.

pytest prints its tracebacks and its short summary only when the whole session ends, so a run
cut short by a time limit (a TPU machine's ten-minute calls) names its failures but not why.
Loaded with ``-p benchmarks.early_failures`` from the repository root (benchmarks/tpu_check.sh
does): after each failed or erroring test it writes one block, the test's id and the last
lines of its report, to the terminal at once.
"""

from __future__ import annotations

import pytest

LINES = 12  # the last lines of a report hold the assertion and where it failed


def reason(report: pytest.TestReport, lines: int = LINES) -> str:
    """The last ``lines`` non-empty lines of a failed report, as one block."""
    text = [line for line in report.longreprtext.splitlines() if line.strip()]
    return "\n".join(text[-lines:])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not report.failed:
        return
    when = "" if report.when == "call" else f" (in {report.when})"
    print(f"\n--- {report.nodeid}{when} failed:\n{reason(report)}\n---", flush=True)
