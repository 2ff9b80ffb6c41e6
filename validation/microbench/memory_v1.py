"""Memory-system microbenchmarks on the GPU: the H200 constants we measure ourselves.

    python -m validation.microbench --out DIR      # on the GPU machine; writes DIR/microbench.json

(validation/microbench.py until the v2 microbenchmarks moved it here; the JSON it wrote is
validation/results/h200_microbench.json.)

What it measures (each with the SM clock NVML reported meanwhile, since rates per cycle are what
the simulator uses):

* ``l2_bytes``: the L2 size the device reports (``cudaDeviceProp.l2CacheSize``);
* HBM bandwidth: a 4 GiB device-to-device copy (read + write bytes over time);
* L2 read bandwidth: a Triton kernel that every SM uses to read a buffer that fits in L2 many times
  over (fp32 loads, one accumulator per lane), for several buffer sizes; the sizes past the L2
  show where reads fall back to HBM.

These are experiments of their own, not the GEMMs the model is validated on.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path


def _nvml_sampler():
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # noqa: BLE001 - NVML is optional
        return None
    samples: list[float] = []
    stop = threading.Event()

    def run():
        while not stop.is_set():
            samples.append(float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)))
            time.sleep(0.005)

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def finish() -> float | None:
        stop.set()
        t.join()
        return sorted(samples)[len(samples) // 2] if samples else None

    return finish


def main(argv: list[str] | None = None) -> int:
    import torch
    import triton
    import triton.language as tl

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="directory for microbench.json")
    args = ap.parse_args(argv)
    dev = torch.cuda.get_device_properties(0)
    res: dict = {"device": dev.name, "sms": dev.multi_processor_count, "l2_bytes": int(dev.L2_cache_size),
                 "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "command": "python -m validation.microbench --out OUT", "torch": torch.__version__,
                 "triton": triton.__version__}

    def timed(fn, iters: int) -> float:
        fn()
        torch.cuda.synchronize()
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        st.record()
        for _ in range(iters):
            fn()
        en.record()
        torch.cuda.synchronize()
        return st.elapsed_time(en) / 1e3 / iters

    # HBM: device-to-device copy, read + write.
    n = 1 << 30  # fp32 elements: 4 GiB
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    fin = _nvml_sampler()
    t = timed(lambda x=x, y=y: y.copy_(x), 20)
    clk = fin() if fin else None
    res["hbm_copy"] = {"bytes": 2 * 4 * n, "seconds": t, "bytes_per_s": 2 * 4 * n / t, "nvml_sm_mhz": clk}
    del x, y

    @triton.jit
    def l2_read(X, OUT, n_elems, reps, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for _r in range(reps):
            for start in range(pid * BLOCK, n_elems, nprog * BLOCK):
                offs = start + tl.arange(0, BLOCK)
                acc += tl.load(X + offs, mask=offs < n_elems, other=0.0)
        tl.store(OUT + pid * BLOCK + tl.arange(0, BLOCK), acc)

    block = 2048
    grid = dev.multi_processor_count * 4
    out = torch.empty(grid * block, device="cuda")
    sweep = []
    for mib in (8, 16, 24, 32, 40, 48, 64, 96, 192):
        elems = mib * (1 << 20) // 4
        buf = torch.randn(elems, device="cuda")
        reps = max(2, int(2048 // mib))
        fin = _nvml_sampler()
        t = timed(lambda buf=buf, elems=elems, reps=reps: l2_read[(grid,)](buf, out, elems, reps, BLOCK=block), 5)
        clk = fin() if fin else None
        bw = reps * elems * 4 / t
        sweep.append({"buffer_mib": mib, "reps": reps, "seconds": t, "bytes_per_s": bw, "nvml_sm_mhz": clk})
        print(f"[l2] {mib:4d} MiB: {bw / 1e12:6.2f} TB/s (SM {clk} MHz)", flush=True)
        del buf
    res["l2_read_sweep"] = sweep
    path = Path(args.out) / "microbench.json"
    path.write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k != "l2_read_sweep"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
