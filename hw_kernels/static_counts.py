"""The CuTe-DSL twins' barrier arrival counts, read from their source without the DSL (pure Python).

Each twin states in its own code what it arrives with: ``arrival_counts`` in ``sm90_gemm.py`` (its
``mine`` table, before it compares with ``simulator.protocol.arrivals``) and
``Sm100TmaWsGemm._counts_this_code_arrives_with`` in ``sm100_gemm.py``. This module parses those two
functions with :mod:`ast` and evaluates them with the module constants they use, so that the counts
can be compared with the simulator's on a machine without nvidia-cutlass-dsl (``wsim check``'s
catalogue and ``tests/test_check.py``). The comparison with the model stays outside the twins:
here, only what their code says.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent


def _module(name: str) -> ast.Module:
    return ast.parse((HERE / name).read_text(), name)


def _constants(body: list[ast.stmt], names: dict) -> dict:
    """Module- or class-level ``NAME = <expression of constants>`` assignments, evaluated in order."""
    out = dict(names)
    for node in body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = eval(compile(ast.Expression(node.value), "<twin>", "eval"),  # noqa: S307
                                               {"__builtins__": {"len": len}}, out)
            except Exception:  # noqa: BLE001 - an assignment that needs the DSL: not a count constant
                continue
    return out


def _function(tree: ast.AST, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise LookupError(f"{name}: not found in the twin's source")


def _no_simulator_import(name, *args, **kw):
    """``__import__`` for the twins' functions: the simulator is hidden, so they answer with their own counts."""
    if name.startswith("simulator"):
        raise ImportError(name)
    return builtins.__import__(name, *args, **kw)


def _define(fn: ast.FunctionDef, namespace: dict):
    code = compile(ast.Module(body=[fn], type_ignores=[]), "<twin>", "exec")
    env = dict(namespace)
    env["__builtins__"] = {**vars(builtins), "__import__": _no_simulator_import}
    exec(code, env)  # noqa: S102 - the project's own source file, one function
    return env[fn.name]


def sm90_twin_counts(cluster_m: int, cluster_n: int, schedule: str, consumer_wgs: int = 2) -> dict[str, int]:
    """What ``hw_kernels/sm90_gemm.py`` arrives with: mainloop full and empty, the epilogue named
    barrier, the ping-pong math-order barrier (keys as the twin names them); ``consumer_wgs``: the cooperative
    kernel's math warpgroups (1 at tile_m = 64)."""
    tree = _module("sm90_gemm.py")
    consts = _constants(tree.body, {})
    fn = _define(_function(tree, "arrival_counts"), consts)
    return dict(fn(cluster_m, cluster_n, schedule, consumer_wgs))


def sm100_twin_counts(use_2sm: bool, cluster_m: int, cluster_n: int) -> dict[str, int]:
    """What ``hw_kernels/sm100_gemm.py`` arrives with (``_counts_this_code_arrives_with`` with the
    formula's multicast peers: the DSL's cluster layout gives the same on a GPU)."""
    tree = _module("sm100_gemm.py")
    consts = _constants(tree.body, {})
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Sm100TmaWsGemm")
    class_consts = _constants(cls.body, consts)
    fn = _define(_function(cls, "_counts_this_code_arrives_with"), consts)
    me = SimpleNamespace(cluster_mn=(cluster_m, cluster_n), atom_thr_m=2 if use_2sm else 1,
                         cluster_size=cluster_m * cluster_n, use_2sm=use_2sm,
                         EPILOGUE_WARPS=class_consts["EPILOGUE_WARPS"],
                         NUM_EPILOGUE_THREADS=class_consts["NUM_EPILOGUE_THREADS"])
    return dict(fn(me, None))


#: The twins' count names -> the barrier names of the simulator's knobs (simulator.protocol.knobs).
SM90_TO_MODEL = {"full": "mainloop.full", "empty": "mainloop.empty", "epilogue": "epilogue_named",
                 "order": "math_order"}
SM100_TO_MODEL = {"mainloop.producer": "mainloop.full", "mainloop.consumer": "mainloop.empty",
                  "accumulator.producer": "accumulator.full", "accumulator.consumer": "accumulator.empty",
                  "clc.producer": "clc.full", "clc.consumer": "clc.empty",
                  "clc_throttle.producer": "clc_throttle.full", "clc_throttle.consumer": "clc_throttle.empty",
                  "epilogue_throttle.cta0": "epilogue_throttle.cta0", "epilogue_throttle.peer": "epilogue_throttle.peer",
                  "tmem_alloc": "tmem_alloc", "tmem_dealloc": "tmem_dealloc"}


__all__ = ["sm90_twin_counts", "sm100_twin_counts", "SM90_TO_MODEL", "SM100_TO_MODEL"]


def twin_rows(report) -> list[dict]:
    """For every grid config a CuTe-DSL twin implements (SM100 twin: CLC, no C, no overlapping
    accumulators; SM90 twin: no C): the twin's counts (read from its source) against the counts the
    model's barriers are initialised with in that config (``report``: a ``simulator.engine.check``
    CheckReport); one row per twin, mode and cluster: ``wsim check``'s catalogue."""
    from simulator.engine.check import model_counts

    rows: dict[tuple, dict] = {}
    for r in report.cases:
        cfg = r.case.config
        if getattr(cfg, "arch_name", "") == "sm90":
            if cfg.read_c:
                continue
            wgs = cfg.num_consumer_warpgroups
            twin = sm90_twin_counts(cfg.cluster_m, cfg.cluster_n, cfg.schedule, wgs)
            names = SM90_TO_MODEL
            mode = cfg.schedule + (f", {wgs} math warpgroup" if cfg.schedule == "cooperative" and wgs != 2 else "")
            if cfg.schedule != "pingpong":
                twin.pop("order", None)
            which = "hw_kernels/sm90_gemm.py arrival_counts"
        else:
            if cfg.read_c or cfg.overlapping_accum or cfg.tile_scheduler != "clc":
                continue
            twin = sm100_twin_counts(cfg.use_2sm, cfg.cluster_m, cfg.cluster_n)
            names, mode = SM100_TO_MODEL, "2-SM" if cfg.use_2sm else "1-SM"
            if cfg.cluster_m * cfg.cluster_n == 1:
                twin.pop("epilogue_throttle.peer", None)
            if not twin.get("tmem_dealloc"):
                twin.pop("tmem_dealloc", None)    # 0: the seed never initialises the barrier
            which = "hw_kernels/sm100_gemm.py Sm100TmaWsGemm._counts_this_code_arrives_with"
        model = model_counts(r.case)
        pairs = {names[k]: [v, model.get(names[k])] for k, v in sorted(twin.items(), key=lambda x: names[x[0]])}
        key = (which, mode, cfg.cluster_m, cfg.cluster_n)
        row = rows.setdefault(key, {"twin": which, "mode": mode, "cluster": f"{cfg.cluster_m}x{cfg.cluster_n}",
                                    "configs": [], "counts": pairs, "equal": True})
        row["configs"].append(r.case.id)
        row["equal"] = row["equal"] and all(a == b for a, b in pairs.values()) and pairs == row["counts"]
    return list(rows.values())
