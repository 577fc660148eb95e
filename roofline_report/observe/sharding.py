"""Measure sharded workloads: the collectives XLA inserts, their bytes, and the time they take.

A GSPMD program's collectives appear only in the *compiled* HLO (``compiled.as_text()``), not
in its StableHLO. This module lowers and compiles a function with ``NamedSharding`` in/out
shardings, takes every ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all`` and
``collective-permute`` (synchronous, or as an async ``-start``/``-done`` pair) from the IR of
that text (:mod:`roofline_report.hlo`),
prices each with :func:`roofline_report.analysis.comm.collective_bytes`, checks the result against
NumPy and times the executable.

Several devices on a CPU need ``--xla_force_host_platform_device_count`` set before jax is
imported, so the measurement runs in its own process: ``python -m roofline_report.observe.sharding
--devices 8 [--quick]`` prints one JSON document, and :func:`run_sharded_analysis` launches it.
jax is imported lazily, so importing this module (and reading HLO text) costs nothing.

Collectives are listed once per appearance in the program text (a combined collective, several
arrays in one instruction, once), each with the trip count of the loops around it (a
collective in a loop body runs once per iteration): per-step totals multiply by it, and a loop
whose trip count is unknown makes them lower bounds, which the result says. Each collective
also carries the dtype the program gives it, read from the StableHLO: XLA:CPU runs bfloat16
collectives in float32, and the bytes a GPU or TPU sends are those of the program's dtype.

The user's own sharded workloads (``[[workload]]`` tables with a ``mesh``, see
:mod:`roofline_report.config`) are analysed in the same child, started with ``--config FILE``:
each becomes one more entry of ``"workloads"`` with ``"sharding": "user"``, its per-device work
and traffic computed as :func:`~roofline_report.observe.sharded_user.user_workload` describes.
A failure in one of them (an import error, a function that does not compile with its
partitions) becomes an entry with an ``"error"`` for that workload only.

This module is the child process and its launcher (:func:`measure`, :func:`run_sharded_analysis`,
:func:`main`). The parts it runs: :mod:`~roofline_report.observe.sharded_collectives` (the
collectives read from the compiled HLO, pure), :mod:`~roofline_report.observe.sharded_analysis`
(:func:`~roofline_report.observe.sharded_analysis.analyze_sharded`: one program compiled,
checked and timed), :mod:`~roofline_report.observe.sharded_builtin` (the built-in matmuls and
training steps) and :mod:`~roofline_report.observe.sharded_user` (the config's workloads).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roofline_report import children
from roofline_report.errors import InputError, scrub_paths
from roofline_report.kinds import Kind
from roofline_report.observe.sharded_analysis import (
    clip,
    lazy_jax,
    make_mesh,
    one_line,
    unavailable,
)
from roofline_report.observe.sharded_builtin import builtin_workloads
from roofline_report.observe.sharded_user import user_workloads

EMULATED_NOTE = (
    "{n} host devices emulated on one CPU: timings say nothing about a real interconnect"
)
REAL_NOTE = "{n} {platform} devices: collectives run over the real interconnect"


def _pick_devices(jax: Any, count: int) -> tuple[list[Any], bool]:
    """Real accelerators when the default backend has enough of them, else emulated host CPUs."""
    default = jax.devices()
    if default and default[0].platform != "cpu" and len(default) >= count:
        return list(default[:count]), False
    return list(jax.devices("cpu")[:count]), True


def measure(*, devices: int, quick: bool, config_path: str | None = None,
            builtin: bool = True) -> dict[str, Any]:
    """Run the three sharded matmul workloads and the training steps of
    :mod:`roofline_report.observe.training_steps` on ``devices`` devices (in this process; with
    ``builtin=False`` none of them), then the sharded workloads of the config file at
    ``config_path`` (if given).

    Needs the devices to exist: call it in a process started with the host-device flag (see
    :func:`run_sharded_analysis`). Returns the document described in :func:`run_sharded_analysis`.
    """
    jax = lazy_jax()
    chosen, emulated = _pick_devices(jax, devices)
    if len(chosen) < devices:
        return unavailable(
            f"{devices} devices requested but only {len(chosen)} available; set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={devices} before jax is imported"
        )
    platform = str(chosen[0].platform)
    mesh = make_mesh(jax, chosen)
    note = (EMULATED_NOTE if emulated else REAL_NOTE).format(n=devices, platform=platform)
    workloads = []
    if builtin:
        workloads += builtin_workloads(mesh, quick)
    if config_path is not None:
        workloads += user_workloads(config_path, chosen, quick)
    return {
        "available": True,
        "devices": devices,
        "platform": platform,
        "default_backend": str(jax.default_backend()),
        "emulated": emulated,
        "note": note,
        "jax_version": str(jax.__version__),
        "quick": quick,
        "builtin": builtin,
        "kinds": {
            "collectives": Kind.ANALYTIC.value,
            "per_device": Kind.ANALYTIC.value,
            "split_dims": Kind.ANALYTIC.value,
            "xla_per_device": Kind.COMPILER_ESTIMATE.value,
            "measured_per_call_s": Kind.MEASURED.value,
            "flops_cross_check": Kind.COMPILER_ESTIMATE.value,
        },
        "workloads": workloads,
    }


# --------------------------------------------------------------------------------------------
# The subprocess: entry point and launcher
# --------------------------------------------------------------------------------------------

_DEVICE_FLAG = "--xla_force_host_platform_device_count"


def with_device_flag(xla_flags: str, devices: int) -> str:
    """``xla_flags`` with the host-device count set to ``devices`` (replacing any earlier one)."""
    kept = [flag for flag in xla_flags.split() if not flag.startswith(_DEVICE_FLAG)]
    return " ".join([*kept, f"{_DEVICE_FLAG}={devices}"])


def _parent_accelerator() -> tuple[str, int] | None:
    """The platform and device count of this process's jax backend, if jax has made one and it
    is not the CPU's; None otherwise (jax not imported, or no backend made yet: asking would
    start one)."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is None or not bridge.backends_are_initialized():
        return None
    jax = sys.modules["jax"]
    platform = str(jax.default_backend())
    return None if platform == "cpu" else (platform, len(jax.devices()))


def host_only(devices: int, parent: tuple[str, int] | None) -> bool:
    """Whether the child must keep to the host's CPU devices: this process holds a TPU (libtpu
    lets one process open a host's chips; a second one fails on its lockfile) or holds too few
    accelerators for ``devices`` (the child would start the accelerator's runtime, which takes
    tens of seconds on a TPU, only to fall back to the host)."""
    return parent is not None and (parent[0] == "tpu" or parent[1] < devices)


def _child_env(devices: int) -> dict[str, str]:
    extra = {
        "XLA_FLAGS": with_device_flag(os.environ.get("XLA_FLAGS", ""), devices),
        "JAX_NUM_CPU_DEVICES": str(devices),  # it overrides the XLA flag when both are set
        # share a GPU with the parent
        "XLA_PYTHON_CLIENT_PREALLOCATE": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE",
                                                        "false")}
    if host_only(devices, _parent_accelerator()):
        extra["JAX_PLATFORMS"] = "cpu"
    return children.environment(extra)


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


#: The sharded measurements running now, so that an interrupted build stops them too.
_running: set[subprocess.Popen[str]] = set()


def stop_children() -> None:
    """Kill the sharded measurements still running (the build was interrupted: their thread
    then returns at once rather than holding the process until they finish)."""
    for proc in list(_running):
        with contextlib.suppress(OSError):
            proc.kill()


def run_sharded_analysis(
    *,
    devices: int = 8,
    quick: bool,
    timeout: float,
    config_path: str | os.PathLike[str] | None = None,
    builtin: bool = True,
) -> dict[str, Any]:
    """Run :func:`measure` in a fresh Python process with ``devices`` devices; return its JSON.

    The child gets the host-device flag (``XLA_FLAGS`` and ``JAX_NUM_CPU_DEVICES``), so this
    works whatever jax state the caller has; on a machine whose default backend has at least
    ``devices`` accelerators, those are used instead (``"emulated": False``). With
    ``config_path``, the child also analyses the config's sharded workloads (it gets the file's
    absolute path and runs in the caller's current directory, so imports resolve as they do
    here); they follow the built-ins in ``"workloads"``; ``builtin=False`` (``--no-builtin``)
    leaves the built-ins out. The training steps (``"sharding"`` one of
    :data:`roofline_report.observe.training_steps.STEP_STRATEGIES`) follow the matmuls, with the
    keys
    :func:`roofline_report.observe.sharded_builtin._step_workload` lists. Returns::

        {"available": True, "devices", "platform", "default_backend", "emulated", "note",
         "jax_version", "quick", "kinds": {field: Kind value},
         "workloads": [{"name", "sharding": "data"|"contracting"|"fsdp"|"contracting-bfloat16",
                        "strategy", "dtype", "description",
                        "shapes": {"x", "w", "y", "dtype"}, "partition_specs": {"x", "w", "y"},
                        "mesh": {"axis_names", "shape", "axis_types"},
                        "collectives": [parse_collectives records],
                        "per_device": {"flops", "hbm_bytes", "comm_bytes", "comm_bytes_hlo",
                                       "comm_bytes_compiled", "comm_bytes_complete"},
                        "notes": [str],
                        "expected_collective": {"op", "result_bytes", "group_size"} | None,
                        "xla_per_device": {"flops", "bytes_accessed", "transcendentals",
                                           "note"},
                        "check": {"max_abs_err", "tolerance", "passed"},
                        "measured_per_call_s": [float] | None}, ...,
                       # then one per sharded workload of the config:
                       {"name", "sharding": "user", "description", "function",
                        "mesh", "collectives", "expected_collective": None,
                        "arguments": [{"shape", "dtype", "partition", "shard_shape"}],
                        "results": [{"shape", "dtype", "partition", "shard_shape"}],
                        "per_device": {"flops", "hbm_bytes", "comm_bytes", "comm_bytes_hlo",
                                       "comm_bytes_compiled", "comm_bytes_complete"},
                        "notes": [str],
                        "counted": {"flops", "transcendentals", "split_devices", "notes"},
                        "flops_cross_check": {"xla_per_device", "ratio"},
                        "xla_per_device", "check", "measured_per_call_s"[, "error"]}
                       # or, when it could not be analysed:
                       {"name", "sharding": "user", "description", "function",
                        "collectives": [], "error": str}]}

    or ``{"available": False, "reason": str}`` when the child fails, times out or prints no
    JSON: a measurement failure never raises. Raises InputError for a bad ``devices`` or
    ``timeout``.
    """
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise InputError(f"devices must be a positive integer, got {devices!r}")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise InputError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if config_path is not None and not isinstance(config_path, str | os.PathLike):
        raise InputError(f"config_path must be a path, got {type(config_path).__name__}")
    args = ["--devices", str(devices)]
    if quick:
        args.append("--quick")
    if not builtin:
        args.append("--no-builtin")
    cwd = children.ROOT
    if config_path is not None:
        args += ["--config", str(Path(config_path).resolve())]
        with contextlib.suppress(OSError):  # a removed current directory: keep the package's
            cwd = str(Path.cwd())
    try:
        proc = children.start("roofline_report.observe.sharding", args, isolated=False,
                              env=_child_env(devices), cwd=cwd, capture=True)
    except children.NotStarted as exc:
        return unavailable(f"could not start the sharded measurement: {one_line(exc.error)}")
    _running.add(proc)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return unavailable(f"the sharded measurement timed out after {timeout:g} s")
    finally:
        _running.discard(proc)
        children.end(proc)
    doc = _last_json(stdout)
    if doc is not None:
        return doc
    last = next((ln for ln in reversed(stderr.splitlines()) if ln.strip()), "")
    return unavailable(
        f"the sharded measurement exited with code {proc.returncode} and printed no result"
        + (f": {clip(scrub_paths(last.strip()))}" if last else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m roofline_report.observe.sharding --devices N [--quick] [--config FILE]``: print
    one
    JSON document."""
    parser = argparse.ArgumentParser(
        prog="python -m roofline_report.observe.sharding",
        description="Measure sharded matmuls on N devices and print one JSON document.",
    )
    parser.add_argument("--devices", type=int, default=8, help="devices in the mesh (default 8)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="also analyse this TOML config's workloads that declare a mesh")
    parser.add_argument("--no-builtin", action="store_true",
                        help="leave out the built-in matmuls and training steps")
    options = parser.parse_args(argv)
    if options.devices < 1:
        parser.error("--devices must be at least 1")
    if "jax" not in sys.modules:  # the flag only counts before jax is imported
        os.environ["XLA_FLAGS"] = with_device_flag(os.environ.get("XLA_FLAGS", ""), options.devices)
        os.environ["JAX_NUM_CPU_DEVICES"] = str(options.devices)
    try:
        result = measure(devices=options.devices, quick=options.quick, config_path=options.config,
                         builtin=not options.no_builtin)
    except Exception as exc:  # reported in the document, never a traceback on stdout
        result = unavailable(f"the sharded measurement failed: {one_line(exc)}")
    try:
        text = json.dumps(result, sort_keys=True, allow_nan=False)
    except ValueError as exc:  # a non-finite number slipped in
        text = json.dumps(unavailable(f"the result is not plain JSON: {one_line(exc)}"))
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
