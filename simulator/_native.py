"""Compiled or pure Python: which implementation of the simulator's hot modules is loaded.

``setup.py`` compiles the modules in :data:`HOT_MODULES` with Cython in pure-Python mode (the
``.py`` file is the source; the ``.pxd`` file beside it adds C types) when it can, and writes
:data:`BUILD_RECORD` with a digest of the sources it compiled. At import, the compiled extensions
are used only if every one of them is there and was built from the current sources; otherwise
all of them load from their ``.py`` files, which give the same results, only slower. That
happens when:

* the install had no C compiler (or Cython failed): ``pip install -e .`` says so and carries on;
* a source changed since the build (rebuild with ``pip install -e .``);
* ``WSIM_PURE_PYTHON=1`` is set (to compare, or to debug with Python tools).

:data:`COMPILED` and :data:`REASON` say which, and why. Nothing here imports a hot module.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

#: The modules compiled by setup.py (dotted names), all or none loaded compiled.
HOT_MODULES = (
    "simulator.engine.fast_env",
    "simulator.protocol.clock",
    "simulator.protocol.mbarrier",
    "simulator.protocol.pipeline",
    "simulator.machine.memory",
    "simulator.kernels.common",
    "simulator.kernels.sm100_tma_ws",
    "simulator.kernels.sm90_tma_ws",
)

#: Written by setup.py next to this file: {"modules": {name: digest of its .py and .pxd}}.
BUILD_RECORD = "_native_build.json"

#: Set to 1 to load the pure-Python modules even when compiled ones are available.
PURE_PYTHON_ENV = "WSIM_PURE_PYTHON"

_PACKAGE_DIR = Path(__file__).resolve().parent
_ROOT = _PACKAGE_DIR.parent

COMPILED = False
REASON = "not checked yet"


def source_path(module: str, root: Path = _ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def source_digest(module: str, root: Path = _ROOT) -> str:
    """SHA-256 of a hot module's ``.py`` and ``.pxd`` (what its compiled form was built from)."""
    h = hashlib.sha256()
    py = source_path(module, root)
    for path in (py, py.with_suffix(".pxd")):
        h.update(path.name.encode())
        h.update(path.read_bytes() if path.exists() else b"")
    return h.hexdigest()


def build_record() -> dict:
    """What setup.py recorded of the last build (module digests, Cython version), or {}."""
    try:
        return json.loads((_PACKAGE_DIR / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return {}


def _extension_path(module: str) -> Path | None:
    base = source_path(module)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        p = base.with_name(base.stem + suffix)
        if p.exists():
            return p
    return None


def _check() -> tuple[bool, str]:
    """(use the compiled modules?, why or why not)."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return False, f"{PURE_PYTHON_ENV}={os.environ[PURE_PYTHON_ENV]}"
    missing = [m for m in HOT_MODULES if _extension_path(m) is None]
    if len(missing) == len(HOT_MODULES):
        return False, "not compiled (no C compiler or Cython at install time; pip install -e . builds it)"
    if missing:
        return False, f"compiled modules missing: {', '.join(missing)} (rebuild with pip install -e .)"
    try:
        built = json.loads((_PACKAGE_DIR / BUILD_RECORD).read_text())["modules"]
    except (OSError, ValueError, KeyError, TypeError):
        return False, f"no readable {BUILD_RECORD} (rebuild with pip install -e .)"
    stale = [m.rsplit(".", 1)[-1] for m in HOT_MODULES if built.get(m) != source_digest(m)]
    if stale:
        return False, (f"sources changed since the build: {', '.join(stale)} "
                       "(rebuild with pip install -e .)")
    return True, "compiled with Cython"


class _PurePythonFinder:
    """Loads the hot modules from their ``.py`` files (ahead of the compiled extensions)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in HOT_MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


def install() -> None:
    """Decide once, before any hot module is imported (called from ``simulator/__init__.py``)."""
    global COMPILED, REASON
    loaded = [m for m in HOT_MODULES if m in sys.modules]
    if loaded:       # too late to choose: report what is there
        COMPILED = all(not str(getattr(sys.modules[m], "__file__", "")).endswith(".py") for m in loaded)
        REASON = "compiled with Cython" if COMPILED else "loaded as pure Python"
        return
    COMPILED, REASON = _check()
    if not COMPILED and not any(isinstance(f, _PurePythonFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PurePythonFinder())


def status() -> str:
    """One line: how the hot modules run."""
    return "compiled core" if COMPILED else f"pure-Python core ({REASON})"
