"""roofline-report's version (no imports: every part of the package may name it, and the
package's ``__init__`` gives it as ``roofline_report.__version__``)."""

__version__ = "0.1.0"
