"""The report body, assembled: which sections a report shows and in what order.

Each section is defined once, as a function from the view model to a
:class:`~roofline_report.report.blocks.Section`, and both formats are rendered from these. The view
model is :func:`roofline_report.report.views.view_model`'s
:class:`~roofline_report.report.view_records.ViewModel`: typed records of display strings and
:class:`~roofline_report.report.format.Num` values. The sections live beside this module:
``seed_sections.py`` (the seed's teaching steps and the catalog), ``machine_section.py`` (the
measured machine), ``program_sections.py`` (the user's programs, the three-way accounting, the
per-kernel roofline), ``lab_sections.py`` (the lab notebook and the sweeps),
``scale_out_sections.py`` (a spec sheet and the communication roofline), all built with
``section_parts.py``'s shorthands. They are re-exported here.
"""

from __future__ import annotations

from roofline_report.report.blocks import BulletList, Document, Group, Section, Strong, text
from roofline_report.report.lab_sections import lab, sweeps
from roofline_report.report.machine_section import measured
from roofline_report.report.model_words import MODEL_TEXT
from roofline_report.report.program_sections import (
    KERNEL_COLUMNS,
    kernels,
    programs,
    reconciliation,
    summary,
)
from roofline_report.report.scale_out_sections import preset, sharding
from roofline_report.report.section_parts import VM, MissingFigure
from roofline_report.report.seed_sections import (
    catalog,
    compiled,
    exercise,
    experiment,
    lowered,
    model,
)
from roofline_report.report.trace_view import trace_section

__all__ = ["KERNEL_COLUMNS", "MODEL_TEXT", "MissingFigure", "catalog", "compiled", "document",
           "exercise", "experiment", "kernels", "lab", "lowered", "measured", "model", "preset",
           "programs", "reconciliation", "sharding", "skipped", "summary", "sweeps"]


def skipped(vm: VM) -> Section | None:
    """What this run left out, or None when it left nothing out."""
    if not vm.skipped:
        return None
    return Section("Not available in this run", (BulletList(tuple(
        text(Strong(str(item["what"])), ": ", str(item["reason"])) for item in vm.skipped)),),
        id="skipped")


def _user_document(vm: VM) -> Document:
    """A report about the user's programs: theirs first, then this machine and the accounting;
    the seed's teaching sections, the catalog and the lab only when the run asked for them."""
    # A profile read from a trace has no StableHLO to account three ways.
    accounting = reconciliation(vm) if vm.reconciliation or not vm.trace else None
    main = tuple(s for s in (summary(vm), trace_section(vm.trace), programs(vm), kernels(vm),
                             measured(vm, figure=summary(vm) is None), accounting)
                 if s is not None)
    also = tuple(s for s in (lab(vm) if vm.lab.rows else None,
                             sweeps(vm) if vm.sweeps.available else None, preset(vm),
                             sharding(vm) if vm.sharding.available else None,
                             skipped(vm)) if s is not None)
    groups = [Group("", main, numbered=True)]
    if also:
        groups.append(Group("Also in this run", also))
    return Document(tuple(groups), figures=tuple(vm.figures))


def document(vm: VM) -> Document:
    """The whole report body: the seed's steps, numbered, then what lies beyond the seed."""
    if not vm.teaching:
        return _user_document(vm)
    seed = tuple(s for s in (lowered(vm), compiled(vm), model(vm), experiment(vm), exercise(vm),
                             measured(vm), reconciliation(vm), kernels(vm), catalog(vm))
                 if s is not None)
    beyond = tuple(s for s in (programs(vm), lab(vm), sweeps(vm), preset(vm), sharding(vm),
                               skipped(vm)) if s is not None)
    return Document((Group("", seed, numbered=True), Group("Beyond the seed", beyond)),
                    figures=tuple(vm.figures))
