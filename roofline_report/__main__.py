"""``python -m roofline_report`` is the same as ``roofline-report``."""

from roofline_report.cli import main

raise SystemExit(main())
