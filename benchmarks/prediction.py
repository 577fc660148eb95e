"""How well the roofline model predicts this machine: relative errors of predicted times.

    python benchmarks/prediction.py                          # the catalog suite: measure, score
    python benchmarks/prediction.py --suite heldout          # the held-out suite
    python benchmarks/prediction.py [--suite S] --from-json FILE   # score a saved results.json
    python benchmarks/prediction.py --suite heldout --from-json A B   # a run measured in parts
    python benchmarks/prediction.py --suite heldout --part 1/2 --out DIR   # one part of it
    python benchmarks/prediction.py --suite heldout --out DIR      # keep the measured report
    python benchmarks/prediction.py --suite both             # both suites from one run

error = |predicted − measured| ÷ measured, for each program's time per call (the first quartile
of its samples: other work on a shared machine only lengthens a call) and for each kernel of at
least 50 µs per call (its time from the profiler trace, by the same rule).

``--suite catalog`` (the default) measures the catalog and its sweeps with ceilings and scores
every catalog workload and sweep point; its kernels are those of the shipped training step
(examples/transformer.toml, added to the same run when flax is installed and timed first, nearest
the ceilings; ``--no-step`` leaves it out), or of the catalog where the step is not measured.
Targets on the 2-core CPU: ``median_error`` ≤ 0.25, ``kernel_median_error`` ≤ 0.35.

The ceilings the predictions rest on are measured in the same run (into a temporary ceilings
cache: the user's is neither read nor replaced), about 45 s more on a 2-core CPU: the machine's
speed drifts between runs on a shared machine (the same day's matmul roof at 512 read 215 and
152 GFLOP/s three hours apart), and a prediction from ceilings measured in a faster hour is
judged against programs timed in a slower one. ``--cached-ceilings`` reuses the ceilings cache
instead, for a quicker score whose ceilings may come from another time.

``--suite heldout`` measures the held-out programs of benchmarks/heldout/heldout.toml (with
ceilings: ``generate.py --config benchmarks/heldout/heldout.toml --only-config``) and scores
each program and every kernel of at least 50 µs across them. Those programs are never used
to fit any rate: they say how the model does on code it has not seen. With ``--from-json``
the saved file must hold them (a run of that config); programs it lacks are named on stderr.

``--part K/N`` measures the K-th of N consecutive parts of the held-out programs only (a
temporary config naming their setups as ``benchmarks.heldout.<module>``), for a machine where
one process cannot measure the whole suite within a command's limit (a TPU: the first part
with its ceilings took 347 s there, the whole suite over 600 s); the parts, each kept with
``--out`` and the later ones run with ``--cached-ceilings`` on the first one's ceilings, are
scored together with ``--from-json A B``.

``--suite both`` scores the two suites separately from one run (``generate.py --config
benchmarks/heldout/heldout.toml``: the catalog and the held-out programs on the same measured
ceilings; the catalog's kernels are then its own, the training step is not measured). With
``--from-json`` the saved file must hold both.

Prints one line per program with the reason the analysis gives on its row where it gives one
(the held-out suite adds its three kernels with the largest absolute misses), then each suite's
worst programs (largest errors) with their reasons, then a last line of JSON: ``median_error``,
``p90_error``, ``points`` (programs and sweep points scored), ``kernel_median_error``,
``kernels`` (kernels scored), ``kernels_of`` (whose kernels), ``suite``, ``worst_programs``
(name, predicted and measured seconds, error, binding and ``reason``: the analysis's words on
the row, empty where it names none), and for the held-out suite ``programs``: per program its
name, predicted and measured seconds, error, binding, reason and ``worst_kernels`` (name,
category, predicted and measured seconds, the measured spread and the absolute miss). With
``--suite both`` the line is ``{"catalog": {...}, "heldout": {...}}``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from roofline_report.analysis.analyse import analyse  # noqa: E402
from roofline_report.analysis.kernel_records import SIGNIFICANT_KERNEL_S  # noqa: E402
from roofline_report.analysis.miss import Miss  # noqa: E402
from roofline_report.analysis.stats import error_summary  # noqa: E402
from roofline_report.errors import EXIT_INPUT, InputError  # noqa: E402
from roofline_report.observe.ceilings.cache import ENV_VAR as CACHE_ENV  # noqa: E402
from roofline_report.results import io as results  # noqa: E402

HELDOUT_CONFIG = REPO / "benchmarks" / "heldout" / "heldout.toml"
KERNEL_FLOOR_S = SIGNIFICANT_KERNEL_S  # kernels scored: the report's kernel accuracy floor
STEP_CONFIG = REPO / "examples" / "transformer.toml"
STEP_NAME = "user:transformer training step"  # its record's name in the results
WORST_KERNELS = 3  # kernels listed per held-out program: the largest absolute misses
WORST_PROGRAMS = 3  # programs listed per suite: the largest errors


@dataclass(frozen=True, slots=True)
class KernelScore:
    name: str
    category: str
    predicted_s: float
    measured_s: float
    spread_s: tuple[float, float] | None  # first and third quartile over traced calls

    @property
    def error(self) -> float:
        return Miss(self.predicted_s, self.measured_s).error

    @property
    def miss_s(self) -> float:
        return abs(self.predicted_s - self.measured_s)


@dataclass(frozen=True, slots=True)
class Score:
    """One scored program or sweep point."""

    name: str
    title: str
    predicted_s: float
    measured_s: float
    binding: str
    kernels: tuple[KernelScore, ...] = ()  # its timed kernels with a prediction
    sweep_point: bool = False
    why: str = ""  # the analysis's reasons for the miss, as on the report's row ('' for none)

    @property
    def error(self) -> float:
        return Miss(self.predicted_s, self.measured_s).error


def read_scores(data: dict[str, Any]) -> list[Score]:
    """Predicted and measured times of every program, kernel and sweep point of a results
    document, as the analysis derives them. The only function that reads the analysis."""
    an = analyse(data)
    out: list[Score] = []
    for p in an.programs:
        if p.prediction is None or p.miss is None:
            continue
        kernels = tuple(
            KernelScore(r.name, r.category, r.prediction.seconds, float(r.seconds),
                        r.spread)
            for r in (p.kernels.rows if p.kernels is not None else ())
            if r.seconds and r.prediction is not None)
        out.append(Score(p.name, p.title, p.prediction.seconds, p.miss.measured, p.binding,
                         kernels, why=p.why))
    for sw in an.sweeps:
        for pt in sw.points:
            if pt.prediction is not None:
                out.append(Score(sw.name, f"{sw.title} {dict(pt.dims)}", pt.prediction.seconds,
                                 pt.measured, pt.predicted_bound, sweep_point=True,
                                 why=pt.why))
    return out


def summary(scores: Sequence[Score], kernels_from: Sequence[Score], kernels_of: str,
            suite: str) -> dict[str, Any]:
    """The JSON summary: program (and sweep point) errors of ``scores``, kernel errors of the
    kernels of at least KERNEL_FLOOR_S in ``kernels_from``."""
    errors = [s.error for s in scores]
    kernel_errors = [k.error for s in kernels_from for k in s.kernels
                     if k.measured_s >= KERNEL_FLOOR_S]
    median, p90 = error_summary(errors)
    return {"median_error": median, "p90_error": p90, "points": len(errors),
            "kernel_median_error": error_summary(kernel_errors)[0],
            "kernels": len(kernel_errors), "kernels_of": kernels_of, "suite": suite,
            "worst_programs": [_row_json(s) for s in worst_programs(scores)]}


def worst_programs(scores: Sequence[Score], count: int = WORST_PROGRAMS) -> list[Score]:
    """The programs (and sweep points) with the largest errors, largest first."""
    return sorted(scores, key=lambda s: (-s.error, s.title))[:count]


def worst_kernels(score: Score, count: int = WORST_KERNELS) -> list[KernelScore]:
    """The program's timed kernels with the largest absolute misses |predicted − measured|,
    whatever their measured size (a kernel predicted long but measured short misses too)."""
    return sorted(score.kernels, key=lambda k: (-k.miss_s, k.name))[:count]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:10.1f} us"


def _row(s: Score) -> str:
    reason = f"  ({s.why})" if s.why else ""
    return (f"{s.title[:48]:48} predicted {_us(s.predicted_s)}  measured {_us(s.measured_s)}"
            f"  error {s.error:6.0%}  {s.binding}{reason}")


def print_worst(scores: Sequence[Score], suite: str) -> None:
    """The suite's worst programs by error, each with the analysis's reason on its row."""
    print(f"worst programs of the {suite} suite:")
    for s in worst_programs(scores):
        print(f"  {_row(s)}" if s.why else f"  {_row(s)}  (the analysis names no reason)")


def print_scores(scores: Sequence[Score], *, kernels: bool) -> None:
    for s in scores:
        print(_row(s))
        if not kernels:
            continue
        for k in worst_kernels(s):
            spread = (f" (spread {k.spread_s[0] * 1e6:.1f}–{k.spread_s[1] * 1e6:.1f} us)"
                      if k.spread_s else "")
            print(f"    {k.category[:14]:14} {k.name[:34]:34} predicted {_us(k.predicted_s)}"
                  f"  measured {_us(k.measured_s)}{spread}  miss {_us(k.miss_s)}")


def _row_json(s: Score) -> dict[str, Any]:
    return {"name": s.title, "predicted_s": s.predicted_s, "measured_s": s.measured_s,
            "error": s.error, "binding": s.binding, "reason": s.why}


def _program_json(s: Score) -> dict[str, Any]:
    return {**_row_json(s),
            "worst_kernels": [{"name": k.name, "category": k.category,
                               "predicted_s": k.predicted_s, "measured_s": k.measured_s,
                               "spread_s": list(k.spread_s) if k.spread_s else None,
                               "miss_s": k.miss_s} for k in worst_kernels(s)]}


# ---------------------------------------------------------------------------------------------
# Suites


@contextmanager
def _ceilings_cache(folder: Path | None) -> Iterator[None]:
    """The ceilings cache the project uses inside the block: ``folder`` (an empty one: the
    ceilings are measured in the run), or the user's own with None."""
    if folder is None:
        yield
        return
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


def _measure(argv: list[str], keep: str | None, *, cached: bool = False) -> dict[str, Any]:
    """Run the project (``generate.py`` with ``argv``) into ``keep`` or a temporary folder and
    load its results.json; its ceilings measured in the run unless ``cached``."""
    from roofline_report import cli

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(keep) if keep else Path(tmp) / "report"
        with _ceilings_cache(None if cached else Path(tmp) / "ceilings-cache"):
            code = cli.main([*argv, "--no-sharding", "--no-experiments", "--progress", "none",
                             "--out", str(out)])
        if code not in (0, 3):
            raise SystemExit(code)
        return results.load(out / "results.json")


def _step_argv(no_step: bool) -> list[str]:
    """generate.py's arguments that add the shipped training step to the catalog run (timed
    first among the workloads, nearest the ceilings), or none without flax or with
    ``--no-step``."""
    if no_step:
        return []
    if importlib.util.find_spec("flax") is None:
        print("training step not measured: flax is not installed", file=sys.stderr)
        return []
    return ["--config", str(STEP_CONFIG)]


def catalog(data: dict[str, Any], step: str | None, others: Sequence[str] = ()
            ) -> dict[str, Any]:
    """The catalog suite's scores; ``others``: record names of another suite's programs in the
    same run, left out with the training step."""
    scores = [s for s in read_scores(data) if s.name not in others]
    programs = [s for s in scores if s.name != STEP_NAME]  # the step is no catalog program
    kernels_from = [s for s in scores if s.name == step and not s.sweep_point] if step \
        else [s for s in scores if not s.sweep_point]
    print_scores(programs, kernels=False)
    print_worst(programs, "catalog")
    return summary(programs, kernels_from, step or "the catalog", "catalog")


def _blind_programs() -> tuple[str, ...]:
    """``BLIND`` of benchmarks/heldout/__init__.py (it imports nothing), read from its file:
    the folder is a package of programs, not one this script imports by name."""
    spec = importlib.util.spec_from_file_location("heldout_programs",
                                                  HELDOUT_CONFIG.parent / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.BLIND)


def heldout_names(config: Path = HELDOUT_CONFIG, *, blind: bool = False) -> list[str]:
    """The record names (``user:<name>``) of the held-out config's workloads; with ``blind``,
    of those in ``heldout.BLIND`` only."""
    from roofline_report.config import load_config

    specs = list(load_config(config).workloads)
    if blind:
        chosen = _blind_programs()
        specs = [s for s in specs if str(s.setup).split(":")[0] in chosen]
    return [f"user:{spec.name}" for spec in specs]


def part_config(part: int, parts: int, config: Path = HELDOUT_CONFIG) -> str:
    """The text of a config holding the ``part``-th (from 1) of ``parts`` consecutive slices
    of ``config``'s workloads, as written there (comments kept), each setup named from the
    repository root (``benchmarks.heldout.<module>:<function>``) so that the config may
    live anywhere."""
    head, *blocks = re.split(r"(?m)^(?=\[\[workload\]\])", config.read_text(encoding="utf-8"))
    size = -(-len(blocks) // parts)
    chosen = blocks[(part - 1) * size:part * size]
    package = ".".join(config.parent.relative_to(REPO).parts)
    return head + "".join(re.sub(r'(?m)^setup = "', f'setup = "{package}.', b)
                          for b in chosen)


def _part(text: str) -> tuple[int, int]:
    """``K/N`` as (K, N), 1 <= K <= N; an InputError otherwise."""
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise InputError(f"--part must be K/N with 1 <= K <= N (say 1/2), got {text!r}")
    return int(match[1]), int(match[2])


def _measure_part(spec: str, keep: str | None, *, cached: bool) -> dict[str, Any]:
    part, parts = _part(spec)
    if parts > len(heldout_names()):
        raise InputError(f"--part {spec}: the held-out suite has only "
                         f"{len(heldout_names())} programs")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / f"heldout_part_{part}_of_{parts}.toml"
        config.write_text(part_config(part, parts), encoding="utf-8")
        return _measure(["--config", str(config), "--only-config"], keep, cached=cached)


def heldout(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The held-out suite's scores from one run's results, or from the parts of a run that
    measured the suite in several processes (on a TPU one process cannot hold the whole
    suite within a command's limit); a program in two parts is an error."""
    names = heldout_names()
    scores = [s for data in parts for s in read_scores(data)
              if s.name in names and not s.sweep_point]
    twice = sorted({s.name for s in scores if [t.name for t in scores].count(s.name) > 1})
    if twice:
        raise InputError("the parts both hold " + ", ".join(n.removeprefix("user:")
                                                             for n in twice))
    found = {s.name for s in scores}
    missing = [n.removeprefix("user:") for n in names if n not in found]
    if not scores:
        raise InputError("the results hold no measured and predicted held-out program (a run "
                         f"of {HELDOUT_CONFIG.relative_to(REPO)} is needed)")
    if missing:
        print(f"not scored (absent, not timed or not predicted): {', '.join(missing)}",
              file=sys.stderr)
    scores.sort(key=lambda s: names.index(s.name))
    print_scores(scores, kernels=True)
    print_worst(scores, "held-out")
    blind = set(heldout_names(blind=True))
    fresh = [s for s in scores if s.name in blind]
    out = {**summary(scores, scores, "the held-out programs", "heldout"),
           "programs": [_program_json(s) for s in scores]}
    if fresh:
        out["blind"] = summary(fresh, fresh, "the blind held-out programs", "blind")
        print(f"blind programs ({len(fresh)}): median error "
              f"{out['blind']['median_error']:.0%}, kernels {out['blind']['kernel_median_error']}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--suite", choices=("catalog", "heldout", "both"), default="catalog")
    parser.add_argument("--from-json", metavar="FILE", nargs="+",
                        help="score a saved results.json; for the held-out suite, the parts "
                             "of one run measured in several processes may be given together")
    parser.add_argument("--out", metavar="DIR",
                        help="keep the measured report (and its results.json) in DIR")
    parser.add_argument("--no-step", action="store_true",
                        help="catalog suite: leave out the shipped training step")
    parser.add_argument("--part", metavar="K/N",
                        help="held-out suite: measure only the K-th of N parts of its programs")
    parser.add_argument("--cached-ceilings", action="store_true",
                        help="reuse the ceilings cache rather than measure the ceilings in "
                             "this run")
    ns = parser.parse_args(argv)
    try:
        if ns.from_json and len(ns.from_json) > 1 and ns.suite != "heldout":
            raise InputError(f"--from-json takes one file for the {ns.suite} suite")
        if ns.part is not None and (ns.suite != "heldout" or ns.from_json):
            raise InputError("--part measures a part of the held-out suite: it goes with "
                             "--suite heldout and without --from-json")
        if ns.suite == "heldout":
            parts = ([results.load(f) for f in ns.from_json] if ns.from_json else
                     [_measure_part(ns.part, ns.out, cached=ns.cached_ceilings)] if ns.part
                     else [_measure(["--config", str(HELDOUT_CONFIG), "--only-config"], ns.out,
                                    cached=ns.cached_ceilings)])
            out = heldout(parts)
        elif ns.suite == "both":
            data = (results.load(ns.from_json[0]) if ns.from_json else
                    _measure(["--config", str(HELDOUT_CONFIG)], ns.out,
                             cached=ns.cached_ceilings))
            print("catalog suite")
            first = catalog(data, None, heldout_names())
            print("held-out suite")
            out = {"catalog": first, "heldout": heldout([data])}
        else:
            data = results.load(ns.from_json[0]) if ns.from_json else \
                _measure(_step_argv(ns.no_step), ns.out, cached=ns.cached_ceilings)
            found = any(w.get("name") == STEP_NAME for w in data["workloads"])
            step = STEP_NAME if found and not ns.no_step else None
            out = catalog(data, step)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
