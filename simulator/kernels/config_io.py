"""Config files and mappings -> kernel configs, with strict types.

TOML (``load_toml``, ``load_run_file``) and plain mappings (``config_from_mapping``) are read into
the frozen config dataclasses of :mod:`simulator.kernels.sm100_config` /
:mod:`simulator.kernels.sm90_config`. Nothing is converted: an int field takes a TOML integer
(not ``4096.0``, ``4096.5`` or ``"4096"``), a bool field takes ``true``/``false`` (not ``"false"``
or ``0``). Every problem is a :class:`~simulator.errors.ConfigError` that names the file, the key,
the value and the rule, in one line.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from simulator.errors import ConfigError
from simulator.kernels.gemm_config import field_hints, strict_value, type_name

#: The tables a run file may hold: [config] (kernel config fields), [arch] (``name`` and arch
#: constant overrides), [knobs] (protocol what-ifs).
RUN_FILE_TABLES = ("config", "arch", "knobs")


def load_toml(path: str) -> dict:
    """Read a TOML file (tomllib on 3.11+, tomli before); any problem is one ConfigError line."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    if os.path.isdir(path):
        raise ConfigError(f"{path}: is a directory, not a TOML file")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a TOML file (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not a config file (TOML nested too deeply to read)") from None


def load_run_file(path: str) -> dict[str, dict]:
    """A ``wsim simulate --config`` file: only the tables [config], [arch] and [knobs], each a table."""
    data = load_toml(path)
    unknown = [k for k in data if k not in RUN_FILE_TABLES]
    if unknown:
        raise ConfigError(f"{path}: unknown key or table {unknown[0]!r}; allowed: [config], [arch], [knobs]")
    for key, value in data.items():
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: {key} = {value!r}: expected a table [{key}]")
    return {k: dict(data.get(k, {})) for k in RUN_FILE_TABLES}


def _field_types(cls: type) -> dict[str, Any]:
    hints = field_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def config_from_mapping(cls: type, mapping: Mapping, origin: str = "mapping") -> Any:
    """Build ``cls`` (Sm100GemmConfig / Sm90GemmConfig) from a dict of field values.

    Unknown key -> ConfigError listing the valid fields; a value of the wrong type -> ConfigError
    naming the field, the value and the expected type. Nothing is converted (``4096.0`` is not an
    int, ``"true"`` is not a bool).
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a config dataclass")
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{origin}: expected a table of {cls.__name__} fields, got {type(mapping).__name__}")
    types_ = _field_types(cls)
    kwargs: dict[str, Any] = {}
    for key, value in mapping.items():
        if key not in types_:
            raise ConfigError(f"{key}={value!r} ({origin}): unknown {cls.__name__} field; valid fields: "
                              f"{', '.join(types_)}")
        tp = types_[key]
        ok, value = strict_value(tp, value)
        if not ok:
            raise ConfigError(f"{key}={mapping[key]!r} ({origin}): expected {type_name(tp)}, "
                              f"got {type(mapping[key]).__name__}")
        kwargs[key] = value
    return cls(**kwargs)
