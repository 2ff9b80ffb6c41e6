"""wsim: a cycle-approximate simulator of CUTLASS's warp-specialized GEMM kernels.

Layout (imports point one way: ``views`` -> ``engine`` -> ``kernels`` -> ``protocol``, ``machine``
-> ``errors``):

* :mod:`simulator.machine`: sourced arch constants and the L2/HBM memory system;
* :mod:`simulator.protocol`: mbarriers, CUTLASS pipelines, arrival counts, knobs, deadlock analysis;
* :mod:`simulator.kernels`: one config module and one model module per kernel, tile schedulers;
* :mod:`simulator.engine`: the event loop (``simulate``) and the trace it records;
* :mod:`simulator.views`: reports, CLI, Perfetto, plots, stall breakdowns.

The public API is importable from here (loaded on first use, so that ``simulator.protocol.arrivals``
stays importable from a CuTe-DSL kernel without SimPy or numpy).
"""

from __future__ import annotations

import importlib

from simulator import _native

_native.install()   # compiled or pure-Python hot modules: decided before any of them loads

_PUBLIC = {
    "simulate": "simulator.engine.run",
    "SimResult": "simulator.engine.run",
    "ArchSpec": "simulator.machine.arch",
    "get_arch": "simulator.machine.arch",
    "Sm100GemmConfig": "simulator.kernels.sm100_config",
    "Sm90GemmConfig": "simulator.kernels.sm90_config",
    "ProtocolKnobs": "simulator.protocol.knobs",
    "LateStart": "simulator.kernels.launch",
    "ConfigError": "simulator.errors",
    "Trace": "simulator.engine.trace",
    "tune": "simulator.engine.tune",
    "TuneResult": "simulator.engine.tune",
    "run_sweep": "simulator.engine.sweep",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'simulator' has no attribute {name!r}")
