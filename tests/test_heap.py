"""Free C heap pages are given back where the C library can (glibc's malloc_trim)."""

from __future__ import annotations

import platform
import sys

from roofline_report.heap import release_free_memory


def test_free_pages_are_given_back_with_glibc() -> None:
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    blocks = [bytearray(1 << 16) for _ in range(256)]  # heap memory, then freed
    del blocks
    assert release_free_memory() is glibc
