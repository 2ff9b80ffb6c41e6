"""Fuzzing the inputs (hypothesis): config fields through the Python API, whole TOML files through
``wsim simulate --config``, and trace files through ``Trace.load`` and ``wsim plot``.

Every case ends in one of two ways: a clean error (ConfigError, SimulationLimitError or
TraceFormatError with a one-line message; exit code 2 on the command line), or a valid run in
which every output tile is computed exactly once (``SimResult.tile_check()``). Anything else, a
traceback or an "internal error", fails. Problems are small and ``max_events`` is low, so each
example takes well under a second; examples are derandomized so CI sees the same cases each time.
"""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from simulator.engine import simulate  # noqa: E402
from simulator.engine.trace import COLUMNS, Trace, TraceFormatError  # noqa: E402
from simulator.errors import ConfigError, SimulationLimitError  # noqa: E402
from simulator.kernels.sm90_config import Sm90GemmConfig  # noqa: E402
from simulator.kernels.sm100_config import Sm100GemmConfig  # noqa: E402
from simulator.machine.arch import ArchSpec  # noqa: E402
from simulator.protocol.knobs import ProtocolKnobs  # noqa: E402
from simulator.views.breakdown import SelectionError, role_breakdown  # noqa: E402
from wsim.cli import main  # noqa: E402

MAX_EVENTS = 60_000
#: WSIM_FUZZ_SCALE=20 runs 20x the examples with a fresh random seed (exploration); CI runs 1x, derandomized.
SCALE = int(os.environ.get("WSIM_FUZZ_SCALE", "1"))


def fuzz(examples: int):
    return settings(max_examples=examples * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# Values near the rules (valid tiles, stages, sizes), and values of every wrong kind.
_SIZES = st.sampled_from([1, 8, 64, 100, 128, 256, 300, 512, 1000])
_K = st.sampled_from([8, 16, 64, 128, 200, 256, 512])
_TILES = st.sampled_from([0, 1, 8, 16, 32, 48, 64, 96, 128, 192, 256, 512])
_SMALL = st.sampled_from([0, 1, 2, 3, 4, 8, 16])
_JUNK = st.one_of(st.integers(-3, 3), st.integers(2**31 - 1, 2**64), st.floats(allow_nan=True),
                  st.booleans(), st.text(max_size=6), st.none(), st.sampled_from(["false", "no", "1", "128"]))
_DTYPES = st.sampled_from(["bf16", "fp16", "f16", "fp8e4m3", "f32", "tf32", "int8", "half"])


def _pick(good, bad_weight: int = 1):
    return st.one_of(*([good] * 4), *([_JUNK] * bad_weight))


SM100_FIELDS = {
    "m": _pick(_SIZES), "n": _pick(_SIZES), "k": _pick(_K), "l": _pick(st.sampled_from([1, 2])),
    "dtype_ab": _pick(_DTYPES), "dtype_acc": _pick(st.sampled_from(["f32", "fp16", "bf16"])),
    "dtype_c": _pick(_DTYPES), "dtype_d": _pick(_DTYPES),
    "mma_tile_m": _pick(st.sampled_from([0, 1, 64, 128, 256])), "mma_tile_n": _pick(_TILES),
    "mma_tile_k": _pick(st.sampled_from([None, 0, 8, 16, 32, 64, 128, 4096])),
    "use_2sm": _pick(st.booleans()), "cluster_m": _pick(_SMALL), "cluster_n": _pick(_SMALL),
    "mainloop_stages": _pick(st.sampled_from([None, 0, 1, 2, 3, 4, 12])),
    "accumulator_stages": _pick(st.sampled_from([None, 0, 1, 2, 3, 5])),
    "scheduler_stages": _pick(st.sampled_from([None, 0, 1, 2, 3])),
    "read_c": _pick(st.booleans()),
    "epilogue_tile_m": _pick(st.sampled_from([None, 0, 32, 64, 128])),
    "epilogue_tile_n": _pick(st.sampled_from([None, 0, 4, 8, 16, 32, 64, 1024])),
    "epilogue_load_stages": _pick(st.sampled_from([None, 0, 1, 2, 4])),
    "epilogue_store_stages": _pick(st.sampled_from([None, 0, 1, 2, 4])),
    "tile_scheduler": _pick(st.sampled_from(["clc", "static", "dynamic"])),
    "raster": _pick(st.sampled_from(["m", "n", "heuristic", "z"])),
    "swizzle": _pick(st.sampled_from([1, 2, 3, 4, 8])),
    "overlapping_accum": _pick(st.booleans()),
}
SM90_FIELDS = {
    **{k: SM100_FIELDS[k] for k in ("m", "n", "k", "l", "dtype_ab", "dtype_acc", "dtype_c", "dtype_d",
                                    "cluster_m", "cluster_n", "mainloop_stages", "read_c", "epilogue_tile_m",
                                    "epilogue_tile_n", "epilogue_load_stages", "epilogue_store_stages",
                                    "raster", "swizzle")},
    "tile_m": _pick(st.sampled_from([0, 64, 96, 128, 256])), "tile_n": _pick(st.sampled_from([None, 0, 8, 64, 128,
                                                                                               256, 264])),
    "tile_k": _pick(st.sampled_from([None, 0, 4, 32, 64, 128])),
    "schedule": _pick(st.sampled_from(["cooperative", "pingpong", "coop"])),
    "tile_scheduler": _pick(st.sampled_from(["static", "clc"])),
}


@st.composite
def _kwargs(draw, fields: dict, max_fields: int = 5) -> dict:
    """A few fields (the rest keep their defaults), each a near-the-rule value or, now and then, junk."""
    names = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=max_fields))
    return {name: draw(fields[name]) for name in names}


_ARCH_OVERRIDES = st.fixed_dictionaries({}, optional={
    "sm_count": st.one_of(st.integers(1, 12), st.sampled_from([0, 1.5, "4", True])),
    "clock_ghz": st.one_of(st.floats(0.5, 3.0), st.sampled_from([0, -1.0, float("nan"), float("inf")])),
    "smem_bytes_per_cta": st.sampled_from([232448, 100000, 40000, 4096, 1.5]),
    "max_cluster_size": st.sampled_from([1, 2, 8, 16]),
})


def _one_line(e: BaseException) -> None:
    text = str(e)
    assert text and "\n" not in text, repr(text)


def _check_valid_run(res) -> None:
    assert res.deadlock is None and res.violation_count == 0, res.deadlock
    once, twice = res.tile_check()
    assert twice == 0 and once == res.tiles_expected, (once, twice, res.tiles_expected)
    assert res.cycles > 0 and res.time_ns > 0


#: Small problem sizes unless a case sets its own (the defaults, 8192^3, exceed MAX_EVENTS).
BASE = {"m": 256, "n": 256, "k": 128}


def _api_case(cls, kw: dict, overrides: dict, arch: ArchSpec) -> str:
    try:
        a = arch.with_overrides(overrides, "fuzz") if overrides else arch
        cfg = cls(**{**BASE, **kw})
        res = simulate(cfg, a, max_events=MAX_EVENTS)
    except (ConfigError, SimulationLimitError) as e:
        _one_line(e)
        return "error"
    _check_valid_run(res)
    return "run"


@fuzz(60)
@given(kw=_kwargs(SM100_FIELDS), overrides=_ARCH_OVERRIDES)
def test_fuzz_sm100_config_fields(kw, overrides):
    _api_case(Sm100GemmConfig, kw, overrides, ArchSpec.b200())


@fuzz(60)
@given(kw=_kwargs(SM90_FIELDS), overrides=_ARCH_OVERRIDES)
def test_fuzz_sm90_config_fields(kw, overrides):
    _api_case(Sm90GemmConfig, kw, overrides, ArchSpec.h200())


_VALID_SM100 = {
    "m": _SIZES, "n": _SIZES, "k": st.sampled_from([16, 64, 128, 256]), "l": st.sampled_from([1, 2]),
    "mma_tile_n": st.sampled_from([64, 128, 256]), "cluster_n": st.sampled_from([1, 2]),
    "tile_scheduler": st.sampled_from(["clc", "static"]), "raster": st.sampled_from(["m", "n", "heuristic"]),
    "swizzle": st.sampled_from([1, 2, 4, 8]), "read_c": st.booleans(),
}


@fuzz(40)
@given(kw=_kwargs(_VALID_SM100, max_fields=6), sms=st.sampled_from([4, 6, 16, 148]))
def test_fuzz_valid_sm100_configs_compute_each_tile_once(kw, sms):
    """Valid values only (ragged sizes, batches, rasters, swizzles, schedulers, few SMs): every run
    must compute each output tile exactly once."""
    assert _api_case(Sm100GemmConfig, kw, {"sm_count": sms}, ArchSpec.b200()) in ("run", "error")


_KNOB_NAMES = st.sampled_from(["clc.empty", "clc.full", "mainloop.full", "mainloop.empty", "accumulator.empty",
                               "clc_throttle.full", "epi_load.full", "mainloop", "clc", "x.y", 5])
_KNOB_VALUES = st.one_of(st.integers(0, 300), st.sampled_from([2**20, 0, 1]), _JUNK)


@fuzz(40)
@given(arrival=st.one_of(st.none(), st.dictionaries(_KNOB_NAMES, _KNOB_VALUES, max_size=2), _JUNK),
       phases=st.one_of(st.none(), st.dictionaries(_KNOB_NAMES, _KNOB_VALUES, max_size=2)),
       skip=st.one_of(st.lists(_KNOB_NAMES, max_size=2), _JUNK),
       throttle=st.one_of(st.booleans(), _JUNK),
       static=st.booleans())
def test_fuzz_protocol_knobs(arrival, phases, skip, throttle, static):
    """Knobs through the API: a clean error, or a run (which may deadlock or race: that is what
    knobs are for); with the default knobs, every tile once."""
    cfg = Sm100GemmConfig(**BASE, tile_scheduler="static" if static else "clc")
    try:
        knobs = ProtocolKnobs.make(arrival_counts=arrival, producer_start_phase=phases, skip_release=skip,
                                   clc_throttle=throttle)
        knobs.check_applies(cfg)
        res = simulate(cfg, knobs=knobs, max_events=MAX_EVENTS)
    except (ConfigError, SimulationLimitError) as e:
        _one_line(e)
        return
    if knobs.is_default:
        _check_valid_run(res)


def _seed_counts(cfg) -> dict[str, int]:
    """``{"mainloop.full": n, ...}``: the counts the seed (or the SM90 twin) initialises each barrier with."""
    from simulator.protocol import arrivals as a
    counts = a.sm90_arrival_counts(a.Sm90KernelFacts.from_config(cfg)) if cfg.arch_name == "sm90" else \
        a.sm100_arrival_counts(a.KernelFacts.from_config(cfg))
    return {f"{p}.{side}": getattr(c, who) for p, c in counts.items()
            for side, who in (("full", "producer"), ("empty", "consumer"))}


@st.composite
def several_tiles_per_cluster(draw):
    """A valid config on a few SMs (one GPC) with 2-4 cluster tiles for each resident cluster, so
    that every pipeline wraps and every CLC query is throttled more than once."""
    sm90 = draw(st.integers(0, 3)) == 0
    cm, cn = draw(st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2)] if sm90 else [(2, 1), (2, 2), (4, 1)]))
    if sm90:
        kw = {"tile_m": 128, "tile_n": draw(st.sampled_from([64, 128])),
              "schedule": draw(st.sampled_from(["cooperative", "pingpong"]))}
        mma_m, mma_n, per_cluster_m = 128, kw["tile_n"], cm
    else:
        two_sm = draw(st.booleans())
        mma_m = 256 if two_sm else 128
        kw = {"mma_tile_m": mma_m, "mma_tile_n": draw(st.sampled_from([64, 128])), "use_2sm": two_sm,
              "tile_scheduler": draw(st.sampled_from(["clc", "clc", "static"]))}
        mma_n, per_cluster_m = kw["mma_tile_n"], cm // (2 if two_sm else 1)
    resident = draw(st.integers(1, 3))
    gm, gn = draw(st.sampled_from([(2, 1), (1, 2), (3, 1), (2, 2), (4, 1)]))
    ragged = draw(st.sampled_from([0, 0, 8]))
    kw |= {"m": gm * resident * per_cluster_m * mma_m - ragged, "n": gn * cn * mma_n,
           "k": draw(st.sampled_from([64, 192, 256])), "cluster_m": cm, "cluster_n": cn, "read_c": draw(st.booleans())}
    arch = ArchSpec.h200() if sm90 else ArchSpec.b200()
    arch = arch.with_overrides({"sm_count": resident * cm * cn, "gpc_count": 1}, "fuzz")
    return (Sm90GemmConfig if sm90 else Sm100GemmConfig)(**kw), arch


@st.composite
def non_default_knobs(draw, cfg):
    """Valid knobs on the pipelines ``cfg`` uses, one or two kinds at a time, never all at their
    defaults; arrival counts near the seed's (off by one, halved, doubled) or any small count."""
    from simulator.protocol.knobs import pipelines_in_use
    used = list(pipelines_in_use(cfg)[0])
    kinds = draw(st.lists(st.sampled_from(["throttle", "count", "phase", "skip"]), min_size=1, max_size=2,
                          unique=True))
    throttle = "clc_throttle" not in used or "throttle" not in kinds or draw(st.booleans())
    if not throttle:
        used.remove("clc_throttle")
    seed = {b: n for b, n in _seed_counts(cfg).items() if b.partition(".")[0] in used}
    counts, phases, skip = {}, {}, []
    if "count" in kinds:
        barrier = draw(st.sampled_from(sorted(seed)))
        n = seed[barrier]
        counts[barrier] = draw(st.sampled_from(sorted({max(1, n - 1), n + 1, max(1, n // 2), 2 * n, 1, 32, 128})))
    if "phase" in kinds:
        phases = dict.fromkeys(draw(st.lists(st.sampled_from(used), min_size=1, max_size=2, unique=True)), 0)
    if "skip" in kinds:
        skip = draw(st.lists(st.sampled_from(used), min_size=1, max_size=2, unique=True))
    knobs = ProtocolKnobs.make(arrival_counts=counts, producer_start_phase=phases, skip_release=skip,
                               clc_throttle=throttle)
    hypothesis.assume(not knobs.is_default)
    return knobs


@fuzz(40)
@given(data=st.data())
def test_fuzz_non_default_knobs_on_several_tiles_per_cluster(data):
    """What-ifs (--no-clc-throttle, producer start phases, skipped releases, arrival counts) on
    problems where each cluster runs several tiles: every run ends, either with each tile computed
    once and no violation, or with a reported deadlock or protocol violations; never an internal
    error, and never a run that keeps going (the event limit is 20x the default run's estimate).
    The throttle switched off alone leaves a sound protocol: those runs must finish, each tile once."""
    from simulator.engine.run import estimate_events
    from simulator.kernels.scheduler import max_resident_clusters
    cfg, arch = data.draw(several_tiles_per_cluster())
    resolved = cfg.resolved(arch)
    if resolved.arch_name == "sm100":
        assert resolved.cluster_tiles_m * resolved.cluster_tiles_n >= 2 * max_resident_clusters(resolved, arch)
    knobs = data.draw(non_default_knobs(resolved))
    res = simulate(cfg, arch, knobs=knobs, max_events=20 * estimate_events(resolved) + 20_000)
    if knobs == ProtocolKnobs(clc_throttle=False):   # a protocol without the throttle is still a sound one
        _check_valid_run(res)
    elif res.deadlock is not None:
        assert res.deadlock.blocked or res.deadlock.unexplained, res.deadlock
    elif res.violation_count == 0:
        _check_valid_run(res)


# ------------------------------------------------------------------------------------- TOML files
_TOML_KEYS = {
    "config": list(SM100_FIELDS) + ["tile_m", "schedule", "bogus"],
    "arch": ["name", "sm_count", "clock_ghz", "clc_query_latency_cycles", "bogus"],
    "knobs": ["arrival_counts", "producer_start_phase", "skip_release", "clc_throttle", "bogus"],
}
_TOML_SCALAR = st.one_of(st.integers(-2, 600), st.sampled_from([2**31, 10**25]), st.floats(-10, 1e4),
                         st.booleans(), st.sampled_from(["b200", "h200", "static", "clc", "bf16", "mainloop", "x"]))
_TOML_VALUE = st.one_of(_TOML_SCALAR, st.lists(_TOML_SCALAR, max_size=3),
                        st.dictionaries(st.sampled_from(["clc.empty", "mainloop", "mainloop.full", "epi_load.full",
                                                         "accumulator", "x"]), _TOML_SCALAR, max_size=2))


def _toml_literal(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if not isinstance(v, float) or np.isfinite(v) else "nan"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_literal(x) for x in v) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_literal(x)}" for k, x in v.items()) + " }"


@st.composite
def toml_files(draw) -> bytes:
    lines = []
    tables = draw(st.lists(st.sampled_from(["arch", "knobs", "other"]), unique=True, max_size=2))
    if draw(st.integers(0, 9)):          # mostly a [config] table with small sizes first
        tables.insert(0, "config")
    for table in tables:
        lines.append(f"[{table}]")
        keys = draw(st.lists(st.sampled_from(_TOML_KEYS.get(table, ["x"])), unique=True, max_size=3))
        if table == "config":
            keys = ["m", "n", "k", *(k for k in keys if k not in ("m", "n", "k"))]
        for key in keys:
            if table == "config" and key in ("m", "n", "k"):
                value = draw(st.one_of(*[st.sampled_from([64, 256, 512])] * 6, _TOML_VALUE))
            else:
                value = draw(_TOML_VALUE)
            lines.append(f"{key} = {_toml_literal(value)}")
    data = ("\n".join(lines) + "\n").encode()
    mutation = draw(st.sampled_from(["none", "none", "truncate", "garbage"]))
    if mutation == "truncate" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif mutation == "garbage":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    return data


@fuzz(80)
@given(data=toml_files())
def test_fuzz_toml_files(data, tmp_path, capsys):
    f = tmp_path / "fuzz.toml"
    f.write_bytes(data)
    rc = main(["simulate", "--config", str(f), "--max-events", str(MAX_EVENTS), "--json"])
    out, err = capsys.readouterr()
    assert rc in (0, 2, 3, 4), (rc, err)
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("wsim: error: "), err
    if rc == 0:
        d = json.loads(out)
        assert d["ok"] and d["tiles_done"] == d["tiles_expected"]


# ------------------------------------------------------------------------------------ trace files
def _good_trace_bytes() -> bytes:
    res = simulate(Sm100GemmConfig(m=256, n=256, k=128), trace=True)
    buf = io.BytesIO()
    cols = res.trace.columns()
    ctr = {f"counter_{k}": v for k, v in res.trace.counters().items()}
    np.savez_compressed(buf, meta=np.asarray(json.dumps(res.trace.meta, default=str)), **cols, **ctr)
    return buf.getvalue()


GOOD = _good_trace_bytes()


@st.composite
def trace_files(draw) -> bytes:
    how = draw(st.sampled_from(["bytes", "truncate", "flip", "columns"]))
    if how == "bytes":
        return draw(st.binary(max_size=200))
    if how == "truncate":
        return GOOD[: draw(st.integers(0, len(GOOD) - 1))]
    if how == "flip":
        data = bytearray(GOOD)
        for _ in range(draw(st.integers(1, 6))):
            data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        return bytes(data)
    # Rebuild the archive with some columns dropped, resized, retyped, or the meta replaced.
    with np.load(io.BytesIO(GOOD)) as z:
        arrays = {k: z[k] for k in z.files}
    for name in draw(st.lists(st.sampled_from([*COLUMNS, "meta", "counter_sm", "counter_ns"]), max_size=3)):
        change = draw(st.sampled_from(["drop", "short", "float", "text", "2d", "nan", "meta"]))
        a = arrays.get(name)
        if a is None:
            continue
        if change == "drop":
            del arrays[name]
        elif change == "short":
            arrays[name] = a[: max(0, len(a) - 1)] if a.ndim else a
        elif change == "float":
            arrays[name] = np.asarray(a.tolist() if a.ndim else [1.5]).astype(np.float64) + 0.5 \
                if a.dtype.kind in "iuf" else np.full(a.shape or (1,), 0.5)
        elif change == "text":
            arrays[name] = np.full(a.shape or (), "x")
        elif change == "2d":
            arrays[name] = np.zeros((2, 2))
        elif change == "nan" and a.dtype.kind == "f":
            b = a.copy()
            b[:1] = np.nan
            arrays[name] = b
        elif change == "meta":
            arrays["meta"] = np.asarray(draw(st.sampled_from(["{", "[]", "5", '{"clock_ghz": "fast"}',
                                                               '{"clock_ghz": -1}', "{}"])))
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@fuzz(150)
@given(data=trace_files())
def test_fuzz_trace_files_load_cleanly(data, tmp_path):
    f = tmp_path / "fuzz.npz"
    f.write_bytes(data)
    try:
        tr = Trace.load(f)
    except TraceFormatError as e:
        _one_line(e)
        return
    # A trace that loads is usable: columns, extent, and the stall breakdown every view uses.
    cols = tr.columns()
    assert len({len(v) for v in cols.values()}) == 1
    assert np.isfinite(tr.duration_ns)
    if len(tr):
        try:
            role_breakdown(tr)
        except SelectionError as e:   # e.g. a window the trace cannot give; still one line
            _one_line(e)


@fuzz(25)
@given(data=trace_files())
def test_fuzz_trace_files_through_wsim_plot(data, tmp_path, capsys):
    f = tmp_path / "fuzz.npz"
    f.write_bytes(data)
    rc = main(["plot", str(f), "--what", "stalls", "-o", str(tmp_path / "s.png")])
    _, err = capsys.readouterr()
    assert rc in (0, 2), err
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "error: " in lines[0], err


def test_fuzz_inputs_are_not_vacuous():
    """The config strategies do produce valid runs (else the tile-once check would never run)."""
    assert _api_case(Sm100GemmConfig, {"m": 256, "n": 256, "k": 128}, {}, ArchSpec.b200()) == "run"
    assert _api_case(Sm90GemmConfig, {"m": 256, "n": 256, "k": 128}, {}, ArchSpec.h200()) == "run"
    assert _api_case(Sm100GemmConfig, {"m": 256.0}, {}, ArchSpec.b200()) == "error"
    assert zipfile.is_zipfile(io.BytesIO(GOOD))
