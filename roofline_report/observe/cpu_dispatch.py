"""Where jax's CPU client runs a call: on the thread that makes it, for a measured build.

By default jax's CPU client runs each call of a compiled program on a worker thread
(asynchronous dispatch, the flag ``jax_cpu_enable_async_dispatch``): the calling thread hands
the call over and, when it blocks, waits for the worker to hand it back. Where the two threads
hold a core each, both spin and the handover is cheap; where the scheduler puts them on one
core, each handover waits for a context switch, and it keeps them there for a while. On the
2-core machine this was built on a 4 kB elementwise program's call read 5.0 to 5.5 µs back to
back with the threads on two cores and 8.4 µs with both on one (``taskset -c 0``), 16 µs when
blocking after each call, with one or two context switches a call; within one build, which of
the two a sweep point got changed from point to point (in one of six builds, one sweep's
smallest point read 11.8 µs against 5.4 to 6.5 in the others). With the call run on the
calling thread it read 4.7 µs on one core or two, with no context switch.

The model prices a CPU call as its kernels plus one dispatch, one after the other
(:mod:`roofline_report.analysis.predict`), which is what a call made on the calling thread does,
so a measured build asks for that: :func:`calls_on_caller` turns the flag off before jax makes
its CPU client (the flag is read then, and changing it afterwards changes nothing), and
:func:`async_dispatch` says which way the client runs, for results.json's environment. A build
whose process had made the client already (a test's, or ``analyze()`` in a user's program)
keeps what it was made with, and the record says so. A user who wants the worker thread for a
build sets ``JAX_CPU_ENABLE_ASYNC_DISPATCH=true`` in the environment (jax's flag of that name
reads no variable of its own). Accelerators dispatch asynchronously whatever the flag, which
applies to the CPU client alone.
"""

from __future__ import annotations

import os

import jax
from jax._src import xla_bridge

from roofline_report.errors import InputError

FLAG = "jax_cpu_enable_async_dispatch"
VARIABLE = FLAG.upper()  # the user's own choice, where set


def calls_on_caller() -> bool:
    """Have jax's CPU client run each call on the calling thread (or as
    ``JAX_CPU_ENABLE_ASYNC_DISPATCH`` asks), if the client is not made yet; return whether calls
    will run on the calling thread. Raises InputError for a value of the variable that is not
    true or false."""
    asked = os.environ.get(VARIABLE)
    wanted = False
    if asked is not None:
        words = {"true": True, "1": True, "false": False, "0": False}
        if asked.strip().lower() not in words:
            raise InputError(f"{VARIABLE}={asked!r}: expected true or false")
        wanted = words[asked.strip().lower()]
    if not xla_bridge.backends_are_initialized():
        jax.config.update(FLAG, wanted)  # type: ignore[no-untyped-call]
    return not async_dispatch()


def async_dispatch() -> bool:
    """Whether jax's CPU client runs calls on a worker thread: the flag as it stands, which is
    what the client was made with (this module changes it only before the client exists)."""
    return bool(jax.config.read(FLAG))  # type: ignore[no-untyped-call]
