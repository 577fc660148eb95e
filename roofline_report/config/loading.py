"""Reading a config file: the file's bytes and its TOML, validated by the models of
:mod:`roofline_report.config.models` into a :class:`~roofline_report.config.spec.Config`."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from roofline_report.config.messages import describe
from roofline_report.config.models import ConfigFile
from roofline_report.config.spec import Config
from roofline_report.errors import InputError


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
    """Validate an already-parsed config (the TOML document as a dict) with the models of
    :mod:`roofline_report.config.models`. InputError only, its one line from
    :func:`roofline_report.config.messages.describe`.

    A None value counts as an absent key (TOML has no null), so
    ``config_from_dict(config.to_dict())`` gives back an equal Config.
    """
    try:
        document = _present(data)
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to read") from None
    try:
        validated = ConfigFile.model_validate(document)
    except ValidationError as exc:
        raise InputError(f"{source}: {describe(exc, document)}") from None
    return validated.to_config(source, base_dir)


def _present(value: Any) -> Any:
    """``value`` with every table (at any depth) a dict without its None values; lists keep
    theirs (a None in a list is a value, and refused as one)."""
    if isinstance(value, Mapping):
        return {k: _present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_present(v) for v in value]
    return value
