"""The user's workloads, read from a TOML file (``--config FILE``).

Schema (every key not listed is an error, so typos are caught)::

    schema = 1                       # optional; only 1 exists
    preset = "H100"                  # optional; a chip preset name or alias (see presets.py)

    [budgets]                        # optional; hypothetical budgets replacing 100 GFLOP/s, 20 GB/s
    peak = "200 GFLOP/s"             # a rate string (roofline_report.units) or a number in FLOP/s
    bandwidth = "25 GB/s"            # a rate string or a number in bytes/s

    [[workload]]                     # one table per workload; at least one
    name = "my matmul"               # optional display name; defaults to the function's name
    function = "my_workloads:scaled_matmul"   # required: package.module:function
    dims = { n = 256 }               # named dimensions: positive integers
    args = [                         # the function's positional arguments, in order
      { shape = ["n", "n"], dtype = "float32" },
      { shape = ["n", 64], dtype = "bfloat16" },   # entries: a positive int or a name in dims
    ]
    sweep = { n = [64, 128, 256] }   # optional: values for named dims (each name must be in dims)
    reference = "my_workloads:scaled_matmul_numpy"   # optional NumPy reference for the check
    rtol = 2e-5                      # optional tolerances for the check (non-negative, finite);
    atol = 2e-5                      # by default the result dtype's (roofline_report.tolerances)

    [[workload]]                     # a program whose arguments are made by code
    name = "transformer step"
    setup = "transformer:setup"      # returns (fn, args) or (fn, args, kwargs); called with
    dims = { batch = 8 }             # the dims as keyword arguments (or none); no 'args',
                                     # 'function', 'sweep' or 'mesh'; 'reference', 'rtol'
                                     # and 'atol' as above

    [[workload]]                     # a sharded workload: analysed on a mesh of devices
    name = "matmul, contracting axis"
    function = "my_workloads:scaled_matmul"
    dims = { m = 256, k = 512, n = 128 }
    args = [ { shape = ["m", "k"], dtype = "float32" }, { shape = ["k", "n"], dtype = "float32" } ]
    mesh = { d = 8 }                 # mesh axis name = size; at most MAX_MESH_DEVICES devices
    partition = [ ["", "d"], ["d", ""] ]   # per argument, per dimension: an axis or "" (whole)
    out_partition = ["", ""]         # optional, same form for the result; default replicated

Rules:

* ``shape`` is a list (``[]`` is a scalar) whose entries are positive integers or names in
  ``dims``; ``dtype`` is one of :data:`DTYPES`.
* Dimensions are at most :data:`MAX_DIM`; a sweep gives at most :data:`MAX_SWEEP_POINTS` points
  (the cartesian product of its value lists, duplicates removed).
* ``mesh`` makes a workload sharded: it is not measured in the main process (``workloads``
  holds only the unsharded ones) but listed in ``Config.sharded`` and analysed in the sharding
  child process (``roofline_report.observe.sharding``), which has :data:`MAX_MESH_DEVICES` devices.
  ``partition`` is required with a mesh and refused without one; each dimension it shards must
  be divisible by the axis size at the declared dims, an axis shards at most one dimension of an
  argument, and a sharded workload cannot have a ``sweep``. ``out_partition`` is checked against
  the result (its rank, divisibility) only in the child, where the result's shape is known.
* Workload names are unique. Import paths are ``module.path:attribute`` with Python identifiers;
  they are imported (by :func:`import_callable`) with the config file's folder and the current
  directory on ``sys.path``, so ``my_workloads:f`` finds ``my_workloads.py`` next to the config.

Every problem is an :class:`~roofline_report.errors.InputError` whose one-line message names the
file, the workload (by name, or ``#k`` counting from 1) and the problem. Nothing here imports jax.

Modules: :mod:`~roofline_report.config.loading` reads the file and its TOML,
:mod:`~roofline_report.config.models` validates it (pydantic models of the file, its
``[budgets]``, each ``[[workload]]`` and its arguments, with the checks between keys),
:mod:`~roofline_report.config.messages` words a validation error as the one line the user reads,
:mod:`~roofline_report.config.spec` holds the validated records (:class:`Config`,
:class:`WorkloadSpec`), :mod:`~roofline_report.config.values` what those share (limits,
patterns, the check of a workload's name, the short forms of a value in a message), and
:mod:`~roofline_report.config.imports` imports a workload's functions.
"""

from __future__ import annotations

from roofline_report.config.imports import import_callable
from roofline_report.config.loading import config_from_dict, load_config, loads_config
from roofline_report.config.spec import (
    DTYPES,
    MAX_MESH_DEVICES,
    MAX_SWEEP_POINTS,
    SCHEMA_VERSION,
    ArgSpec,
    Budgets,
    Config,
    DimRef,
    Partition,
    Shape,
    WorkloadSpec,
)
from roofline_report.config.values import MAX_DIM, name_problem

__all__ = [
    "DTYPES",
    "MAX_DIM",
    "MAX_MESH_DEVICES",
    "MAX_SWEEP_POINTS",
    "SCHEMA_VERSION",
    "ArgSpec",
    "Budgets",
    "Config",
    "DimRef",
    "Partition",
    "Shape",
    "WorkloadSpec",
    "config_from_dict",
    "import_callable",
    "load_config",
    "loads_config",
    "name_problem",
]
