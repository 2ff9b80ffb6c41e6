"""The fast engine and the SimPy reference give bit-identical results over a config matrix.

Both engines run the same role code; they differ in the event loop (and, when it is built, the
compiled core). ``SimResult.fingerprint`` is what must agree exactly: cycles, time, HBM bytes, L2
hits and misses, every role's lifetime and wait cycles per barrier, the tiles in completion
order, transaction bytes, CLC queries, violations and the deadlock report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simulator import _native
from simulator.engine.run import simulate
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.protocol.knobs import ProtocolKnobs

B200_16 = ArchSpec.b200().with_overrides({"sm_count": 16})
B200_296 = ArchSpec.b200().with_overrides({"sm_count": 296})
H200_16 = ArchSpec.h200().with_overrides({"sm_count": 16})

S = dict(m=1024, n=1024, k=512)          # 16 output tiles of 256x256 on 16 SMs: 2 waves
SM100_CASES = {
    "clc 2x1 2-SM": (Sm100GemmConfig(**S), B200_16),
    "static 2x1 2-SM": (Sm100GemmConfig(**S, tile_scheduler="static"), B200_16),
    "clc 1x1 1-SM": (Sm100GemmConfig(**S, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1), B200_16),
    "clc 2x1 1-SM": (Sm100GemmConfig(**S, use_2sm=False, mma_tile_m=128, mma_tile_n=128), B200_16),
    "clc 2x2 2-SM": (Sm100GemmConfig(**S, cluster_n=2, mma_tile_n=128), B200_16),
    "clc 4x1 2-SM": (Sm100GemmConfig(**S, cluster_m=4, mma_tile_n=128), B200_16),
    "static 2x2 1-SM": (Sm100GemmConfig(**S, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_n=2,
                                        tile_scheduler="static"), B200_16),
    "read C": (Sm100GemmConfig(**S, read_c=True), B200_16),
    "read C, 1-SM static": (Sm100GemmConfig(**S, read_c=True, use_2sm=False, mma_tile_m=128, mma_tile_n=128,
                                            tile_scheduler="static"), B200_16),
    "overlapping accumulators": (Sm100GemmConfig(**S, overlapping_accum=True, accumulator_stages=1), B200_16),
    "ragged": (Sm100GemmConfig(m=1000, n=712, k=312), B200_16),
    "ragged 1-SM read C": (Sm100GemmConfig(m=1000, n=712, k=312, use_2sm=False, mma_tile_m=128, mma_tile_n=128,
                                           read_c=True), B200_16),
    "fp8": (Sm100GemmConfig(**S, dtype_ab="fp8e4m3"), B200_16),
    "swizzle 2, raster m": (Sm100GemmConfig(m=2048, n=1024, k=256, swizzle=2, raster="m"), B200_16),
    "swizzle 4, raster n": (Sm100GemmConfig(m=1024, n=2048, k=256, swizzle=4, raster="n"), B200_16),
    "2 mainloop stages": (Sm100GemmConfig(**S, mainloop_stages=2), B200_16),
    "296 SMs": (Sm100GemmConfig(m=2048, n=2048, k=256), B200_296),
    "148 SMs, batched": (Sm100GemmConfig(m=1024, n=1024, k=256, l=3), None),
}
SM90_CASES = {
    "cooperative 2x1": (Sm90GemmConfig(**S), H200_16),
    "ping-pong 2x1": (Sm90GemmConfig(**S, schedule="pingpong"), H200_16),
    "cooperative 1x1": (Sm90GemmConfig(**S, cluster_m=1), H200_16),
    "ping-pong 1x2": (Sm90GemmConfig(**S, schedule="pingpong", cluster_m=1, cluster_n=2), H200_16),
    "cooperative 2x2 read C": (Sm90GemmConfig(**S, cluster_n=2, read_c=True), H200_16),
    "ping-pong read C": (Sm90GemmConfig(**S, schedule="pingpong", read_c=True), H200_16),
    "cooperative ragged": (Sm90GemmConfig(m=1000, n=712, k=312), H200_16),
    "ping-pong ragged read C": (Sm90GemmConfig(m=1000, n=712, k=312, schedule="pingpong", read_c=True), H200_16),
    "cooperative fp8, 132 SMs": (Sm90GemmConfig(m=2048, n=2048, k=256, dtype_ab="fp8e4m3"), None),
}


def _both(cfg, arch, **kw):
    ref = simulate(cfg, arch, engine="reference", **kw)
    fast = simulate(cfg, arch, engine="fast", **kw)
    assert (ref.engine, fast.engine) == ("reference", "fast")
    return ref, fast


@pytest.mark.parametrize("name", list(SM100_CASES) + list(SM90_CASES))
def test_fast_engine_matches_reference(name):
    cfg, arch = SM100_CASES.get(name) or SM90_CASES[name]
    ref, fast = _both(cfg, arch)
    assert ref.deadlock is None and ref.violation_count == 0 and ref.tile_check() == (ref.tiles_expected, 0)
    assert fast.fingerprint() == ref.fingerprint()
    # the derived report too (role table, utilisation)
    assert [(r.role, r.ctas, r.active_fraction, r.wait_fraction) for r in fast.role_times] == \
        [(r.role, r.ctas, r.active_fraction, r.wait_fraction) for r in ref.role_times]
    assert fast.tensor_core_utilization == ref.tensor_core_utilization


def test_traces_identical():
    for cfg, arch in (SM100_CASES["read C"], SM90_CASES["ping-pong read C"]):
        ref, fast = _both(cfg, arch, trace=True)
        a, b = ref.trace, fast.trace
        assert len(a) == len(b) > 0
        assert a.columns().keys() == b.columns().keys()
        for key, col in a.columns().items():
            assert np.array_equal(col, b.columns()[key]), key
        for key, col in a.counters().items():
            assert np.array_equal(col, b.counters()[key]), key
        assert a.meta == b.meta


def test_trace_of_some_sms_identical():
    cfg, arch = SM100_CASES["clc 2x2 2-SM"]
    ref, fast = _both(cfg, arch, trace=True, trace_sms=[0, 5])
    for key, col in ref.trace.columns().items():
        assert np.array_equal(col, fast.trace.columns()[key]), key


def test_deadlock_reported_identically():
    """A CLC empty count without the cluster factor deadlocks this shape: same report, same
    blocked roles, same cycle and suspects on both engines."""
    knobs = ProtocolKnobs.make(arrival_counts={"clc.empty": 224})
    ref, fast = _both(Sm100GemmConfig(m=4096, n=4096, k=1024), None, knobs=knobs)
    assert ref.deadlock is not None and ref.violation_count > 0
    assert fast.fingerprint() == ref.fingerprint()
    assert fast.deadlock.summary() == ref.deadlock.summary()
    assert fast.violations == ref.violations


def test_wrong_start_phase_deadlock_identical():
    knobs = ProtocolKnobs.make(producer_start_phase={"mainloop": 0})
    ref, fast = _both(Sm90GemmConfig(m=512, n=512, k=256), None, knobs=knobs)
    assert ref.deadlock is not None
    assert fast.fingerprint() == ref.fingerprint()
    assert fast.deadlock.summary() == ref.deadlock.summary()


@pytest.mark.parametrize("arch", [None, B200_16])
def test_protocol_violations_identical(arch):
    """An accumulator empty count too small: arrivals land in the wrong phase (and, on fewer SMs,
    the run deadlocks): the same violations, and the same deadlock if any, on both engines."""
    knobs = ProtocolKnobs.make(arrival_counts={"accumulator.empty": 128})
    ref, fast = _both(Sm100GemmConfig(m=1024, n=1024, k=256), arch, knobs=knobs)
    assert ref.violation_count > 0
    assert fast.fingerprint() == ref.fingerprint()


def _fingerprint_in_subprocess(pure: bool) -> dict:
    code = ("import json, sys\n"
            "from simulator import _native\n"
            "from tests.test_engine_differential import SM100_CASES, SM90_CASES\n"
            "from simulator.engine.run import simulate\n"
            "out = {'compiled': _native.COMPILED}\n"
            "out['note'] = simulate(SM100_CASES['clc 4x1 2-SM'][0], engine='fast').engine_note\n"
            "for name, (cfg, arch) in {**SM100_CASES, **SM90_CASES}.items():\n"
            "    out[name] = simulate(cfg, arch, engine='fast').fingerprint()\n"
            "json.dump(out, sys.stdout)\n")
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop(_native.PURE_PYTHON_ENV, None)
    if pure:
        env[_native.PURE_PYTHON_ENV] = "1"
    res = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_pure_python_fallback_gives_the_same_results():
    """WSIM_PURE_PYTHON=1 loads the .py sources instead of the compiled core: the same
    fingerprints, on every config of the matrix, as the compiled core (where it is built) and as
    the reference engine."""
    pure = _fingerprint_in_subprocess(pure=True)
    assert pure.pop("compiled") is False
    # the result (and the report's last line) says which core ran, and why not the compiled one
    assert pure.pop("note") == f"pure-Python core ({_native.PURE_PYTHON_ENV}=1): same results, slower"
    default = _fingerprint_in_subprocess(pure=False)
    compiled, note = default.pop("compiled"), default.pop("note")
    assert note == "compiled core" if compiled else note.startswith("pure-Python core (")
    assert pure == default
    ref = json.loads(json.dumps(simulate(*SM100_CASES["clc 4x1 2-SM"], engine="reference").fingerprint()))
    assert pure["clc 4x1 2-SM"] == ref


def test_compiled_core_built_and_loaded():
    """Where a C compiler exists (CI), ``pip install -e .`` compiled the core, and it loads."""
    if os.environ.get(_native.PURE_PYTHON_ENV, "") not in ("", "0"):
        pytest.skip(f"{_native.PURE_PYTHON_ENV} is set")
    record = Path(_native.__file__).with_name(_native.BUILD_RECORD)
    if not record.exists():
        if shutil.which("cc") or shutil.which("gcc"):
            pytest.fail("a C compiler is here but the compiled core was not built: run pip install -e . "
                        "(pip install -v -e . shows why a build fails)")
        pytest.skip("no C compiler: the simulator runs as pure Python")
    if "changed since the build" in _native.REASON:
        pytest.skip(_native.REASON)       # a hot module edited since: pure Python until rebuilt
    assert _native.COMPILED, _native.REASON
