"""Config files and mappings -> kernel configs, with strict types.

TOML (``load_toml``) and plain mappings (``config_from_mapping``) are read into the frozen config
dataclasses of :mod:`simulator.kernels.sm100_config` / :mod:`simulator.kernels.sm90_config`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import fields
from typing import Any

from simulator.errors import ConfigError


def load_toml(path: str) -> dict:
    """Read a TOML file (tomllib on 3.11+, tomli before)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _accepts(tp: Any, value: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return isinstance(value, tp)


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(tp))
    return "None" if tp is type(None) else getattr(tp, "__name__", str(tp))


def config_from_mapping(cls: type, mapping: dict, origin: str = "mapping") -> Any:
    """Build ``cls`` (Sm100GemmConfig / Sm90GemmConfig) from a dict of field values.

    Unknown key -> ConfigError listing the valid fields; a value of the wrong type -> ConfigError
    naming the field, the value and the expected type. (Integers given as whole floats, e.g. 8192.0,
    are accepted for int fields.)
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a config dataclass")
    types_ = _field_types(cls)
    kwargs: dict[str, Any] = {}
    for key, value in mapping.items():
        if key not in types_:
            raise ConfigError(f"{key}={value!r} ({origin}): unknown {cls.__name__} field; valid fields: "
                              f"{', '.join(types_)}")
        tp = types_[key]
        if (isinstance(value, float) and value.is_integer() and _accepts(tp, 0) and not _accepts(tp, 0.5)):
            value = int(value)
        if not _accepts(tp, value):
            raise ConfigError(f"{key}={value!r} ({origin}): expected {_type_name(tp)}, got {type(value).__name__}")
        kwargs[key] = value
    return cls(**kwargs)
