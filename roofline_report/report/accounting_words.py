"""A traced call's time in words: the parts of :mod:`roofline_report.analysis.call_accounting`,
the kernels that vary across calls and the stalls that move from kernel to kernel."""

from __future__ import annotations

from roofline_report.analysis.call_accounting import VARIES, CallAccounting
from roofline_report.kinds import Kind
from roofline_report.report.format import Num, decimal, n, percent, plural

__all__ = ["accounting_text"]

M = Kind.MEASURED
# A part, or what the parts leave unexplained, below this share of its call is not worded.
SAID_UNEXPLAINED = 0.005


def accounting_text(a: CallAccounting) -> tuple[str | Num, ...]:
    """Sentences: the table's column sum, the median call in parts that sum to it, every call
    accounted for, the kernels that vary and the stalls."""
    c = a.median_call
    parts: tuple[str | Num, ...] = (
        " The table's kernel times (each kernel's first quartile over the calls) sum to ",
        n(c.table_s, "s", M), ". The median call took ", n(c.program_s, "s", M), ": those ",
        n(c.table_s, "s", M))
    tiny = SAID_UNEXPLAINED * c.program_s
    if c.beyond_s > tiny:
        parts += (", plus ", n(c.beyond_s, "s", M), " that its kernels took beyond their "
                  "first quartiles")
    elif c.beyond_s < -tiny:
        parts += (", less ", n(-c.beyond_s, "s", M), " by which its kernels ran under their "
                  "first quartiles")
    if c.overlap_s < -tiny:
        parts += (", less ", n(-c.overlap_s, "s", M), " counted twice where kernels ran side "
                  "by side")
    elif c.overlap_s > tiny:
        parts += (", plus ", n(c.overlap_s, "s", M), " during which kernels ran but no "
                  "kernel's time holds it (queued behind another)")
    parts += (", dispatch ", n(c.dispatch_s, "s", M), ", loop control ",
              n(c.loop_control_s, "s", M), " and gaps between kernels ", n(c.gaps_s, "s", M))
    if c.unexplained > SAID_UNEXPLAINED:
        parts += (", with ", n(c.residual_s, "s", M), " not told apart")
    parts += (". ",)
    worst = a.worst_residual
    parts += ((f"Each of the {plural(a.count, 'traced call', 'traced calls')} is "
               "accounted for in the same parts"
               + ("" if worst <= SAID_UNEXPLAINED else " to within ")),
              *((percent(worst, M),) if worst > SAID_UNEXPLAINED else ()), ".")
    if a.varying:
        parts += (f" Kernels whose time varied more than {decimal(VARIES, 3)}× across calls: ",)
        for i, v in enumerate(a.varying):
            parts += (("; " if i else "") + f"{v.name} (", n(v.low_s, "s", M), " to ",
                      n(v.high_s, "s", M), ", ", n(v.q1_s, "s", M), " in the table)")
        parts += (".",)
    s = a.stalls
    if s is not None:
        where = ", ".join(f"{name} in {plural(k, 'call', 'calls')}" for name, k in s.kernels[:4])
        more = f" and {len(s.kernels) - 4} more" if len(s.kernels) > 4 else ""
        if s.moving:
            parts += (f" In {s.calls} of {s.of_calls} calls one kernel took ",
                      n(s.low_s, "s", M), " to ", n(s.high_s, "s", M),
                      f", at least {decimal(VARIES, 3)}× its first quartile, and not the same "
                      "kernel "
                      f"each time ({where}{more}): a stall that moves from kernel to kernel, "
                      "as when the host or another process holds a core; its time is in the "
                      "calls' parts above, not in any kernel's row.")
        else:
            took = ((n(s.low_s, "s", M),) if s.low_s == s.high_s else
                    (n(s.low_s, "s", M), " to ", n(s.high_s, "s", M)))
            parts += (f" In {s.calls} of {s.of_calls} calls {s.kernels[0][0]} took ", *took,
                      f", at least {decimal(VARIES, 3)}× its first quartile.")
    return parts
