"""Output paths, checked before a run starts (not after it): a result file or folder that cannot be
written is a one-line :class:`~simulator.errors.ConfigError` naming the path as given, so that no
finished run is lost to a typo in ``--out``."""

from __future__ import annotations

import os
from pathlib import Path

from simulator.errors import ConfigError


def _writable_dir(parent: Path, option: str, text: str) -> None:
    """``parent`` (the folder a path given as ``text`` goes into) exists, is a folder, is writable."""
    if parent.exists() and not parent.is_dir():
        raise ConfigError(f"{option} {text!r}: {str(parent)!r} is a file, not a directory")
    if not parent.is_dir():
        raise ConfigError(f"{option} {text!r}: directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {text!r}: directory {str(parent)!r} is not writable")


def check_output_file(text: str, option: str, suffixes: tuple[str, ...], what: str) -> Path:
    """An output path that can be written as given: a file name (not a directory) with one of
    ``suffixes``, in a directory that exists and is writable."""
    p = Path(text)
    if text.endswith(("/", os.sep)) or p.is_dir():
        raise ConfigError(f"{option} {text!r}: is a directory; give a file name, e.g. "
                          f"{p / ('run' + suffixes[0])}")
    if not p.name.lower().endswith(suffixes):
        raise ConfigError(f"{option} {text!r}: unknown format {p.suffix or '(no suffix)'!r}; {what} are written as "
                          f"{', '.join(suffixes)} (the ending picks the format)")
    _writable_dir(p.parent if str(p.parent) else Path("."), option, text)
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(f"{option} {text!r}: the file exists and is not writable")
    return p


def check_output_dir(text: str, option: str) -> Path:
    """An output folder that exists and is writable, or can be made (its nearest existing ancestor is
    a writable folder, and no file stands in the way)."""
    p = Path(text)
    if p.exists():
        if not p.is_dir():
            raise ConfigError(f"{option} {text!r}: is a file, not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise ConfigError(f"{option} {text!r}: directory {text!r} is not writable")
        return p
    ancestor = p.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    _writable_dir(ancestor, option, text)
    return p


__all__ = ["check_output_file", "check_output_dir"]
