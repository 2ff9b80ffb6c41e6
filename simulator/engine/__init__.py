"""Running a kernel model: ``simulate`` (the event loop and its result) and the trace it records.

``simulate``/``SimResult`` load on first use, so that ``simulator.engine.trace`` (the shared trace
format) imports without SimPy — the GPU machine decodes measured traces with it and has no SimPy.
"""

from __future__ import annotations

import importlib

__all__ = ["SimResult", "simulate"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("simulator.engine.run"), name)
    raise AttributeError(f"module 'simulator.engine' has no attribute {name!r}")
