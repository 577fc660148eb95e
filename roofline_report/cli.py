"""The command line: ``roofline-report``, ``python generate.py`` and ``python -m
roofline_report``, one parser with three commands (argparse subcommands):

* ``report`` measures JAX workloads (or re-renders a saved run, ``--from-json``) and writes the
  report; it is the default: a command line that names no command is a report's, so
  ``generate.py --quick`` is ``generate.py report --quick``;
* ``profile LOGDIR --out DIR`` writes the per-kernel roofline of a profiler trace captured
  anywhere (:func:`roofline_report.profile`);
* ``compare A/results.json B/results.json --out DIR`` sets saved runs side by side, and with
  ``--fail-if`` gates B against A (:func:`roofline_report.compare`).

The options two or more commands take are defined once, on the parent parser every command
inherits (:func:`_shared_options`); a command that has no use for one refuses it with one line.
A usage error is one line and exit code 2 (:class:`_Parser`), as is any bad input.

Exit codes: 0 the report was built; 2 bad input (one line on stderr, nothing written);
3 the report was built but some measurement was not available (listed in the report);
4 (compare ``--fail-if``) the comparison was built and a condition fired;
1 an internal failure (short message; the traceback with --debug); 130 interrupted (the previous
report is untouched).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn

from roofline_report import interrupts
from roofline_report.analysis.analyse import Assumptions, assumptions_for
from roofline_report.analysis.gate import GRAMMAR
from roofline_report.errors import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_REGRESSION,
    InputError,
    first_line,
)
from roofline_report.progress import Progress
from roofline_report.text import plural
from roofline_report.version import __version__

PROG = "roofline-report"
DEFAULT_OUT = "build"
#: The commands, the first the default (a command line that names none is a report's).
COMMANDS = ("report", "profile", "compare")
PROGRESS_MODES = ("auto", "bar", "plain", "none")


def _usage_error(prog: str, message: str) -> InputError:
    """A usage error of the command named ``prog``: one line, exit code 2."""
    return InputError(f"{prog}: {message} (see --help)")


def _prog(command: str) -> str:
    """A command's name in its usage line and its errors: the default command's is the
    tool's (it may be left out)."""
    return PROG if command == COMMANDS[0] else f"{PROG} {command}"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2 (an InputError)."""

    def error(self, message: str) -> NoReturn:
        raise _usage_error(self.prog, message)


def _shared_options() -> _Parser:
    """The parent of every command: the options two or more of them take."""
    shared = _Parser(add_help=False)
    group = shared.add_argument_group("options every command takes")
    group.add_argument("--out", metavar="DIR",
                       help="folder to write the report into; only a folder holding a previous "
                       "report is ever replaced (report: by default build; profile and compare "
                       "need it)")
    group.add_argument("--preset", metavar="NAME",
                       help="a chip's spec sheet as the roofs (e.g. H100, H200, A100, B200, "
                       "'TPU v5e'; see report --list-presets); by default the preset matching "
                       "the device (this one, or the one the trace names), if any; compare "
                       "shows each run on its own roofs and takes none")
    group.add_argument("--title", metavar="TEXT",
                       help="the page's title (a rendering option: report --from-json takes it)")
    group.add_argument("--progress", choices=PROGRESS_MODES, default="auto",
                       help="progress on stderr: a live line (bar), plain log lines (plain) or "
                       "none; auto (the default) is a live line on a terminal, and elsewhere "
                       "plain lines for report, nothing for profile and compare")
    group.add_argument("--debug", action="store_true",
                       help="show the traceback of an internal error, or of your code behind an "
                       "input error")
    group.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return shared


def build_parser() -> argparse.ArgumentParser:
    """The command line: the three commands, each with the shared options and its own."""
    shared = _shared_options()
    parser = _Parser(prog=PROG, description="Reason about JAX computations with HLO and the "
                     "roofline model: a static, checked report.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                     parser_class=_Parser)
    report = commands.add_parser(
        "report", parents=[shared], prog=_prog("report"),
        help="measure workloads and write the report (the default command)",
        description="Lower, check, account and time JAX workloads; write a roofline report "
        "(HTML, Markdown, SVG figures and results.json). 'report' is the default command: it "
        "may be left out.",
        epilog="Other commands: 'roofline-report profile LOGDIR --out DIR' reads a "
        "jax.profiler trace captured anywhere and writes its per-kernel roofline; "
        "'roofline-report compare A/results.json B/results.json --out DIR' sets saved runs "
        "side by side ('--fail-if COND' gates B against A: exit code 4); "
        "'roofline-report COMMAND --help' lists a command's options. Exit codes: 0 built; 2 "
        "bad input; 3 built with some measurement not available; 1 internal error; 130 "
        "interrupted.")
    _report_options(report)
    report.set_defaults(handler=_build)
    profile = commands.add_parser(
        "profile", parents=[shared], prog=_prog("profile"),
        help="the per-kernel roofline of a profiler trace",
        description="Read a profiler trace captured anywhere (jax.profiler.trace(LOGDIR) on a "
        "GPU, TPU or CPU job) and write the per-kernel roofline of one of its programs: "
        "kernels counted from the HLO the trace holds, timed from its events.",
        epilog="Roofs, in this order: --ceilings (measured on the machine that ran the trace), "
        "the spec sheet of --preset or of the device the trace names; with neither, no roof: "
        "the kernels' achieved rates are shown without a prediction. "
        "Reading a trace needs jaxlib installed, not the trace's backend. Exit codes: 0 "
        "written; 3 written with something not available (see the report); 2 bad input "
        "(nothing written); 1 internal error.")
    _profile_options(profile)
    profile.set_defaults(handler=_profile)
    compare = commands.add_parser(
        "compare", parents=[shared], prog=_prog("compare"),
        help="saved runs side by side, or gated",
        description="Set two or more saved runs (results.json files) side by side; with "
        "--fail-if, gate NEW against BASE.",
        epilog=f"A --fail-if condition is {GRAMMAR}. A change inside both runs' spread (the "
        "IQR of the timing samples) is noise, not a regression. Exit codes: 0 written; 4 "
        "written and a --fail-if condition fired; 2 bad input (nothing written); 1 internal "
        "error.")
    _compare_options(compare)
    compare.set_defaults(handler=_compare)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed; a command line that names no command is the default command's. An
    argument the command does not know is refused in the command's name."""
    args = list(argv)
    if not args or args[0] not in COMMANDS:
        args.insert(0, COMMANDS[0])
    ns, unknown = build_parser().parse_known_args(args)
    if unknown:
        raise _usage_error(_prog(ns.command), f"unrecognized arguments: {' '.join(unknown)}")
    return ns


def _report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from-json", metavar="FILE",
                   help="re-render from a saved results.json without importing jax or measuring")
    p.add_argument("--quick", action="store_true",
                   help="fewer timing samples and a reduced sweep, for fast iteration")
    p.add_argument("--no-ceilings", action="store_true",
                   help="do not measure this machine's ceilings")
    p.add_argument("--remeasure", action="store_true",
                   help="measure this machine's ceilings again instead of reusing those saved "
                   "in the ceilings cache, and replace them there")
    p.add_argument("--remeasure-if-suspect", action="store_true",
                   help="measure this machine's ceilings again when most programs ran faster "
                   "than they allow (ceilings measured under load, or reused from the cache)")
    p.add_argument("--no-sweeps", action="store_true", help="do not run the size sweeps")
    p.add_argument("--no-sharding", action="store_true",
                   help="do not analyse the sharded workloads")
    p.add_argument("--no-experiments", action="store_true",
                   help="do not run the lab notebook's experiments (exercises are still shown)")
    p.add_argument("--config", metavar="FILE",
                   help="a TOML file declaring your own workloads and budgets")
    p.add_argument("--only-config", action="store_true",
                   help="with --config: a report about your workloads only (no seed, catalog "
                   "or lab notebook)")
    p.add_argument("--peak", metavar="RATE",
                   help="hypothetical compute budget, e.g. '100 GFLOP/s' (default: the seed's);"
                   " a bare number is in FLOP/s ('--peak 100' is 100 FLOP/s), and a line on "
                   "stderr says how it was read")
    p.add_argument("--bandwidth", metavar="RATE",
                   help="hypothetical memory bandwidth, e.g. '20 GB/s' (default: the seed's); "
                   "a bare number is in B/s, said on stderr")
    p.add_argument("--interconnect", metavar="RATE",
                   help="hypothetical interconnect bandwidth per device for sharded workloads, "
                   "e.g. '5 GB/s' (default 5 GB/s, an assumption); a bare number is in B/s, "
                   "said on stderr")
    p.add_argument("--list-presets", action="store_true", help="list the chip presets and exit")


def _jobs_flag(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def _profile_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("logdir", metavar="LOGDIR",
                   help="the folder given to jax.profiler.trace (or a run folder under "
                   "plugins/profile, or one .xplane.pb file)")
    p.add_argument("--run", metavar="NAME", help="the run to read (default: the newest)")
    p.add_argument("--module", metavar="NAME",
                   help="the program to read, e.g. jit_train_step (default: the one with the "
                   "most kernel time)")
    p.add_argument("--ceilings", metavar="FILE",
                   help="a results.json measured on the machine that ran the trace: its "
                   "ceilings are the roofs")
    p.add_argument("--jobs", metavar="N", type=_jobs_flag,
                   help="worker processes reading the hosts' traces side by side (default: the "
                   "cores; a run of one host, or of little to read, is read in one; 1: all in "
                   "one process, on one core)")


def _compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", nargs="+", metavar="RESULTS_JSON",
                   help="two or more saved runs, the first the baseline (with --fail-if "
                   "exactly two: BASE, then NEW)")
    p.add_argument("--fail-if", action="append", default=[], metavar="COND",
                   help="exit 4 when COND holds for a workload of NEW against BASE (repeatable)")


def main(argv: Sequence[str] | None = None) -> int:
    with interrupts.handled():  # before jax is imported: Ctrl-C stops a build at any moment
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    debug = False  # until the command line is read (a usage error has no traceback to show)
    try:
        interrupts.safe_point("start")
        ns = parse_args(sys.argv[1:] if argv is None else argv)
        debug = ns.debug
        handler: Callable[[argparse.Namespace], int] = ns.handler
        return handler(ns)
    except InputError as exc:
        if debug and exc.__cause__ is not None:
            traceback.print_exception(exc.__cause__)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(interrupts.MESSAGE, file=sys.stderr)
        return interrupts.EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(f"internal error: {type(exc).__name__}: {first_line(exc)} "
              "(run with --debug for details)", file=sys.stderr)
        return EXIT_INTERNAL


def _required_out(ns: argparse.Namespace) -> Path:
    """The --out a command needs (report's has a default)."""
    if ns.out is None:
        raise _usage_error(_prog(ns.command), "the following arguments are required: --out")
    return Path(ns.out)


def _quiet_elsewhere(mode: str) -> Progress:
    """Progress for profile and compare: auto is a live line on a terminal, else nothing (a
    log or a pipe gets the outcome only)."""
    return Progress(mode if mode != "auto" or sys.stderr.isatty() else "none")


def _profile(ns: argparse.Namespace) -> int:
    """``roofline-report profile``: :func:`roofline_report.profile`, and the outcome on
    stderr."""
    from roofline_report import output
    from roofline_report.profile_cli import profile

    out = _required_out(ns)
    progress = _quiet_elsewhere(ns.progress)
    try:
        data = profile(ns.logdir, out=out, run=ns.run, module=ns.module,
                       ceilings=ns.ceilings, preset=ns.preset, title=ns.title, jobs=ns.jobs,
                       origin="command line", progress=progress)
    finally:
        progress.done()  # the live line cleared before the outcome or the error is printed
    skipped = data.get("skipped") or []
    print(output.wrote_line(out, len(skipped)), file=sys.stderr)
    return EXIT_PARTIAL if skipped else EXIT_OK


def _compare(ns: argparse.Namespace) -> int:
    """``roofline-report compare``: :func:`roofline_report.compare`, what it found on stderr,
    and exit code 4 where a --fail-if condition fired."""
    from roofline_report.compare_cli import compare

    out = _required_out(ns)
    if ns.preset is not None:
        raise InputError("compare: --preset does not apply: each run is shown on the roofs it "
                         "was saved with")
    progress = _quiet_elsewhere(ns.progress)
    try:
        doc = compare(ns.results, out, fail_if=ns.fail_if, title=ns.title,
                      origin="command line", progress=progress)
    finally:
        progress.done()
    print(f"wrote {out / 'report.html'} comparing {len(ns.results)} runs", file=sys.stderr)
    if not ns.fail_if:
        return EXIT_OK
    for label, key in (("only in BASE", "1"), ("only in NEW", "2")):
        names = doc["only"].get(key, [])
        if names:
            print(f"note: {plural(len(names), 'workload', 'workloads')} {label}, not gated: "
                  f"{', '.join(names)}", file=sys.stderr)
    for line in doc["gate"]["regressions"]:
        print(f"regression: {line}", file=sys.stderr)
    return EXIT_REGRESSION if doc["gate"]["regressions"] else EXIT_OK


def _build(ns: argparse.Namespace) -> int:
    """``roofline-report [report]``: measure (or read a saved run) and write the report."""
    from roofline_report import output
    from roofline_report.report import meta
    from roofline_report.results import io as results

    if ns.list_presets:
        from roofline_report import presets

        for p in presets.list_presets():
            print(p.name)
        return EXIT_OK
    out = Path(DEFAULT_OUT if ns.out is None else ns.out)
    output.check_destination(out)  # refuse before measuring for minutes
    title = meta.check_title(ns.title)
    assumed = _assumed_rates(ns)
    notes = assumed.pop("notes")
    if ns.from_json:
        measuring_flags = [f for f, v in (("--quick", ns.quick), ("--config", ns.config),
                                          ("--only-config", ns.only_config),
                                          ("--no-ceilings", ns.no_ceilings),
                                          ("--remeasure", ns.remeasure),
                                          ("--remeasure-if-suspect",
                                           ns.remeasure_if_suspect),
                                          ("--no-sweeps", ns.no_sweeps),
                                          ("--no-sharding", ns.no_sharding),
                                          ("--no-experiments", ns.no_experiments)) if v]
        if measuring_flags:
            raise InputError(f"--from-json re-renders saved results; {measuring_flags[0]} "
                             "would need a new measurement (budgets and --preset are "
                             "assumptions: those may be given)")
        data, typed = results.load_both(ns.from_json)
        _say(notes)
        render_assumptions = assumptions_for(typed, **assumed)
    else:
        progress = Progress(ns.progress)
        try:
            with interrupts.on_stop(progress.done):  # an interrupt's line on a line of its own
                data = _measure(ns, progress, assumed, notes)
        finally:
            progress.done()
        typed = results.typed(data, source="the measured results")
        render_assumptions = assumptions_for(typed, preset=assumed["preset"])
    skipped = write(out, data, source=Path(ns.from_json).name if ns.from_json else None,
                    assumptions=render_assumptions, title=title, typed=typed)
    print(output.wrote_line(out, len(skipped)), file=sys.stderr)
    return EXIT_PARTIAL if skipped else EXIT_OK


def _assumed_rates(ns: argparse.Namespace) -> dict[str, Any]:
    """The budgets and preset given on the command line (None where not given), checked."""
    from roofline_report import units

    def rate(text: str | None, kind: Literal["flops", "bytes"], flag: str) -> float | None:
        if text is None:
            return None
        value = units.parse_rate(text, kind, what=flag)
        if units.is_bare_number(text):
            # A number without a unit is in base units: say so, since '--peak 100' meaning
            # 100 FLOP/s (not 100 GFLOP/s) is easy to miss.
            unit = "FLOP/s" if kind == "flops" else "B/s"
            notes.append(f"note: {flag} {text.strip()} read as {units.format_si(value, unit)} "
                         f"(a number without a unit is in {unit})")
        return value

    notes: list[str] = []
    preset = ns.preset
    if preset is not None:
        from roofline_report import presets

        if not preset.strip():
            raise InputError("--preset: give a chip preset's name (see --list-presets), or "
                             "leave the option out to match this device")
        preset = presets.get_preset(preset).name
    return {"peak": rate(ns.peak, "flops", "--peak"),
            "bandwidth": rate(ns.bandwidth, "bytes", "--bandwidth"),
            "interconnect": rate(ns.interconnect, "bytes", "--interconnect"),
            "preset": preset, "notes": notes}


def _say(notes: Sequence[str]) -> None:
    """How the command line's values were read, on stderr, once every input was accepted (bad
    input stays one line)."""
    for line in notes:
        print(line, file=sys.stderr)


def _measure(ns: argparse.Namespace, progress: Progress,
             assumed: dict[str, Any], notes: Sequence[str] = ()) -> dict[str, Any]:
    peak, bandwidth = assumed["peak"], assumed["bandwidth"]
    interconnect, preset = assumed["interconnect"], assumed["preset"]
    config = None
    if ns.config:
        from roofline_report import config as config_mod

        config = config_mod.load_config(ns.config)
        peak = peak or config.budgets.peak
        bandwidth = bandwidth or config.budgets.bandwidth
        preset = preset or config.preset
    elif ns.only_config:
        raise InputError("--only-config needs --config FILE")
    if ns.remeasure and ns.no_ceilings:
        raise InputError("--remeasure measures the ceilings again; --no-ceilings measures none: "
                         "give one of them")
    if ns.remeasure_if_suspect and ns.no_ceilings:
        raise InputError("--remeasure-if-suspect measures the ceilings again; --no-ceilings "
                         "measures none: give one of them")
    _say(notes)
    interrupts.safe_point("import")
    # jax is imported only from here on.
    from roofline_report.analysis import seed_model as model
    from roofline_report.observe import cpu_dispatch, user
    from roofline_report.observe import run as measure

    # Before the user's modules are imported (one may make an array, and with it jax's client).
    cpu_dispatch.from_environment()
    user_workloads = user.workloads_from_config(config) if config else ()
    source = ("assumed budgets from the command line or config" if (peak or bandwidth)
              else "the seed's assumed budgets")
    options = measure.RunOptions(
        quick=ns.quick,
        ceilings=not ns.no_ceilings,
        sweeps=not ns.no_sweeps,
        sharding=not ns.no_sharding and not (ns.only_config and config and not config.sharded),
        experiments=not ns.no_experiments and not ns.only_config,
        peak=peak or model.SEED_PEAK_FLOPS,
        bandwidth=bandwidth or model.SEED_BANDWIDTH,
        interconnect=interconnect or model.DEFAULT_INTERCONNECT,
        budget_source=source,
        preset=preset,
        builtin=not ns.only_config,
        user_workloads=tuple(user_workloads),
        config_source=config.source if config else None,
        config_path=ns.config,
        teaching=not ns.only_config,
        remeasure=ns.remeasure,
        remeasure_if_suspect=ns.remeasure_if_suspect,
    )
    return measure.run(options, progress)


def write(out: Path, data: Any, *, source: str | None = None,
          assumptions: Assumptions | None = None,
          title: str | None = None, typed: Any = None) -> list[dict[str, str]]:
    """Render ``data`` and write the whole report folder atomically (see
    :func:`roofline_report.output.write_results`; ``typed``: its typed form, where read);
    returns what was not available."""
    from roofline_report import output

    return output.write_results(out, data, source=source, assumptions=assumptions,
                                title=title, typed=typed)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
