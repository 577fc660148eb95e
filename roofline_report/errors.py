"""Error types that the command line turns into exit codes.

* :class:`InputError` -- bad user input (flags, config files, saved JSON, user workloads): one line
  on stderr, exit code 2, nothing written.
* Any other exception is an internal failure: exit code 1 with a short message (traceback with
  ``--debug``).
"""

from __future__ import annotations

import re


class InputError(Exception):
    """Bad input from the user. The message is one line that names the input and the problem."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INPUT = 2
EXIT_PARTIAL = 3  # the report was built, but some measurement was skipped (said in the report)
EXIT_REGRESSION = 4  # compare --fail-if: the report was built and a condition fired


# An absolute path: a leading "/" (or a drive letter) not preceded by a word character, so
# units such as GB/s or FLOP/B and ratios such as 3/4 are left alone.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~/<>)\]}-])(?:[A-Za-z]:)?[/\\]+(?:[\w.@+~-]+[/\\]?)+")


def scrub_paths(text: str) -> str:
    """Replace absolute paths by ``<path>``, keeping a file name with an extension
    (``/tmp/x/weights.npy`` -> ``<path>/weights.npy``), so that no user or host name that a
    path may hold reaches a published report."""

    def repl(m: re.Match[str]) -> str:
        name = re.split(r"[/\\]", m.group(0).rstrip("/\\"))[-1]
        return f"<path>/{name}" if "." in name.strip(".") else "<path>"

    return _ABSOLUTE_PATH.sub(repl, text)


def first_line(exc: BaseException) -> str:
    """The first line of the exception's message, surrounding space removed ("" for none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def reason(exc: BaseException, limit: int = 300) -> str:
    """One line for a failure, fit to publish: the exception's type and first line, paths
    scrubbed, at most ``limit`` characters."""
    first = first_line(exc)
    out = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return scrub_paths(out)[:limit]
