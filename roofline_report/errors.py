"""Error types that the command line turns into exit codes.

* :class:`InputError` -- bad user input (flags, config files, saved JSON, user workloads): one line
  on stderr, exit code 2, nothing written.
* Any other exception is an internal failure: exit code 1 with a short message (traceback with
  ``--debug``).
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input from the user. The message is one line that names the input and the problem."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INPUT = 2
EXIT_PARTIAL = 3  # the report was built, but some measurement was skipped (said in the report)
