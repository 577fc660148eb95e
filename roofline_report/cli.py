"""Command line: ``roofline-report`` / ``python generate.py``.

Exit codes: 0 the report was built; 2 bad input (one line on stderr, nothing written);
3 the report was built but some measurement was not available (listed in the report);
1 an internal failure (short message; the traceback with --debug); 130 interrupted (the previous
report is untouched).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn

from roofline_report import interrupts
from roofline_report.analysis.analyse import Assumptions, assumptions_for
from roofline_report.errors import (
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_PARTIAL,
    InputError,
    first_line,
)
from roofline_report.progress import Progress
from roofline_report.version import __version__

DEFAULT_OUT = "build"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{self.prog}: {message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="roofline-report",
        description="Lower, check, account and time JAX workloads; write a roofline report "
        "(HTML, Markdown, SVG figures and results.json).",
        epilog="Also: 'roofline-report compare A/results.json B/results.json --out DIR' sets "
        "saved runs side by side ('--fail-if COND' gates B against A: exit code 4); "
        "'roofline-report profile LOGDIR --out DIR' reads a jax.profiler trace captured "
        "anywhere and writes its per-kernel roofline. Exit "
        "codes: 0 built; 2 bad input; 3 built with some measurement not available; 1 internal "
        "error; 130 interrupted.",
    )
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help="folder to write the report into (default: build)")
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
    p.add_argument("--preset", metavar="NAME",
                   help="draw a real chip's spec-sheet budgets (e.g. H100, H200, A100, B200, "
                   "'TPU v5e'); by default the preset matching this device, if any")
    p.add_argument("--list-presets", action="store_true", help="list the chip presets and exit")
    p.add_argument("--title", metavar="TEXT",
                   help="the page's title (a rendering option: --from-json accepts it)")
    p.add_argument("--progress", choices=("auto", "bar", "plain", "none"), default="auto",
                   help="progress on stderr: a live line on a terminal, plain lines otherwise")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    p.add_argument("--version", action="version", version=f"roofline-report {__version__}")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    with interrupts.handled():  # before jax is imported: Ctrl-C stops a build at any moment
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    try:
        interrupts.safe_point("start")
        if args_list and args_list[0] == "compare":
            from roofline_report import compare_cli as compare

            return compare.main(args_list[1:])
        if args_list and args_list[0] == "profile":
            from roofline_report import profile_cli

            return profile_cli.main(args_list[1:])
        return _build(build_parser().parse_args(args_list))
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


def _build(ns: argparse.Namespace) -> int:
    from roofline_report import output
    from roofline_report.report import meta
    from roofline_report.results import io as results

    if ns.list_presets:
        from roofline_report import presets

        for p in presets.list_presets():
            print(p.name)
        return EXIT_OK
    out = Path(ns.out)
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
        data: Any = results.load(ns.from_json)
        _say(notes)
        render_assumptions = assumptions_for(data, **assumed)
    else:
        progress = Progress(ns.progress)
        try:
            with interrupts.on_stop(progress.done):  # an interrupt's line on a line of its own
                data = _measure(ns, progress, assumed, notes)
        finally:
            progress.done()
        render_assumptions = assumptions_for(data, preset=assumed["preset"])
    skipped = write(out, data, source=Path(ns.from_json).name if ns.from_json else None,
                    assumptions=render_assumptions, title=title)
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
    from roofline_report.observe import run as measure
    from roofline_report.observe import user

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
          title: str | None = None) -> list[dict[str, str]]:
    """Render ``data`` and write the whole report folder atomically (see
    :func:`roofline_report.output.write_results`); returns what was not available."""
    from roofline_report import output

    return output.write_results(out, data, source=source, assumptions=assumptions,
                                title=title)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
