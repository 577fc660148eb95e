"""``python -m roofline_report`` is the same as ``roofline-report``."""

from roofline_report import interrupts

interrupts.install()  # first: Ctrl-C stops the build cleanly from here on


def _main() -> int:
    from roofline_report.cli import main

    return main()


raise SystemExit(interrupts.run(_main))
