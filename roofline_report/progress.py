"""Progress on stderr, for the command lines (no jax)."""

from __future__ import annotations

import sys
import time
from typing import IO

__all__ = ["Progress"]


class Progress:
    """Progress on stderr: one live line on a terminal, plain log lines otherwise."""

    def __init__(self, mode: str, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if self.stream.isatty() else "plain"
        self.mode = mode
        self.start = time.perf_counter()
        self._live = False

    def __call__(self, message: str) -> None:
        if self.mode == "none":
            return
        elapsed = time.perf_counter() - self.start
        line = f"[{elapsed:6.1f}s] {message}"
        if self.mode == "bar":
            self.stream.write("\r\033[K" + line[:120])
            self._live = True
        else:
            self.stream.write(f"roofline-report: {line}\n")
        self.stream.flush()

    def done(self) -> None:
        if self._live:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._live = False
