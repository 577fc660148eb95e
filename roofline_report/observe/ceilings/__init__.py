"""This machine's ceilings, measured in the manner of the Empirical Roofline Toolkit:
compute per dtype, streaming bandwidth, the working-set sweep, operation rates and floors."""
