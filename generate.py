"""Build the roofline report: ``python generate.py --help`` lists the options."""

from roofline_report.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
