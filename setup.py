"""Build the simulator's optional compiled core (everything else is in pyproject.toml).

``pip install -e .`` compiles the hot modules listed in ``simulator/_native.py`` with Cython in
pure-Python mode (the ``.py`` files are the source, the ``.pxd`` files beside them add C types).
Compiling never fails the install: without Cython or a C compiler, or if a module does not
compile, it says why and the simulator runs the same ``.py`` files as plain Python (same
results, slower). ``WSIM_PURE_PYTHON=1`` at install time skips the build.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent

# simulator/_native.py knows the module list and the source digest; load it without importing
# the package (nothing the build needs is installed yet).
_spec = importlib.util.spec_from_file_location("_wsim_native", ROOT / "simulator" / "_native.py")
native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native)

#: Per-module Cython directives. The kernel models type their hot locals with annotations;
#: elsewhere the .pxd files carry all the types (annotations there are documentation only).
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "embedsignature": False}
MODULE_DIRECTIVES = {
    "simulator.kernels.sm100_tma_ws": {"annotation_typing": True},
    "simulator.kernels.sm90_tma_ws": {"annotation_typing": True},
    "simulator.engine.fast_env": {"boundscheck": False, "wraparound": False},
    "simulator.machine.memory": {"wraparound": False},
}
#: No fused multiply-add contraction: C doubles must round exactly as Python floats do.
CFLAGS = ["-O2", "-ffp-contract=off"]


def _say(msg: str) -> None:
    print(f"wsim: {msg}", file=sys.stderr)


def ext_modules() -> list:
    if os.environ.get(native.PURE_PYTHON_ENV, "") not in ("", "0"):
        _say(f"{native.PURE_PYTHON_ENV} is set: not compiling; the simulator runs as pure Python")
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError as e:
        _say(f"Cython is not available ({e}): the simulator runs as pure Python (same results, slower)")
        return []
    exts = []
    for name in native.HOT_MODULES:
        src = str(native.source_path(name, ROOT).relative_to(ROOT))
        directives = dict(DIRECTIVES, **MODULE_DIRECTIVES.get(name, {}))
        try:
            exts += cythonize([Extension(name, [src], extra_compile_args=CFLAGS)], compiler_directives=directives,
                              build_dir="build/cython", quiet=True)
        except Exception as e:  # noqa: BLE001 - any Cython failure: fall back to pure Python
            _say(f"Cython could not translate {src} ({type(e).__name__}: {e}); "
                 "the simulator runs as pure Python (same results, slower)")
            return []
    return exts


class OptionalBuildExt(build_ext):
    """``build_ext`` that never fails the install: all modules compile, or none is used."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        # The record is what makes simulator/_native.py trust the extensions: remove it first, so
        # that a build that fails (or compiles nothing) leaves the pure-Python modules in charge.
        record = Path(self.get_ext_fullpath("simulator._native")).parent / native.BUILD_RECORD
        record.unlink(missing_ok=True)
        built = {e.name for e in self.extensions}
        if built != set(native.HOT_MODULES):
            return
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - no compiler, compiler error, ...: fall back
            _say(f"compiling the simulator core failed ({type(e).__name__}: {e}); "
                 "it runs as pure Python (same results, slower)")
            return
        digests = {name: native.source_digest(name, ROOT) for name in native.HOT_MODULES}
        record.parent.mkdir(parents=True, exist_ok=True)
        import Cython
        record.write_text(json.dumps({"modules": digests, "cython": Cython.__version__}, indent=1) + "\n")
        _say(f"compiled the simulator core ({len(digests)} modules); record in {record}")


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
