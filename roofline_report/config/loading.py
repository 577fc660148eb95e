"""Reading a config file: the file's bytes, its TOML and its top-level table (``schema``,
``preset``, ``[budgets]``, ``[[workload]]``), into a
:class:`~roofline_report.config.spec.Config`."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roofline_report.config.budgets import read_budgets
from roofline_report.config.spec import SCHEMA_VERSION, Config, WorkloadSpec
from roofline_report.config.values import check_keys, is_int, present, show, type_name
from roofline_report.config.workloads import read_workload
from roofline_report.errors import InputError
from roofline_report.presets import get_preset

_TOP_KEYS = ("schema", "preset", "budgets", "workload")


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a TOML config file. Raises InputError (only) for any problem."""
    file = Path(path)
    name = file.name or str(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{name}: config file not found") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a folder, not a config file") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read the config file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    return loads_config(text, source=name, base_dir=file.resolve().parent)


def loads_config(text: str, *, source: str = "<config>", base_dir: Path | None = None) -> Config:
    """Parse and validate TOML text; ``source`` names it in messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: TOML syntax error: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: TOML nested too deeply to read") from None
    return config_from_dict(data, source=source, base_dir=base_dir)


def config_from_dict(
    data: Mapping[str, Any], *, source: str = "<config>", base_dir: Path | None = None
) -> Config:
    """Validate an already-parsed config (the TOML document as a dict). InputError only.

    A None value counts as an absent key (TOML has no null), so
    ``config_from_dict(config.to_dict())`` gives back an equal Config.
    """
    where = f"{source}:"
    if not isinstance(data, Mapping):
        raise InputError(f"{where} expected a table at the top level, got {type_name(data)}")
    data = present(data)
    check_keys(data, _TOP_KEYS, where)
    schema = data.get("schema", SCHEMA_VERSION)
    if not is_int(schema) or schema != SCHEMA_VERSION:
        raise InputError(
            f"{where} unsupported schema {show(schema)}; this version reads schema = 1"
        )
    preset = data.get("preset")
    if preset is not None:
        if not isinstance(preset, str):
            raise InputError(f"{where} preset must be a string, got {type_name(preset)}")
        if not preset.strip():
            raise InputError(f"{where} preset: give a chip preset's name (see --list-presets), "
                             "or leave the key out to match this device")
        try:
            preset = get_preset(preset).name
        except InputError as exc:
            raise InputError(f"{where} {exc}") from None
    budgets = read_budgets(data.get("budgets"), where)
    tables = data.get("workload")
    if tables is None:
        raise InputError(f"{where} no workloads: add at least one [[workload]] table")
    if isinstance(tables, Mapping):
        raise InputError(f"{where} write [[workload]] (an array of tables), not [workload]")
    if not isinstance(tables, list):
        raise InputError(f"{where} 'workload' must be an array of tables, got {type_name(tables)}")
    if not tables:
        raise InputError(f"{where} no workloads: add at least one [[workload]] table")
    workloads: list[WorkloadSpec] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables, start=1):
        spec = read_workload(table, index, where)
        if spec.name in seen:
            raise InputError(
                f"{where} workload #{index}: duplicate name {show(spec.name)} "
                f"(also workload #{seen[spec.name]}); give each a distinct 'name'"
            )
        seen[spec.name] = index
        workloads.append(spec)
    unsharded = tuple(w for w in workloads if not w.is_sharded)
    sharded = tuple(w for w in workloads if w.is_sharded)
    return Config(preset, budgets, unsharded, source, base_dir, sharded)
