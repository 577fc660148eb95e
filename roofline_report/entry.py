"""The installed ``roofline-report`` command's entry point.

Its SIGINT handler goes in before the command line's own imports (the analysis, pydantic,
matplotlib) are loaded, so Ctrl-C at any moment of a build, that import included, stops it with
one line and exit 130, as ``python generate.py`` and ``python -m roofline_report`` do.
"""

from roofline_report import interrupts


def main() -> int:
    """Install the handler, then run the command line under it."""
    interrupts.install()  # first: Ctrl-C stops the build cleanly from here on

    def _main() -> int:
        from roofline_report.cli import main as cli_main

        return cli_main()

    return interrupts.run(_main)
