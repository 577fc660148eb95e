"""The analysis (no jax): pure functions from the observations of results.json to what the
report shows.

:func:`roofline_report.analysis.analyse.analyse` is the entry point: it returns one typed
:class:`roofline_report.analysis.records.Analysis`. The modules it uses: ``roofs`` (roofs as
data: compute per dtype, bandwidth per memory level, rates, floors), ``levels`` (memory levels
from the working-set sweep), ``predict`` (the model), ``kernels`` (a program's kernels),
``explain`` (reasons for a miss), ``miss`` (the error of a prediction), ``stats`` (statistics of
samples), ``reconcile`` (three-way accounting), ``study`` and ``seed_model`` (the seed's
teaching), ``experiments`` (the lab notebook), ``comm`` (the communication model, with
``comm_alpha_beta``, ``comm_network``, ``comm_step`` and ``comm_projection``) and ``gate`` (the
regression gate of ``compare``).
"""
