"""Importing a workload's function, setup or reference from its import path."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roofline_report.config.values import IMPORT_PATH_RE, show, type_name
from roofline_report.errors import InputError


def import_callable(
    path: str, *, config_name: str, workload: str, base_dir: str | os.PathLike[str] | None = None
) -> Callable[..., Any]:
    """Import ``package.module:attr`` and return it; it must be callable.

    ``base_dir`` (the config file's folder) and the current directory are put at the front of
    ``sys.path`` first (and left there, so the module's own later imports work). Any failure,
    including an exception raised while the module runs, becomes an InputError such as
    ``"workloads.toml: workload 'my matmul': cannot import 'examples.nope:f': No module named
    'examples.nope'"``.
    """
    here = f"{config_name}: workload {show(workload)}:"
    if not isinstance(path, str) or not IMPORT_PATH_RE.fullmatch(path):
        raise InputError(f"{here} {show(path)} is not an import path 'package.module:function'")
    for folder in (Path.cwd(), None if base_dir is None else Path(base_dir)):
        if folder is not None and str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    module_name, attribute = path.split(":", 1)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"{here} cannot import {show(path)}: {exc}") from None
    except (Exception, SystemExit) as exc:
        raise InputError(
            f"{here} cannot import {show(path)}: {type(exc).__name__} while importing "
            f"{module_name}: {exc}"
        ) from None
    for depth, part in enumerate(attribute.split(".")):
        try:
            target = getattr(target, part)
        except AttributeError:
            owner = ".".join([module_name, *attribute.split(".")[:depth]])
            raise InputError(
                f"{here} cannot import {show(path)}: {owner} has no {show(part)}"
            ) from None
    if not callable(target):
        raise InputError(f"{here} {show(path)} is {type_name(target)}, not a function")
    return target  # type: ignore[no-any-return]
