"""Bad arguments to the Python API, as a table (issue 15's audit): each row is a call and the
ConfigError it must raise, whose message names the argument and the rule; never a raw internal
exception (AttributeError, TypeError, ...) and never a silent run."""

from __future__ import annotations

import pytest

from simulator import ArchSpec, ConfigError, ProtocolKnobs, run_sweep, simulate, tune
from simulator import Sm90GemmConfig as C90
from simulator import Sm100GemmConfig as C100

S = dict(m=256, n=256, k=256)
B200 = ArchSpec.b200()


def _tune(*a, **k):
    return tune(*a, progress=False, workers=1, **k)


# (id, call, text the ConfigError's message must contain)
CASES = [
    ("simulate-str", lambda: simulate("abc"), "cfg='abc': expected a Sm100GemmConfig or Sm90GemmConfig, got str"),
    ("simulate-dict", lambda: simulate({"m": 256}), "got dict (build one from a dict: Sm100GemmConfig(**d))"),
    ("simulate-int", lambda: simulate(123), "cfg=123: expected a Sm100GemmConfig or Sm90GemmConfig, got int"),
    ("simulate-arch-int", lambda: simulate(C100(**S), 100), "arch=100: expected an ArchSpec or an arch name"),
    ("simulate-arch-unknown", lambda: simulate(C100(**S), "a100"), "arch='a100': unknown architecture"),
    ("simulate-arch-name-wrong-kernel", lambda: simulate(C100(**S), "h200"),
     "the SM100 kernel needs an SM100 arch (b200)"),
    ("knobs-str", lambda: simulate(C100(**S), knobs="clc.empty=3"),
     "knobs='clc.empty=3': expected a ProtocolKnobs, got str"),
    ("knobs-dict", lambda: simulate(C100(**S), knobs={"arrival_counts": {"clc.empty": 3}}),
     "expected a ProtocolKnobs, got dict (e.g. ProtocolKnobs.make("),
    ("knobs-bad-shape", lambda: ProtocolKnobs(arrival_counts=5), "arrival_counts=5: expected a mapping"),
    ("knobs-bad-key", lambda: ProtocolKnobs(arrival_counts={3: 1}), "protocol knob key 3: expected a string"),
    ("knobs-skip-str", lambda: ProtocolKnobs(skip_release="mainloop"), "skip_release='mainloop': expected a list"),
    ("trace-sms-int", lambda: simulate(C100(**S), trace=True, trace_sms=0),
     "trace_sms=0: expected a list of SM numbers, e.g. [0, 1], got int"),
    ("trace-sms-outside", lambda: simulate(C100(**S), trace=True, trace_sms=[999]),
     "trace_sms=[999]: selects no SM of this run, which uses SMs 0-1"),
    ("trace-sms-str", lambda: simulate(C100(**S), trace=True, trace_sms="0-3"),
     "trace_sms='0-3': expected a list of SM numbers"),
    ("trace-sms-negative", lambda: simulate(C100(**S), trace=True, trace_sms=[-1]),
     "trace_sms=[-1]: SM -1 is not an SM number (an integer >= 0)"),
    ("trace-sms-float", lambda: simulate(C100(**S), trace=True, trace_sms=[0.5]), "SM 0.5 is not an SM number"),
    ("trace-sms-without-trace", lambda: simulate(C100(**S), trace_sms=[0]),
     "trace_sms=[0]: selects the SMs a trace records; pass trace=True too"),
    ("trace-str", lambda: simulate(C100(**S), trace="no"), "trace='no': expected True or False, got str"),
    ("count-events-str", lambda: simulate(C100(**S), count_events="no"), "count_events='no': expected True or False"),
    ("experiments-int", lambda: simulate(C100(**S), allow_protocol_experiments=1),
     "allow_protocol_experiments=1: expected True or False"),
    ("engine-unknown", lambda: simulate(C100(**S), engine="turbo"), "engine='turbo': unknown; valid: fast, reference"),
    ("progress-not-callable", lambda: simulate(C100(**S), progress=5), "progress=5: expected a function"),
    ("overrides-list", lambda: B200.with_overrides([("clock_ghz", 1.3)]),
     "expected a mapping of constant name -> number, e.g. {'clock_ghz': 1.3}, got list"),
    ("overrides-count-huge", lambda: B200.with_overrides({"sm_count": 10**30}), "at most 2^31 - 1"),
    ("overrides-bandwidth-0", lambda: B200.with_overrides({"tma_load_bytes_per_clk_per_sm": 0}),
     "a bandwidth of 0 marks a feature the arch lacks"),
    ("overrides-gpc", lambda: B200.with_overrides({"gpc_count": 75}), "more GPCs than the 74 TPC(s)"),
    ("sweep-str-configs", lambda: run_sweep(["m=256"], B200, progress=False, workers=1),
     "configs[0]='m=256': expected a Sm100GemmConfig or Sm90GemmConfig, got str"),
    ("sweep-dict-configs", lambda: run_sweep([dict(S)], B200, progress=False, workers=1),
     "configs[0]={'m': 256, 'n': 256, 'k': 256}: expected a Sm100GemmConfig"),
    ("sweep-one-config", lambda: run_sweep(C100(**S), B200, progress=False, workers=1),
     "expected a list of Sm100GemmConfig / Sm90GemmConfig"),
    ("sweep-arch-int", lambda: run_sweep([C100(**S)], 5, progress=False, workers=1), "arch=5: expected an ArchSpec"),
    ("sweep-workers-0", lambda: run_sweep([C100(**S)], B200, progress=False, workers=0),
     "workers=0: must be a positive integer"),
    ("sweep-progress-str", lambda: run_sweep([C100(**S)], B200, progress="no"), "progress='no': expected True or False"),
    ("sweep-max-events", lambda: run_sweep([C100(**S)], B200, progress=False, max_events=-5),
     "max_events=-5: must be a positive integer"),
    ("sweep-engine", lambda: run_sweep([C100(**S)], B200, progress=False, engine="turbo"), "engine='turbo': unknown"),
    ("tune-max-events", lambda: _tune(256, 256, 256, max_events=-5), "max_events=-5: must be a positive integer"),
    ("tune-engine", lambda: _tune(256, 256, 256, engine="turbo"), "engine='turbo': unknown; valid: fast, reference"),
    ("tune-prune", lambda: _tune(256, 256, 256, prune="no"), "prune='no': expected True, False or None"),
    ("tune-workers", lambda: tune(256, 256, 256, workers=-1, progress=False),
     "workers=-1: must be a positive integer"),
    ("tune-arch", lambda: _tune(256, 256, 256, arch=90), "arch=90: expected an ArchSpec or an arch name"),
    ("tune-write-missing-dir",
     lambda: _tune(256, 256, 256, space="gemm-model", dtype="fp16").write("/nonexistent/t.csv"),
     "out '/nonexistent/t.csv': directory '/nonexistent' does not exist"),
    ("tune-to-csv-missing-dir",
     lambda: _tune(256, 256, 256, space="gemm-model", dtype="fp16").to_csv("/nonexistent/t.csv"),
     "path '/nonexistent/t.csv': directory '/nonexistent' does not exist"),
]


@pytest.mark.parametrize("call,needle", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_api_argument_is_a_config_error(call, needle):
    with pytest.raises(ConfigError) as e:
        call()
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_table_covers_the_issue15_api_list():
    ids = {c[0] for c in CASES}
    assert {"simulate-str", "simulate-dict", "simulate-int", "knobs-str", "knobs-dict", "trace-sms-int",
            "trace-sms-outside", "trace-sms-str", "trace-str", "trace-sms-negative", "trace-sms-float",
            "trace-sms-without-trace", "count-events-str", "overrides-list", "sweep-str-configs",
            "sweep-dict-configs", "tune-max-events", "tune-engine", "tune-prune", "tune-write-missing-dir"} <= ids
    assert len(ids) == len(CASES)


def test_an_arch_name_is_taken_wherever_an_arch_is():
    """simulate, run_sweep and tune take an arch name as they take the ArchSpec it names."""
    a = simulate(C100(**S), "b200")
    b = simulate(C100(**S), ArchSpec.b200())
    assert a.fingerprint() == b.fingerprint() and a.arch.name == "B200"
    assert simulate(C90(**S), "h200").fingerprint() == simulate(C90(**S), ArchSpec.h200()).fingerprint()
    (row,) = run_sweep([C100(**S)], "b200", progress=False, workers=1)
    assert row.ok and row.arch == "B200" and row.time_us == pytest.approx(b.time_ns / 1e3)


def test_knobs_from_their_documented_plain_form():
    """``ProtocolKnobs(arrival_counts={"clc.empty": 3})`` (the docstring's form) is the same knob as
    ``ProtocolKnobs.make``'s, and the run it drives ends in a report, not an exception."""
    k = ProtocolKnobs(arrival_counts={"clc.empty": 3}, skip_release=["epi_load"])
    assert k == ProtocolKnobs.make(arrival_counts={"clc.empty": 3}, skip_release=("epi_load",))
    r = simulate(C100(**S), knobs=ProtocolKnobs(arrival_counts={"clc.empty": 3}))
    assert not r.ok and (r.deadlock is not None or r.violation_count > 0)


def test_trace_sms_partly_in_the_run_traces_those():
    r = simulate(C100(**S), trace=True, trace_sms=[1, 500])
    assert set(r.trace.columns()["sm"].tolist()) == {1}
