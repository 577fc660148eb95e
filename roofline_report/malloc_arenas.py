"""glibc's malloc arenas: one for each thread of a measuring process (no jax).

glibc gives each thread that allocates an arena of its own, up to eight per core (sixteen on a
2-core machine), and past that limit a thread's first allocation makes it share an arena with
another. jax's CPU client runs more threads than that on a small machine (a measuring process
held 19 on 2 cores), so which threads share an arena is settled by the order in which they first
allocate, and it differs from one run to the next. Where the thread that calls a program and the
one that runs it share one, each call's buffers contend for that arena's lock: on a 2-core
machine a 4 kB elementwise program's call read 6 µs in some runs and 12 to 18 µs in others, a
bimodal smallest-call time that decided whether a build's smallest programs were predicted well.
With the limit raised (``MALLOC_ARENA_MAX=64`` in the environment) every run read 6 µs.

glibc fixes its limit once, when a process makes its ninth arena, so ``mallopt(M_ARENA_MAX)``
holds only if it comes before then: the entry points call :func:`widen` first, before numpy or
jax start a thread. The variable is set in the environment too, so that the child processes of
a build (the sharded measurement) start with the same limit. A limit the user set
(``MALLOC_ARENA_MAX`` already in the environment) is kept. Elsewhere (another C library, no
``mallopt``) nothing changes.
"""

from __future__ import annotations

import os
import sys

#: The variable glibc reads at start-up, and the limit this process asks for.
VARIABLE = "MALLOC_ARENA_MAX"
LIMIT = 64
#: ``mallopt``'s parameter number for the arena limit (glibc's malloc.h: ``M_ARENA_MAX``).
_M_ARENA_MAX = -8


def widen(limit: int = LIMIT) -> int | None:
    """Raise glibc's arena limit to ``limit`` for this process and its children; return the
    limit in force (the user's, where ``MALLOC_ARENA_MAX`` was set), or None where the C library
    is not glibc or refused it."""
    user = os.environ.get(VARIABLE)
    if user is not None:
        return int(user) if user.strip().isdigit() else None
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 (glibc's alone: musl has mallopt as a stub)
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    if mallopt(_M_ARENA_MAX, limit) != 1:
        return None
    os.environ[VARIABLE] = str(limit)
    return limit


def in_force() -> int | None:
    """The arena limit this process runs under, as :func:`widen` left it or the user set it
    (None: glibc's own, eight per core)."""
    value = os.environ.get(VARIABLE, "")
    return int(value) if value.strip().isdigit() else None
