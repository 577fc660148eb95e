"""Build the roofline report: ``python generate.py --help`` lists the options."""

if __name__ == "__main__":
    from roofline_report import interrupts

    interrupts.install()  # first: Ctrl-C stops the build cleanly from here on

    def _main() -> int:
        from roofline_report.cli import main

        return main()

    raise SystemExit(interrupts.run(_main))
