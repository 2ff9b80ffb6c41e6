"""Bad and unusual command lines, as a table: each row is an input, the exit code it must give and
a piece of the one line it must print (issue 8's campaign, and inputs like them).

Exit codes: 2 bad input (one stderr line naming the value and the rule), 3 deadlock, 4 protocol
violations without a deadlock, 0 a valid run. No row may print a traceback. ``{d}`` in an argument
is the directory of the input files made by the ``files`` fixture.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from simulator.engine import simulate
from simulator.engine.trace import Trace
from simulator.kernels.sm100_config import Sm100GemmConfig
from wsim.cli import main

SMALL = ["--m", "512", "--n", "512", "--k", "256"]
S256 = ["--m", "256", "--n", "256", "--k", "256"]
M256 = S256
SET256 = ["--set", "m=256", "--set", "n=256", "--set", "k=256"]
#: Rows whose command must stop before it runs anything (no table, no report on stdout).
NOTHING_RUN = {"i15-tune-out-no-parent", "i15-tune-out-is-dir", "i15-accuracy-out-is-file",
               "i15-sweep-out-is-dir", "i15-accuracy-b200-no-data", "i15-accuracy-budget-no-quick"}
TOML = {
    "malformed.toml": "[config\nm = 5\n",
    "cfg5.toml": "config = 5\n",
    "knobs_list.toml": "knobs = [1, 2]\n",
    "top_key.toml": "x = 1\n",
    "table_foo.toml": "[foo]\nm = 1\n",
    "ac5.toml": "[knobs]\narrival_counts = 5\n",
    "maybe.toml": '[config]\nuse_2sm = "maybe"\n',
    "true_str.toml": '[config]\nuse_2sm = "true"\n',
    "read_c_int.toml": "[config]\nread_c = 0\n",
    "huge.toml": "[config]\nm = 99999999999999999999999\n",
    "m_half.toml": "[config]\nm = 4096.5\n",
    "m_float.toml": "[config]\nm = 4096.0\n",
    "m_str.toml": '[config]\nm = "4096"\n',
    "m_bool.toml": "[config]\nm = true\n",
    "field_foo.toml": "[config]\nfoo = 1\n",
    "sm90_field.toml": "[config]\ntile_m = 128\n",
    "arch_str.toml": '[arch]\nsm_count = "148"\n',
    "arch_half.toml": "[arch]\nsm_count = 1.5\n",
    "arch_bool.toml": "[arch]\nclock_ghz = true\n",
    "arch_name5.toml": "[arch]\nname = 5\n",
    "arch_a100.toml": '[arch]\nname = "a100"\n',
    "h200.toml": '[config]\nm = 512\nn = 512\nk = 256\n[arch]\nname = "h200"\n',
    "knob_foo.toml": "[knobs]\nfoo = 1\n",
    "throttle_no.toml": '[knobs]\nclc_throttle = "no"\n',
    "throttle_0.toml": "[knobs]\nclc_throttle = 0\n",
    "count_half.toml": '[knobs]\narrival_counts = { "clc.empty" = 2.5 }\n',
    "count_str.toml": '[knobs]\narrival_counts = { "clc.empty" = "224" }\n',
    "count_bool.toml": '[knobs]\narrival_counts = { "clc.empty" = true }\n',
    "count_zero.toml": '[knobs]\narrival_counts = { "clc.empty" = 0 }\n',
    "count_big.toml": '[knobs]\narrival_counts = { "clc.empty" = 2000000 }\n',
    "phase2.toml": "[knobs]\nproducer_start_phase = { mainloop = 2 }\n",
    "phase_bool.toml": "[knobs]\nproducer_start_phase = { mainloop = true }\n",
    "skip_str.toml": '[knobs]\nskip_release = "mainloop"\n',
    "skip_int.toml": "[knobs]\nskip_release = [1]\n",
    "static_clc_knob.toml": ('[config]\ntile_scheduler = "static"\n'
                             '[knobs]\narrival_counts = { "clc.empty" = 224 }\n'),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    for name, text in TOML.items():
        (d / name).write_text(text)
    (d / "binary.toml").write_bytes(bytes(range(256)) * 4)
    (d / "a_dir.toml").mkdir()
    (d / "a_dir.npz").mkdir()
    res = simulate(Sm100GemmConfig(m=512, n=512, k=256), trace=True)
    res.trace.save(d / "good.npz")
    data = (d / "good.npz").read_bytes()
    (d / "trunc.npz").write_bytes(data[: len(data) // 2])
    (d / "empty.npz").write_bytes(b"")
    (d / "text.npz").write_text("not a trace\n")
    (d / "binary.npz").write_bytes(bytes(range(256)) * 8)
    (d / "run.json").write_text(json.dumps({"traceEvents": []}))
    with gzip.open(d / "run.json.gz", "wt") as f:
        f.write(json.dumps({"traceEvents": []}))
    cols = res.trace.columns()
    np.savez(d / "nocols.npz", sm=cols["sm"], meta=np.asarray("{}"))
    np.savez(d / "ragged.npz", **{**cols, "sm": cols["sm"][:-1]}, meta=np.asarray(json.dumps(res.trace.meta)))
    np.savez(d / "badmeta.npz", **cols, meta=np.asarray("{not json"))
    np.savez(d / "floatsm.npz", **{**cols, "sm": cols["sm"] + 0.5}, meta=np.asarray(json.dumps(res.trace.meta)))
    kinds = cols["kind"].copy()
    kinds[0] = "teleport"
    np.savez(d / "badkind.npz", **{**cols, "kind": kinds}, meta=np.asarray(json.dumps(res.trace.meta)))
    shutil.copy(d / "good.npz", d / "simulated.npz")
    # issue 15's inputs
    (d / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "sim_deep.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    (d / "sim_arch_bigint.toml").write_text("[arch]\nl2_bytes = 1000000000000000000000000000000\n")
    (d / "dupcol.csv").write_text("m,n,k,m\n256,256,256,512\n")
    (d / "short.csv").write_text("m,n,k,mma_tile_n\n256,256,256,128\n512,512\n")
    (d / "trunc_cfg.csv").write_text("m,n,k,mma_tile_n\n256,256,256,128\n512,512,25")   # cut inside its last row
    (d / "bom.csv").write_text("m,n,k\n256,256,256\n", encoding="utf-8-sig")            # Excel's CSV
    (d / "exist.csv").write_text("x\n")
    (d / "afile").write_text("x\n")
    (d / "dj.json").mkdir()
    (d / "d.csv").mkdir()
    (d / "empty_gm").mkdir()            # a gemm-model folder without its data
    return d


# (id, argv, exit code, text the one stderr line must contain; for exit 0/3/4: text on stdout)
CASES = [
    # -- sizes: int32 shape, TMA strides, the event budget
    ("m-20-digits", ["simulate", "--m", "99999999999999999999", "--n", "256", "--k", "256"], 2,
     "m=99999999999999999999: CUTLASS's problem shape (M, N, K, L) is int32"),
    ("m-int32+1", ["simulate", "--m", "2147483648"], 2, "m must be <= 2147483647"),
    ("huge-D", ["simulate", "--m", "1000000000", "--n", "1000000000", "--k", "64"], 2,
     "one batch of D is 2,000,000,000,000,000,000 B; TMA global strides"),
    ("huge-toml", ["simulate", "--config", "{d}/huge.toml"], 2, "m=99999999999999999999999: CUTLASS's problem"),
    ("too-many-events", ["simulate", "--m", "100000", "--n", "100000", "--k", "8192"], 2,
     "max_events=50,000,000: this run needs about"),
    ("max-events-small", ["simulate", "--m", "2048", "--n", "2048", "--k", "1024", "--max-events", "1000"], 2,
     "max_events=1,000"),
    ("max-events-negative", ["simulate", "--max-events", "-1"], 2, "'-1' is not a whole number of events"),
    ("max-events-text", ["simulate", "--max-events", "lots"], 2, "'lots' is not a whole number of events"),
    ("m-zero", ["simulate", "--m", "0"], 2, "m=0: problem size must be a positive integer"),
    ("m-negative", ["simulate", "--m", "-5"], 2, "m=-5: problem size must be a positive integer"),
    ("l-zero", ["simulate", "--l", "0"], 2, "l=0"),
    ("m-float", ["simulate", "--m", "1.5"], 2, "invalid int value: '1.5'"),
    # -- zero or impossible tiles (a ZeroDivisionError before)
    ("mma-tile-n-0", ["simulate", "--mma-tile-n", "0"], 2, "mma_tile_n=0: must be a positive integer"),
    ("mma-tile-m-0", ["simulate", "--mma-tile-m", "0"], 2, "mma_tile_m=0"),
    ("mma-tile-m-1", ["simulate", "--mma-tile-m", "1"], 2, "mma_tile_m=1: 2-SM tcgen05.mma"),
    ("mma-tile-m-1-1sm", ["simulate", "--use-2sm", "false", "--cluster-m", "1", "--mma-tile-m", "1"], 2,
     "mma_tile_m=1: 1-SM tcgen05.mma"),
    ("mma-tile-k-0", ["simulate", "--mma-tile-k", "0"], 2, "mma_tile_k=0"),
    ("epi-tile-n-0", ["simulate", "--epilogue-tile-n", "0"], 2, "epilogue_tile_n=0: an epilogue subtile"),
    ("epi-tile-m-0", ["simulate", "--epilogue-tile-m", "0"], 2, "epilogue_tile_m=0: an epilogue subtile"),
    ("h200-tile-n-0", ["simulate", "--arch", "h200", "--tile-n", "0"], 2, "tile_n=0: must be a positive integer"),
    ("h200-tile-m-0", ["simulate", "--arch", "h200", "--tile-m", "0"], 2, "tile_m=0"),
    ("h200-tile-k-0", ["simulate", "--arch", "h200", "--tile-k", "0"], 2, "tile_k=0"),
    ("cluster-m-0", ["simulate", "--cluster-m", "0"], 2, "cluster_m=0: cluster dimensions must be >= 1"),
    ("cluster-n-neg", ["simulate", "--cluster-n", "-1"], 2, "cluster_n=-1"),
    ("swizzle-0", ["simulate", "--swizzle", "0"], 2, "swizzle=0"),
    ("mainloop-stages-0", ["simulate", "--mainloop-stages", "0"], 2, "mainloop_stages=0: needs at least 1"),
    ("acc-stages-0", ["simulate", "--accumulator-stages", "0"], 2, "accumulator_stages=0"),
    ("sched-stages-0", ["simulate", "--scheduler-stages", "0"], 2, "scheduler_stages=0"),
    ("store-stages-0", ["simulate", "--epilogue-store-stages", "0"], 2, "epilogue_store_stages=0"),
    ("load-stages-0", ["simulate", "--read-c", "true", "--epilogue-load-stages", "0"], 2, "epilogue_load_stages=0"),
    # -- misleading before: the error names what the user set
    ("epi-tile-n-1024", ["simulate", "--epilogue-tile-n", "1024"], 2,
     "epilogue_tile_m x epilogue_tile_n=128x1024: epilogue tile must divide the CTA tile 128x256"),
    ("epi-tile-n-4", ["simulate", "--epilogue-tile-n", "4"], 2, "epilogue_tile_n=4: must be a multiple of 8"),
    ("mma-tile-k-4096", ["simulate", "--mma-tile-k", "4096"], 2,
     "mma_tile_k=4096: one mainloop stage takes 2097168 B of SMEM per CTA"),
    ("store-stages-64", ["simulate", "--epilogue-store-stages", "64"], 2,
     "epilogue_store_stages=64: one mainloop stage takes"),
    ("smem-override", ["simulate", "--arch-set", "smem_bytes_per_cta=40000"], 2,
     "smem_bytes_per_cta=40000 (override)"),
    ("mainloop-stages-7", ["simulate", "--mainloop-stages", "7"], 2, "mainloop_stages=7: SMEM overflow"),
    ("h200-tile-k-4096", ["simulate", "--arch", "h200", "--tile-k", "4096"], 2, "tile_k=4096: one mainloop stage"),
    # -- TOML files
    ("toml-malformed", ["simulate", "--config", "{d}/malformed.toml"], 2, "malformed.toml: not valid TOML"),
    ("toml-binary", ["simulate", "--config", "{d}/binary.toml"], 2, "binary.toml: not a TOML file (not UTF-8"),
    ("toml-dir", ["simulate", "--config", "{d}/a_dir.toml"], 2, "a_dir.toml: is a directory"),
    ("toml-missing", ["simulate", "--config", "{d}/nope.toml"], 2, "nope.toml: no such file"),
    ("toml-config-5", ["simulate", "--config", "{d}/cfg5.toml"], 2, "config = 5: expected a table [config]"),
    ("toml-knobs-list", ["simulate", "--config", "{d}/knobs_list.toml"], 2, "knobs = [1, 2]: expected a table"),
    ("toml-top-key", ["simulate", "--config", "{d}/top_key.toml"], 2, "unknown key or table 'x'"),
    ("toml-table-foo", ["simulate", "--config", "{d}/table_foo.toml"], 2, "unknown key or table 'foo'"),
    ("toml-knobs-5", ["simulate", "--config", "{d}/ac5.toml"], 2,
     "ac5.toml: arrival_counts=5: expected a table"),
    ("toml-use-2sm-maybe", ["simulate", "--config", "{d}/maybe.toml"], 2, "use_2sm='maybe'"),
    ("toml-use-2sm-str", ["simulate", "--config", "{d}/true_str.toml"], 2, "use_2sm='true'"),
    ("toml-read-c-0", ["simulate", "--config", "{d}/read_c_int.toml"], 2, "read_c=0"),
    ("toml-m-half", ["simulate", "--config", "{d}/m_half.toml"], 2, "m=4096.5"),
    ("toml-m-float", ["simulate", "--config", "{d}/m_float.toml"], 2, "m=4096.0"),
    ("toml-m-str", ["simulate", "--config", "{d}/m_str.toml"], 2, "m='4096'"),
    ("toml-m-bool", ["simulate", "--config", "{d}/m_bool.toml"], 2, "m=True"),
    ("toml-field-foo", ["simulate", "--config", "{d}/field_foo.toml"], 2, "foo=1"),
    ("toml-sm90-field", ["simulate", "--config", "{d}/sm90_field.toml"], 2,
     "a field of Sm90GemmConfig, not of Sm100GemmConfig (arch B200); use --arch h200"),
    ("toml-arch-str", ["simulate", "--config", "{d}/arch_str.toml"], 2, "sm_count='148'"),
    ("toml-arch-half", ["simulate", "--config", "{d}/arch_half.toml"], 2, "sm_count=1.5"),
    ("toml-arch-bool", ["simulate", "--config", "{d}/arch_bool.toml"], 2, "clock_ghz=True"),
    ("toml-arch-name-5", ["simulate", "--config", "{d}/arch_name5.toml"], 2, "[arch] name = 5"),
    ("toml-arch-a100", ["simulate", "--config", "{d}/arch_a100.toml"], 2, "a100"),
    ("toml-arch-conflict", ["simulate", "--arch", "b200", "--config", "{d}/h200.toml"], 2,
     "--arch b200 conflicts with [arch] name = 'h200'"),
    ("toml-knob-foo", ["simulate", "--config", "{d}/knob_foo.toml"], 2, "unknown knob 'foo'"),
    ("toml-throttle-no", ["simulate", "--config", "{d}/throttle_no.toml"], 2, "clc_throttle='no'"),
    ("toml-throttle-0", ["simulate", "--config", "{d}/throttle_0.toml"], 2, "clc_throttle=0"),
    ("toml-count-half", ["simulate", "--config", "{d}/count_half.toml"], 2, "clc.empty=2.5"),
    ("toml-count-str", ["simulate", "--config", "{d}/count_str.toml"], 2, "clc.empty='224'"),
    ("toml-count-bool", ["simulate", "--config", "{d}/count_bool.toml"], 2, "clc.empty=True"),
    ("toml-count-zero", ["simulate", "--config", "{d}/count_zero.toml"], 2, "clc.empty=0"),
    ("toml-count-big", ["simulate", "--config", "{d}/count_big.toml"], 2, "at most 2^20 - 1"),
    ("toml-phase-2", ["simulate", "--config", "{d}/phase2.toml"], 2, "mainloop=2: a phase bit"),
    ("toml-phase-bool", ["simulate", "--config", "{d}/phase_bool.toml"], 2, "mainloop=True: a phase bit"),
    ("toml-skip-str", ["simulate", "--config", "{d}/skip_str.toml"], 2, "skip_release='mainloop': expected a list"),
    ("toml-skip-int", ["simulate", "--config", "{d}/skip_int.toml"], 2, "skip_release entry 1"),
    ("toml-static-clc-knob", ["simulate", "--config", "{d}/static_clc_knob.toml"], 2,
     "clc.empty=224: cannot apply to this run: tile_scheduler='static' makes no CLC queries"),
    # -- arch overrides
    ("sm-count-1.5", ["simulate", *SMALL, "--arch-set", "sm_count=1.5"], 2, "sm_count is a count (SMs)"),
    ("sm-count-1", ["simulate", *SMALL, "--arch-set", "sm_count=1"], 2,
     "cluster_m*cluster_n=2 > sm_count=1"),
    ("sm-count-3-cluster-4", ["simulate", *SMALL, "--arch-set", "sm_count=3", "--cluster-m", "4"], 2,
     "cluster_m*cluster_n=4 > sm_count=3"),
    ("sm-count-0", ["simulate", "--arch-set", "sm_count=0"], 2, "sm_count=0 (--arch-set): must be > 0"),
    ("clock-nan", ["simulate", "--arch-set", "clock_ghz=nan"], 2, "clock_ghz='nan': expected a number"),
    ("clock-text", ["simulate", "--arch-set", "clock_ghz=fast"], 2, "clock_ghz='fast': expected a number"),
    ("clock-true", ["simulate", "--arch-set", "clock_ghz=true"], 2, "clock_ghz='true': expected a number"),
    ("arch-set-name", ["simulate", "--arch-set", "name=h200"], 2, "chosen with --arch"),
    ("arch-set-unknown", ["simulate", "--arch-set", "nope=3"], 2, "'nope'"),
    ("arch-set-no-name", ["simulate", "--arch-set", "=3"], 2, "the name before '=' is empty"),
    ("arch-set-no-eq", ["simulate", "--arch-set", "sm_count"], 2, "expected NAME=VALUE"),
    ("arch-unknown", ["simulate", "--arch", "a100"], 2, "a100"),
    # -- knobs
    ("count-2.5", ["simulate", *SMALL, "--arrival-count", "clc.empty=2.5"], 2,
     "--arrival-count clc.empty='2.5': expected an integer"),
    ("count-text", ["simulate", "--arrival-count", "clc.empty=many"], 2, "clc.empty='many': expected an integer"),
    ("count-0", ["simulate", "--arrival-count", "clc.empty=0"], 2, "clc.empty=0: an mbarrier count"),
    ("count-unknown-pipe", ["simulate", "--arrival-count", "foo.bar=3"], 2, "'foo.bar'"),
    ("count-unknown-side", ["simulate", "--arrival-count", "clc.middle=3"], 2, "'clc.middle'"),
    ("phase-2", ["simulate", "--producer-start-phase", "mainloop=2"], 2, "mainloop=2: a phase bit"),
    ("phase-text", ["simulate", "--producer-start-phase", "mainloop=x"], 2, "mainloop='x': expected an integer"),
    ("phase-unknown", ["simulate", "--producer-start-phase", "nope=0"], 2, "'nope': unknown pipeline"),
    ("skip-unknown", ["simulate", "--skip-release", "nope"], 2, "skip_release 'nope': unknown pipeline"),
    ("no-throttle-sm90", ["simulate", "--arch", "h200", *SMALL, "--no-clc-throttle"], 2,
     "--no-clc-throttle (clc_throttle = false): cannot apply to this run: the SM90 kernel"),
    ("no-throttle-static", ["simulate", *SMALL, "--tile-scheduler", "static", "--no-clc-throttle"], 2,
     "cannot apply to this run: tile_scheduler='static'"),
    ("clc-knob-static", ["simulate", "--tile-scheduler", "static", "--arrival-count", "clc.empty=224"], 2,
     "clc.empty=224: cannot apply to this run"),
    ("acc-knob-sm90", ["simulate", "--arch", "h200", "--arrival-count", "accumulator.full=3"], 2,
     "accumulators in registers"),
    ("epi-load-knob-no-c", ["simulate", "--skip-release", "epi_load"], 2, "read_c=False"),
    # -- config flags that do not exist for the arch, or wrong values
    ("use-2sm-maybe", ["simulate", "--use-2sm", "maybe"], 2, "'maybe' is not a boolean"),
    ("tile-m-on-b200", ["simulate", "--tile-m", "128"], 2, "--tile-m=128: not a field of Sm100GemmConfig"),
    ("mma-tile-n-on-h200", ["simulate", "--arch", "h200", "--mma-tile-n", "128"], 2,
     "--mma-tile-n=128: not a field of Sm90GemmConfig"),
    ("schedule-on-b200", ["simulate", "--schedule", "pingpong"], 2, "--schedule=pingpong: not a field"),
    ("dtype-int8", ["simulate", "--dtype-ab", "int8"], 2, "dtype_ab='int8': unknown data type"),
    ("raster-z", ["simulate", "--raster", "z"], 2, "raster='z'"),
    ("scheduler-dynamic", ["simulate", "--tile-scheduler", "dynamic"], 2, "tile_scheduler='dynamic'"),
    ("swizzle-3", ["simulate", "--swizzle", "3"], 2, "swizzle=3"),
    ("k-misaligned", ["simulate", "--k", "500"], 2, "k=500"),
    ("cluster-too-big", ["simulate", "--cluster-m", "32"], 2, "cluster_m*cluster_n=32 > 16"),
    # -- outputs
    ("trace-txt", ["simulate", *SMALL, "--trace", "{d}/out.txt"], 2, "traces are written as .npz, .json, .json.gz"),
    ("trace-dir", ["simulate", *SMALL, "--trace", "{d}"], 2, "is a directory; give a file name"),
    ("trace-slash", ["simulate", *SMALL, "--trace", "{d}/sub/"], 2, "is a directory; give a file name"),
    ("trace-no-parent", ["simulate", *SMALL, "--trace", "{d}/no/such/x.npz"], 2, "does not exist"),
    ("trace-sms-500", ["simulate", *SMALL, "--trace", "{d}/t.npz", "--trace-sms", "500"], 2,
     "--trace-sms 500: selects no SM of this run, which uses SMs 0-7"),
    ("trace-sms-text", ["simulate", *SMALL, "--trace", "{d}/t.npz", "--trace-sms", "x"], 2,
     "'x' is not an SM number"),
    ("trace-sms-backwards", ["simulate", *SMALL, "--trace", "{d}/t.npz", "--trace-sms", "5-2"], 2,
     "runs backwards"),
    ("trace-sms-no-trace", ["simulate", *SMALL, "--trace-sms", "0-1"], 2, "give --trace FILE too"),
    # -- exit codes of runs
    ("deadlock", ["simulate", *SMALL, "--producer-start-phase", "mainloop=0"], 3, "DEADLOCK"),
    ("violations-no-deadlock", ["simulate", *SMALL, "--arrival-count", "clc.empty=224"], 4, "PROTOCOL VIOLATIONS"),
    ("arch-name-agrees", ["simulate", "--arch", "h200", "--config", "{d}/h200.toml"], 0, "on H200"),
    ("unused-override-warns", ["simulate", *SMALL, "--tile-scheduler", "static", "--arch-set",
                               "clc_query_latency_cycles=800"], 0, "predicted time"),
    # -- wsim plot
    ("plot-perfetto-json", ["plot", "{d}/run.json"], 2, "this looks like JSON, e.g. a Perfetto/Chrome trace"),
    ("plot-perfetto-gz", ["plot", "{d}/run.json.gz"], 2, "this is gzip data"),
    ("plot-truncated", ["plot", "{d}/trunc.npz"], 2, "truncated or corrupt .npz"),
    ("plot-empty", ["plot", "{d}/empty.npz"], 2, "is empty (0 bytes)"),
    ("plot-text", ["plot", "{d}/text.npz"], 2, "not a trace file"),
    ("plot-binary", ["plot", "{d}/binary.npz"], 2, "not a trace file"),
    ("plot-dir", ["plot", "{d}/a_dir.npz"], 2, "is a directory"),
    ("plot-missing", ["plot", "{d}/nope.npz"], 2, "does not exist"),
    ("plot-no-columns", ["plot", "{d}/nocols.npz"], 2, "missing columns"),
    ("plot-ragged", ["plot", "{d}/ragged.npz"], 2, "rows, column 'sm' has"),
    ("plot-bad-meta", ["plot", "{d}/badmeta.npz"], 2, "meta is not valid JSON"),
    ("plot-float-sm", ["plot", "{d}/floatsm.npz"], 2, "column 'sm' holds float64; expected integers"),
    ("plot-bad-kind", ["plot", "{d}/badkind.npz"], 2, "unknown span kind 'teleport'"),
    ("plot-what", ["plot", "{d}/good.npz", "--what", "nope"], 2, "--what 'nope'"),
    ("plot-sms-text", ["plot", "{d}/good.npz", "--sms", "x"], 2, "'x' is not an SM number"),
    ("plot-sms-999", ["plot", "{d}/good.npz", "--sms", "999", "-o", "{d}/o.png"], 2, "SM 999 is not in the trace"),
    ("plot-window", ["plot", "{d}/good.npz", "--window", "5:2", "-o", "{d}/o.png"], 2, "is empty"),
    ("plot-occupancy-acc", ["plot", "{d}/good.npz", "--what", "occupancy", "--pipeline", "accumulator",
                            "-o", "{d}/o.png"], 2, "this trace has no stage occupancy for it; it has mainloop"),
    ("plot-pipeline-elsewhere", ["plot", "{d}/good.npz", "--what", "timeline", "--pipeline", "mainloop"], 2,
     "--pipeline applies to --what occupancy, not timeline"),
    ("plot-per-sm-elsewhere", ["plot", "{d}/good.npz", "--per-sm"], 2, "--per-sm applies to --what stalls"),
    ("plot-labels-one-trace", ["plot", "{d}/good.npz", "--labels", "a,b"], 2, "--labels applies to --what compare"),
    ("plot-trace-and-m", ["plot", "{d}/good.npz", "--m", "1024"], 2, "a trace file was given"),
    ("plot-out-txt", ["plot", "{d}/good.npz", "-o", "{d}/o.txt"], 2, "writes .png, .svg or .pdf"),
    ("plot-out-no-dir", ["plot", "{d}/good.npz", "-o", "{d}/no/o.png"], 2, "does not exist"),
    ("plot-three", ["plot", "{d}/good.npz", "{d}/good.npz", "{d}/good.npz"], 2, "3 traces given"),
    ("plot-sim-m-0", ["plot", "--m", "0"], 2, "m=0"),
    ("plot-sim-huge", ["plot", "--m", "100000", "--n", "100000", "--k", "8192"], 2, "max_events="),
    # -- wsim validate
    ("validate-truncated", ["validate", "{d}/trunc.npz"], 2, "truncated or corrupt .npz"),
    ("validate-empty", ["validate", "{d}/empty.npz"], 2, "is empty (0 bytes)"),
    ("validate-json", ["validate", "{d}/run.json"], 2, "this looks like JSON"),
    ("validate-missing", ["validate", "{d}/nope.npz"], 2, "nope.npz: no such file"),
    ("validate-dir", ["validate", "{d}/a_dir.npz"], 2, "is a directory"),
    ("validate-simulated", ["validate", "{d}/simulated.npz"], 2, "not a measured trace"),
    ("validate-sms-text", ["validate", "--sms", "x", "--plot", "{d}/v.png"], 2, "--sms 'x': 'x' is not an SM"),
    ("validate-sms-no-plot", ["validate", "--sms", "0"], 2, "give --plot FILE.png too"),
    ("validate-plot-txt", ["validate", "--plot", "{d}/v.txt"], 2, "plots are written as .png, .svg, .pdf"),
    ("validate-sms-999", ["validate", "--sms", "999", "--plot", "{d}/v.png"], 2,
     "--sms 999: SM 999 is not in the trace"),
    # -- issue 15's audit: tracebacks and hangs
    ("i15-sweep-binary-csv", ["sweep", "--configs", "{d}/binary.csv", "--no-progress"], 2,
     "binary.csv: not a CSV file (not UTF-8 text)"),
    ("i15-sweep-deep-json", ["sweep", "--configs", "{d}/deep.json", "--no-progress"], 2,
     "deep.json: not a config list (JSON nested too deeply to read)"),
    ("i15-accuracy-budget-inf", ["accuracy", "--no-cache", "--data", "h200", "--quick", "--budget", "inf"], 2,
     "--budget 'inf': the budget must be a finite number > 0"),
    ("i15-validate-sms-huge", ["validate", "--plot", "{d}/v.png", "--sms", "0-999999999999"], 2,
     "--sms '0-999999999999': SM 999999999999 is not an SM of any GPU"),
    ("i15-plot-window-inf", ["plot", "{d}/good.npz", "--what", "timeline", "--window", "0:1e400", "-o", "{d}/o.png"],
     2, "--window '0:1e400': '1e400' is not a finite time"),
    ("i15-plot-sms-huge", ["plot", "{d}/good.npz", "--what", "timeline", "--sms", "0-999999999999", "-o", "{d}/o.png"],
     2, "SM 999999999999 is not an SM of any GPU"),
    ("i15-trace-sms-huge", ["simulate", *S256, "--trace", "{d}/tr.npz", "--trace-sms", "0-999999999999"], 2,
     "--trace-sms '0-999999999999': SM 999999999999 is not an SM of any GPU"),
    ("i15-l2-bytes-1e30", ["simulate", *S256, "--arch-set", "l2_bytes=1000000000000000000000000000000"], 2,
     "l2_bytes=1000000000000000000000000000000 (--arch-set): at most 2^31 - 1"),
    ("i15-smem-1e30", ["simulate", *S256, "--arch-set", "smem_bytes_per_cta=1000000000000000000000000000000"], 2,
     "smem_bytes_per_cta=1000000000000000000000000000000 (--arch-set): at most 2^31 - 1"),
    ("i15-toml-deep", ["simulate", "--config", "{d}/sim_deep.toml"], 2,
     "sim_deep.toml: not a config file (TOML nested too deeply to read)"),
    ("i15-toml-arch-bigint", ["simulate", "--config", "{d}/sim_arch_bigint.toml"], 2,
     "l2_bytes=1000000000000000000000000000000 ([arch] in"),
    ("i15-tune-m-int32-max", ["tune", "--m", "2147483647", "--n", "8", "--k", "8", "--no-progress"], 2,
     "no candidate of M=2147483647 N=8 K=8 could be simulated: e.g. rank 1: max_events=50,000,000: this run "
     "needs about"),
    ("i15-gpc-1e30", ["simulate", *S256, "--arch-set", "gpc_count=1000000000000000000000000000000"], 2,
     "gpc_count=1000000000000000000000000000000 (--arch-set): at most 2^31 - 1"),
    # -- issue 15: silent wrong answers
    ("i15-sweep-grid-twice", ["sweep", "--grid", "m=256,512", "--grid", "m=1024", "--set", "n=256", "--set", "k=256",
                              "--no-progress"], 2, "--grid m=1024 and --grid m=256,512 both set m: give each field once"),
    ("i15-sweep-grid-twice-kernel-field", ["sweep", "--grid", "mma_tile_n=64,128", "--grid", "mma_tile_n=256",
                                           *SET256, "--no-progress"], 2,
     "--grid mma_tile_n=256 and --grid mma_tile_n=64,128 both set mma_tile_n"),
    ("i15-sweep-set-over-grid", ["sweep", "--grid", "m=256,512", "--set", "m=1024", "--set", "n=256", "--set",
                                 "k=256", "--no-progress"], 2, "--set m=1024 and --grid m=256,512 both set m"),
    ("i15-sweep-set-empty", ["sweep", "--set", "m=", "--set", "n=256", "--set", "k=256", "--no-progress"], 2,
     "m='' (--set m): empty value"),
    ("i15-sweep-set-none", ["sweep", "--set", "m=none", "--set", "n=256", "--set", "k=256", "--no-progress"], 2,
     "m='none' (--set m): m has no 'none' value (its default is 8192)"),
    ("i15-sweep-dup-column", ["sweep", "--configs", "{d}/dupcol.csv", "--no-progress"], 2,
     "dupcol.csv:1: column 'm' appears twice in the header (columns 1 and 4)"),
    ("i15-sweep-short-row", ["sweep", "--configs", "{d}/short.csv", "--no-progress"], 2,
     "short.csv:3: 2 of 4 cells"),
    ("i15-sweep-truncated-file", ["sweep", "--configs", "{d}/trunc_cfg.csv", "--no-progress"], 2,
     "trunc_cfg.csv:3: 3 of 4 cells (the row ends after 'k'; a file cut short?)"),
    ("i15-accuracy-budget-no-quick", ["accuracy", "--no-cache", "--data", "h200", "--budget", "1"], 2,
     "--budget 1: applies to --quick"),
    ("i15-accuracy-budget-other-data", ["accuracy", "--no-cache", "--data", "h200", "--quick", "--budget", "b200=1"],
     2, "--budget 'b200=1': data set b200 is not being scored (--data h200)"),
    ("i15-accuracy-jobs-negative", ["accuracy", "--no-cache", "--data", "h200", "--quick", "--budget", "1",
                                    "--jobs", "-1"], 2, "--jobs -1: must be >= 0 (0 = every core)"),
    ("i15-trace-sms-empty", ["simulate", *S256, "--trace", "{d}/tr.npz", "--trace-sms", ""], 2,
     "--trace-sms '': no SMs given"),
    ("i15-validate-sms-empty", ["validate", "--plot", "{d}/v.png", "--sms", ""], 2, "--sms '': no SMs given"),
    ("i15-plot-sms-empty", ["plot", "{d}/good.npz", "--what", "timeline", "--sms", "", "-o", "{d}/o.png"], 2,
     "--sms '': no SMs given"),
    ("i15-tmem-bandwidth-0", ["simulate", *S256, "--arch-set", "tmem_load_bytes_per_clk=0"], 2,
     "tmem_load_bytes_per_clk=0 (--arch-set): a bandwidth of 0 marks a feature the arch lacks (the model then "
     "applies no limit), but B200 has it (512 B/clk/SM)"),
    ("i15-tma-bandwidth-0", ["simulate", *S256, "--arch-set", "tma_load_bytes_per_clk_per_sm=0"], 2,
     "tma_load_bytes_per_clk_per_sm=0 (--arch-set): a bandwidth of 0 marks a feature the arch lacks"),
    ("i15-h200-tma-bandwidth-0", ["simulate", "--arch", "h200", *S256, "--arch-set",
                                  "tma_load_bytes_per_clk_per_sm=0"], 2, "but H200 has it (106.3 B/clk/SM)"),
    ("i15-h200-tmem-bandwidth-0", ["simulate", "--arch", "h200", *S256, "--arch-set", "tmem_load_bytes_per_clk=0"],
     0, "predicted time"),       # the H200 has no TMEM: 0 is its own value
    ("i15-gpc-1000", ["simulate", *S256, "--arch-set", "gpc_count=1000"], 2,
     "gpc_count=1000 (--arch-set): more GPCs than the 74 TPC(s) of B200's 148 SMs"),
    # -- issue 15: misleading messages
    ("i15-sweep-out-slash", ["sweep", *SET256, "--no-progress", "--out", "{d}/new.csv/"], 2,
     "new.csv/': is a directory; give a file name"),
    ("i15-sweep-out-no-parent", ["sweep", *SET256, "--no-progress", "--out", "/nonexistent/x.csv"], 2,
     "--out '/nonexistent/x.csv': directory '/nonexistent' does not exist"),
    ("i15-sweep-out-under-a-file", ["sweep", *SET256, "--no-progress", "--out", "{d}/exist.csv/x.csv"], 2,
     "exist.csv/x.csv': '"),
    ("i15-sweep-bom", ["sweep", "--configs", "{d}/bom.csv", "--no-progress", "--workers", "1"], 0,
     "wsim sweep: 1 config(s) on B200"),
    ("i15-sweep-arch-set-name", ["sweep", *SET256, "--no-progress", "--arch-set", "name=h200"], 2,
     "--arch-set name=h200: the architecture is chosen with --arch, not overridden"),
    ("i15-tune-65536", ["tune", "--m", "65536", "--n", "65536", "--k", "65536", "--no-progress"], 2,
     "no candidate of M=65536 N=65536 K=65536 could be simulated: e.g. rank 1: max_events=50,000,000"),
    ("i15-tune-max-events-10", ["tune", *M256, "--max-events", "10", "--no-progress"], 2,
     "could be simulated: e.g. rank 1: max_events=10: this run needs about"),
    ("i15-accuracy-b200-no-data", ["accuracy", "--no-cache", "--data", "b200", "--quick", "--gemm-model",
                                   "{d}/empty_gm"], 2,
     "no data set asked for can be scored: b200: gemm-model data not found"),
    ("i15-accuracy-gemm-model-missing", ["accuracy", "--no-cache", "--data", "b200", "--quick", "--gemm-model",
                                         "/nonexistent"], 2, "--gemm-model '/nonexistent': no such directory"),
    # -- issue 15: output that was lost (checked before the run now)
    ("i15-sweep-out-is-dir", ["sweep", *SET256, "--no-progress", "--out", "{d}/d.csv"], 2,
     "d.csv': is a directory; give a file name"),
    ("i15-tune-out-no-parent", ["tune", *M256, "--no-progress", "--out", "/nonexistent/t.json"], 2,
     "--out '/nonexistent/t.json': directory '/nonexistent' does not exist"),
    ("i15-tune-out-is-dir", ["tune", *M256, "--no-progress", "--out", "{d}/dj.json"], 2,
     "dj.json': is a directory; give a file name"),
    ("i15-accuracy-out-is-file", ["accuracy", "--no-cache", "--data", "h200", "--quick", "--budget", "1", "--out",
                                  "{d}/afile"], 2, "afile': is a file, not a directory"),
    # -- the command line itself
    ("unknown-command", ["nope"], 2, "invalid choice: 'nope'"),
    ("unknown-flag", ["simulate", "--bogus"], 2, "unrecognized arguments: --bogus"),
]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as e:   # argparse usage errors
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_table(case, files, capsys):
    name, argv, code, needle = case
    argv = [a.replace("{d}", str(files)) for a in argv]
    rc, out, err = _run(argv, capsys)
    if name in NOTHING_RUN:
        assert out == "", out[-500:]
    assert "Traceback" not in out + err and "internal error" not in err, err
    assert rc == code, (rc, err[-500:])
    if code == 2:
        lines = [ln for ln in err.strip().splitlines() if not ln.startswith("simulating ")]
        assert len(lines) == 1, err
        assert needle in lines[0], lines[0]
        assert re.match(r"wsim( \w+)?: error: ", lines[0]), lines[0]
        assert "predicted time" not in out
    else:
        assert needle in out, out[-2000:]


def test_table_covers_the_issue_list():
    """The rows above include every input issue 8 lists (by id), so that a row is not dropped silently."""
    ids = {c[0] for c in CASES}
    issue = {"m-20-digits", "huge-D", "huge-toml", "mma-tile-n-0", "epi-tile-n-0", "epi-tile-m-0", "h200-tile-n-0",
             "toml-malformed", "toml-binary", "toml-dir", "toml-config-5", "toml-knobs-5", "toml-use-2sm-maybe",
             "plot-truncated", "plot-empty", "validate-truncated", "validate-empty", "validate-sms-text",
             "validate-sms-999", "toml-m-half", "toml-count-half", "toml-throttle-no", "toml-knob-foo", "sm-count-1.5",
             "sm-count-1", "sm-count-3-cluster-4", "trace-txt", "trace-dir", "trace-sms-500", "violations-no-deadlock",
             "epi-tile-n-1024", "mma-tile-k-4096", "arch-name-agrees", "plot-perfetto-json", "no-throttle-sm90",
             "no-throttle-static", "toml-static-clc-knob", "plot-occupancy-acc"}
    assert issue <= ids, issue - ids
    assert len(CASES) == len(ids)


def test_violations_exit_4_in_json_too(capsys):
    rc, out, err = _run(["simulate", *SMALL, "--arrival-count", "clc.empty=224", "--json"], capsys)
    assert rc == 4
    d = json.loads(out)
    assert d["violation_count"] > 0 and d["deadlock"] is None


def test_unused_override_is_a_warning_that_says_why(capsys):
    rc, _, err = _run(["simulate", *SMALL, "--tile-scheduler", "static", "--arch-set",
                       "clc_query_latency_cycles=800"], capsys)
    assert rc == 0
    assert "warning: arch constant clc_query_latency_cycles=800 is overridden but has no effect" in err
    assert "makes no CLC queries" in err


def test_trace_path_is_reported_as_written(tmp_path, capsys):
    path = tmp_path / "run.npz"
    rc, out, _ = _run(["simulate", *SMALL, "--trace", str(path), "--trace-sms", "0,1,500"], capsys)
    assert rc == 0 and path.exists()
    assert f"trace written to {path} (" in out
    assert sorted(set(Trace.load(path).columns()["sm"].tolist())) == [0, 1]
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]      # nothing else written
    rc, out, err = _run(["simulate", *SMALL, "--trace", str(tmp_path / "run.json"), "--json"], capsys)
    assert rc == 0 and (tmp_path / "run.json").exists()
    assert f"trace written to {tmp_path / 'run.json'}" in err


def test_trace_sms_partly_outside_warns(tmp_path, capsys):
    rc, _, err = _run(["simulate", *SMALL, "--trace", str(tmp_path / "t.npz"), "--trace-sms", "0,500"], capsys)
    assert rc == 0 and "SM(s) 500 are not in this run (it uses SMs 0-7); tracing SM(s) 0" in err


def test_long_run_prints_estimate_and_progress(monkeypatch, capsys):
    import simulator.views.run_args as run_args

    monkeypatch.setattr(run_args, "PROGRESS_MIN_EVENTS", 1)
    rc, out, err = _run(["simulate", "--m", "4096", "--n", "4096", "--k", "8192"], capsys)
    assert rc == 0 and "predicted time" in out
    first, *rest = err.strip().splitlines()
    assert first.startswith("wsim: this run simulates about") and "events" in first
    assert rest and all("% of the output tiles done after" in ln for ln in rest)   # not a TTY: lines


def test_progress_bar_on_a_terminal():
    import io

    from simulator.views.run_args import ProgressReporter

    class Tty(io.StringIO):
        def isatty(self):
            return True

    s = Tty()
    p = ProgressReporter(s, width=10)
    p(0.5)
    p(1.0)
    p.close()
    text = s.getvalue()
    assert "\rwsim: [#####.....]  50%" in text and "[##########] 100%" in text and "\n" not in text


def test_internal_error_is_one_line(monkeypatch, capsys):
    import wsim.cli as cli

    def boom(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(cli.COMMANDS, "simulate", (cli.COMMANDS["simulate"][0], boom))
    monkeypatch.delenv("WSIM_TRACEBACK", raising=False)
    rc, _, err = _run(["simulate"], capsys)
    assert rc == 1 and len(err.strip().splitlines()) == 1
    assert "internal error (a bug in wsim, not in your input): ZeroDivisionError" in err


def test_readme_documents_the_exit_codes():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code in ("0", "2", "3", "4"):
        assert f"| {code} |" in readme


def _readme_toml_example() -> tuple[str, str]:
    """The TOML example of the README's "Configs" section and the output line it quotes."""
    lines = (Path(__file__).resolve().parent.parent / "README.md").read_text().splitlines()
    start = lines.index("    [config]          # Sm100GemmConfig fields (Sm90GemmConfig fields with name = \"h200\" below)")
    end = lines.index("", start)
    quoted = next(ln.strip() for ln in lines[end:end + 6] if ln.strip().startswith("predicted time"))
    return "\n".join(ln[4:] for ln in lines[start:end]) + "\n", quoted


def test_readme_toml_example_runs_as_quoted(tmp_path, capsys):
    text, quoted = _readme_toml_example()
    f = tmp_path / "my.toml"
    f.write_text(text)
    rc, out, err = _run(["simulate", "--config", str(f)], capsys)
    assert rc == 0, err
    got = next((ln.strip() for ln in out.splitlines() if ln.startswith("predicted time")), "")
    assert got == quoted, (f"README.md quotes {quoted!r} for its TOML example but the run prints {got!r}: "
                           "if the model changed on purpose, update the README's quoted line")


def test_table_covers_issue15_list():
    """Every command line of issue 15's audit list has its row above (by id)."""
    ids = {c[0] for c in CASES}
    issue = {"i15-sweep-binary-csv", "i15-sweep-deep-json", "i15-accuracy-budget-inf", "i15-validate-sms-huge",
             "i15-plot-window-inf", "i15-plot-sms-huge", "i15-trace-sms-huge", "i15-l2-bytes-1e30", "i15-smem-1e30",
             "i15-toml-deep", "i15-toml-arch-bigint", "i15-tune-m-int32-max", "i15-gpc-1e30", "i15-sweep-grid-twice",
             "i15-sweep-grid-twice-kernel-field", "i15-sweep-set-over-grid", "i15-sweep-set-empty",
             "i15-sweep-set-none", "i15-sweep-dup-column", "i15-sweep-short-row", "i15-sweep-truncated-file",
             "i15-accuracy-budget-no-quick", "i15-accuracy-budget-other-data", "i15-accuracy-jobs-negative",
             "i15-plot-sms-empty", "i15-tmem-bandwidth-0", "i15-tma-bandwidth-0", "i15-h200-tma-bandwidth-0",
             "i15-gpc-1000", "i15-sweep-out-slash", "i15-sweep-out-no-parent", "i15-sweep-out-under-a-file",
             "i15-sweep-bom", "i15-sweep-arch-set-name", "i15-tune-65536", "i15-tune-max-events-10",
             "i15-accuracy-b200-no-data", "i15-accuracy-gemm-model-missing", "i15-sweep-out-is-dir",
             "i15-tune-out-no-parent", "i15-tune-out-is-dir", "i15-accuracy-out-is-file"}
    assert issue <= ids, issue - ids


def test_a_sweep_whose_out_fails_leaves_nothing_behind(tmp_path, capsys):
    """``--out`` is checked before the run: a folder named d.csv is refused, and no d.constants.json
    (the sidecar) is left beside it."""
    (tmp_path / "d.csv").mkdir()
    rc, out, err = _run(["sweep", *SET256, "--no-progress", "--out", str(tmp_path / "d.csv")], capsys)
    assert rc == 2 and "d.csv': is a directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


@pytest.mark.parametrize("argv,needle", [
    (["sweep", *SET256, "--no-progress", "--out", "{ro}/x.csv"], "--out '{ro}/x.csv': directory '{ro}' is not writable"),
    (["tune", *M256, "--no-progress", "--out", "{ro}/t.csv"], "--out '{ro}/t.csv': directory '{ro}' is not writable"),
    (["accuracy", "--no-cache", "--data", "h200", "--quick", "--budget", "1", "--out", "{ro}/acc"],
     "--out '{ro}/acc': directory '{ro}' is not writable"),
])
def test_unwritable_out_is_refused_before_the_run(argv, needle, tmp_path, monkeypatch, capsys):
    """A read-only folder (access(2) says no; the test patches it, since root may write anywhere):
    the path given is named, and nothing has run."""
    import simulator.engine.out_path as out_path

    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    monkeypatch.setattr(out_path.os, "access", lambda p, mode: False if Path(p) == ro else real(p, mode))
    rc, out, err = _run([a.replace("{ro}", str(ro)) for a in argv], capsys)
    assert rc == 2 and out == "", (rc, out[-300:])
    assert err.strip() == f"wsim: error: {needle.replace('{ro}', str(ro))}"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_read_only_folder_for_real(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    rc, _, err = _run(["sweep", *SET256, "--no-progress", "--out", str(ro / "x.csv")], capsys)
    assert rc == 2 and "is not writable" in err


# -- python -m validation.campaign: its CPU paths (issue 15)
CAMPAIGN_CASES = [
    ("out-is-file", ["--dry-run", "--out", "{d}/afile"], 2, "--out '{d}/afile': is a file, not a directory"),
    ("publish-missing", ["--publish", "{d}/nonexistent", "--dest", "{d}/pubdest"], 2,
     "{d}/nonexistent: no such directory: give the --out folder of a finished campaign"),
    ("publish-not-a-run", ["--publish", "{d}", "--dest", "{d}/pubdest"], 2, "no campaign.json"),
    ("dry-run-and-publish", ["--dry-run", "--publish", "{d}/nonexistent", "--dest", "{d}/pubdest"], 2,
     "--dry-run and --publish: --publish writes a finished run (RUN_DIR) into --dest"),
    ("time-limit-nan", ["--dry-run", "--time-limit", "nan", "--quick", "--out", "{d}/cd6"], 2,
     "--time-limit nan: must be a finite number of seconds > 0"),
    ("time-limit-negative", ["--dry-run", "--time-limit", "-5", "--quick", "--out", "{d}/cd6"], 2,
     "--time-limit -5.0: must be a finite number"),
    ("repeat-without-publish", ["--dry-run", "--quick", "--repeat", "foo", "--out", "{d}/cd9"], 2,
     "--repeat: applies to --publish RUN_DIR"),
    ("dest-without-publish", ["--dry-run", "--quick", "--dest", "foo", "--out", "{d}/cd10"], 2,
     "--dest: applies to --publish RUN_DIR"),
    ("compile-without-dry-run", ["--compile", "--quick", "--out", "{d}/cd13"], 2, "--compile: applies to --dry-run"),
    ("phases-unknown", ["--dry-run", "--phases", "launch,nope", "--out", "{d}/cd14"], 2,
     "--phases 'launch,nope': unknown nope"),
]


@pytest.mark.parametrize("argv,code,needle", [c[1:] for c in CAMPAIGN_CASES], ids=[c[0] for c in CAMPAIGN_CASES])
def test_campaign_bad_input_table(argv, code, needle, tmp_path, capsys):
    from validation.campaign import main as campaign_main

    (tmp_path / "afile").write_text("x\n")
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    rc = campaign_main(argv)
    out, err = capsys.readouterr()
    assert rc == code and out == "", (rc, out[-300:], err)
    (line,) = err.strip().splitlines()
    assert line.startswith("python -m validation.campaign: error: ") and needle.replace("{d}", str(tmp_path)) in line
    assert not (tmp_path / "cd6").exists() and not (tmp_path / "pubdest").exists()


def test_campaign_compile_without_the_dsl_is_one_line(tmp_path, capsys):
    import importlib.util

    from validation.campaign import main as campaign_main

    if importlib.util.find_spec("cutlass") is not None:
        pytest.skip("the CuTe DSL is installed here: --dry-run --compile compiles")
    rc = campaign_main(["--dry-run", "--compile", "--quick", "--out", str(tmp_path / "cd11")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == ("python -m validation.campaign: error: --compile: needs the CuTe DSL (the cutlass "
                               "module of nvidia-cutlass-dsl), which is not installed here")


def test_campaign_dry_run_without_compile_says_nothing_was_compiled(tmp_path, capsys):
    from validation.campaign import main as campaign_main

    assert campaign_main(["--dry-run", "--quick", "--phases", "launch", "--out", str(tmp_path / "cd12")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"compiled no kernel \(\d+ planned; a dry run compiles only with --compile\)", out)
    assert not re.search(r"compiled \d+ kernels", out)
    res = json.loads((tmp_path / "cd12" / "campaign.dry_run.json").read_text())
    assert res["compile_s"] == {}         # no compile times recorded for kernels that were not compiled


def test_a_result_file_cut_inside_its_last_row_is_refused(tmp_path, capsys):
    """A sweep result file cut short (a copy interrupted, a full disk) loses the last row's cells:
    re-running it is an error naming the row, not a config whose lost fields take their defaults."""
    full = tmp_path / "s.csv"
    rc, _, err = _run(["sweep", "--grid", "mma_tile_n=128,256", *SET256, "--no-progress", "--workers", "1",
                       "--out", str(full)], capsys)
    assert rc == 0, err
    text = full.read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: len(text) - len(last) - 1 + len(last) // 3])   # a third of the last row is left
    rc, out, err = _run(["sweep", "--configs", str(cut), "--no-progress"], capsys)
    assert rc == 2 and out == ""
    assert re.search(r"cut\.csv:3: \d+ of \d+ cells \(the row ends after '\w+'; a file cut short\?\)", err), err
