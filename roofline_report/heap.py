"""Giving the C heap's free pages back to the operating system (no jax).

Reading a 100 MB trace parses it with the ``protobuf`` package's C backend into about 260 MB of
arena blocks, beside the file's 100 MB of bytes. Once the trace is decoded both are freed, but
glibc's ``malloc`` keeps most of those pages (holes below blocks still in use), while the Python
objects built next come from other pages (Python's own small-object arenas): the process's peak
memory grew by what it had already freed (1.46 GB for that trace's profile; 1.29 GB with the
pages given back). :func:`release_free_memory` asks glibc to give them back
(``malloc_trim(0)``, glibc's ``malloc.h``); with another C library it does nothing.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import cache

__all__ = ["release_free_memory"]


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the symbols of the process, its C library's among them
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)  # glibc only (not musl)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    function: Callable[[int], int] = trim
    return function


def release_free_memory() -> bool:
    """Give the C heap's free pages back to the operating system; False where the C library
    cannot (not glibc)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
