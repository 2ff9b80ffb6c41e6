"""Turn the hardware kernel's record buffer into the shared trace format (simulator.engine.trace.Trace).

Input: the int32 buffer the kernel wrote (hw_kernels/records.py) plus its run metadata (config,
problem, slice capacity, CTAs). Output: a Trace with ``meta["source"] = "measured"`` whose spans use
the same roles and kinds as the SM90 model (hw_kernels/README.md, "How the SM90 model should mirror
it"). Pure numpy: runs on a CPU from a saved buffer (``python -m validation.hw_trace raw.npz out.npz``).

Span definitions (cycles from clock64 of the SM, ns from the CTA's own globaltimer anchor):
* ``wait`` ``mainloop.empty`` (MainloopLoad): producer_acquire start -> done, per K-block; and the
  producer_tail.
* ``tma_load`` (MainloopLoad): both TMA loads issued -> the earliest time a consumer saw the stage
  full (an upper bound of landing: exact when that consumer was already waiting).
* ``wait`` ``mainloop.full`` (Consumer0/1): consumer_wait start -> done, per K-block.
* ``mma`` (Consumer0/1): full-wait done (issue starts) -> the wgmma.wait_group that saw it complete
  (during the next K-block, or the tile's accumulator-ready time for the last K-block).
* ``wait`` ``mma.wait_group`` (Consumer0/1): wgmma.wait_group(1) start -> return (the consumer idles
  on the tensor cores: the K-block before is still running).
* ``tile`` (every role): the role's span on one tile; ``acc_handoff`` (Consumer0/1): instant at
  accumulator ready; ``epilogue`` (Consumer0/1, level 3): one subtile, previous subtile done (or accumulator ready) ->
  store issued (Consumer0) / barrier passed (Consumer1);
  ``wait`` ``epilogue.barrier``: SMEM written -> named barrier passed; ``wait``
  ``epilogue.store_buffer`` (Consumer0, the store thread): cp.async.bulk.wait_group.read;
  ``tma_store`` (Consumer0): store issued -> a later wait_group.read saw it read out (upper bound);
  ``wait`` ``epilogue.store_drain``: the final wait_group 0; ``wait`` ``math_order`` (ping-pong):
  waiting for the warpgroup's mainloop turn (stage 0) or epilogue turn (stage 1).
  ``prologue``: role start -> first tile.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from hw_kernels import records as R
from simulator.engine.trace import Trace


def _u32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64) & 0xFFFFFFFF


class _Slice:
    """One (CTA, role) slice, decoded: records as an (n, 8) int64 array of unsigned words."""

    def __init__(self, words: np.ndarray, cap: int):
        rec = _u32(words.reshape(cap, R.RECORD_WORDS))
        self.ok = int(rec[0, 0] & 0xFF) == R.HEADER and int(rec[1, 0] & 0xFF) == R.FOOTER
        if not self.ok:
            return
        h, f = rec[0], rec[1]
        self.smid = int(h[1])
        self.clk0 = int(h[2] | (h[3] << 32))
        self.gt0 = int(h[4] | (h[5] << 32))
        self.cta_rank, self.cta_linear = int(h[6]), int(h[7])
        self.n = int(f[1])
        self.clk1 = int(f[2] | (f[3] << 32))
        self.gt1 = int(f[4] | (f[5] << 32))
        self.tiles_done, self.dropped = int(f[6]), int(f[7])
        dg = self.gt1 - self.gt0
        self.ghz = (self.clk1 - self.clk0) / dg if dg > 0 else float("nan")
        self.data = rec[R.FIRST_DATA_RECORD:self.n]

    def cycles(self, lo32: np.ndarray) -> np.ndarray:
        """Unwrap 32-bit clock samples against the header's 64-bit start (cycles since role start)."""
        return (np.asarray(lo32, dtype=np.int64) - (self.clk0 & 0xFFFFFFFF)) % (1 << 32)

    def gt_unwrap(self, lo32: np.ndarray) -> np.ndarray:
        return self.gt0 + (np.asarray(lo32, dtype=np.int64) - (self.gt0 & 0xFFFFFFFF)) % (1 << 32)


def decode(buf: np.ndarray, cap: int, ctas: int) -> dict[tuple[int, str], _Slice]:
    """All slices that were written: ``{(cta_linear, role): _Slice}``."""
    buf = np.asarray(buf, dtype=np.int32).ravel()
    per_slice = cap * R.RECORD_WORDS
    out = {}
    for s in range(ctas * R.ROLES_PER_CTA):
        sl = _Slice(buf[s * per_slice:(s + 1) * per_slice], cap)
        if sl.ok:
            out[(s // R.ROLES_PER_CTA, R.ROLE_SLOTS[s % R.ROLES_PER_CTA])] = sl
    return out


def effective_clock_ghz(slices: dict) -> dict:
    """The run's effective SM clock: clock64 ticks over globaltimer ns, per slice, summarized."""
    g = np.array([s.ghz for s in slices.values() if np.isfinite(s.ghz)])
    if g.size == 0:
        return {"median_ghz": None}
    return {"median_ghz": float(np.median(g)), "min_ghz": float(g.min()), "max_ghz": float(g.max()),
            "slices": int(g.size)}


#: C_FIXUP record stage -> the trace's span kind (the model's names, simulator.kernels.fixup).
_FIXUP_KINDS = {R.FIXUP_STORE: "fixup_store", R.FIXUP_REDUCE: "fixup_reduce", R.FIXUP_LOAD: "fixup_load"}


def to_trace(buf: np.ndarray, meta: dict, *, min_wait_cycles: int = 0) -> Trace:
    """Build a Trace from a record buffer. ``meta`` must hold ``capacity``, ``ctas`` and ``config``
    (the KernelConfig dict); everything in it is copied into the trace's metadata."""
    cap, ctas = int(meta["capacity"]), int(meta["ctas"])
    cfg = meta["config"]
    csize = int(cfg["cluster_m"]) * int(cfg["cluster_n"])
    slices = decode(buf, cap, ctas)
    clk = effective_clock_ghz(slices)
    m = dict(meta)
    m.setdefault("source", "measured")
    m["effective_clock"] = clk
    m["dropped_records"] = int(sum(s.dropped for s in slices.values()))
    m["span_semantics"] = {
        "tma_load": "issue -> earliest consumer full-wait done (upper bound of landing; exact if a consumer waited)",
        "mma": "issue start -> the wgmma.wait_group that saw it complete (upper bound)",
        "tma_store": "issue -> the later wait_group.read that saw it read out, same tile only (upper bound)",
        "time_base": "per-slice clock64 scaled by its own clock64/globaltimer ratio, anchored at its "
                     "header's globaltimer (32 ns steps); origin = earliest header",
    }
    tr = Trace(m, clock_ghz=clk["median_ghz"])
    if not slices:
        return tr
    origin_ns = min(s.gt0 for s in slices.values())
    origin_cyc = {}  # per CTA: cycles -> ns of this trace
    stores_per_sub = int(cfg.get("epilogue_store_stages", 4)) - 1

    for (cta, role), sl in sorted(slices.items()):
        cluster = cta // csize
        f = sl.ghz if np.isfinite(sl.ghz) and sl.ghz > 0 else clk["median_ghz"]
        base_ns = sl.gt0 - origin_ns
        origin_cyc[(cta, role)] = (base_ns, f)

        def ns(c, base_ns=base_ns, f=f):
            return base_ns + c / f

        def add(kind, c0, c1, *, tile=None, k=-1, stage=-1, barrier="", role=role, sl=sl, cta=cta,
                cluster=cluster):
            if kind == "wait" and c1 - c0 < min_wait_cycles:
                return
            tr.add_ns(sl.smid, cta, cluster, role, kind, ns(c0), ns(c1), start_cycle=float(c0),
                      end_cycle=float(c1), tile=tile, k_block=k, stage=stage, barrier=barrier)

        d = sl.data
        if d.size == 0:
            continue
        kind, stage, index = (x.astype(int) for x in R.unpack_w0(d[:, 0]))   # elementwise on the arrays
        tm, tn = (x.astype(int) for x in R.unpack_tile(d[:, 1]))
        cyc = sl.cycles(d[:, 2:8])
        first_tile_start = None
        if role == "MainloopLoad":
            for i in np.nonzero(kind == R.P_KBLOCK)[0]:
                t = (tm[i], tn[i], 0)
                add("wait", cyc[i, 0], cyc[i, 1], tile=t, k=index[i], stage=stage[i], barrier="mainloop.empty")
            for i in np.nonzero(kind == R.P_TILE)[0]:
                add("tile", cyc[i, 0], cyc[i, 1], tile=(tm[i], tn[i], 0))
                first_tile_start = cyc[i, 0] if first_tile_start is None else first_tile_start
            for i in np.nonzero(kind == R.P_TAIL)[0]:
                add("wait", cyc[i, 0], cyc[i, 1], barrier="mainloop.empty")
        else:
            kb = np.nonzero(kind == R.C_KBLOCK)[0]
            tiles = np.nonzero(kind == R.C_TILE)[0]
            acc_ready = {(tm[i], tn[i]): cyc[i, 1] for i in tiles}
            for j, i in enumerate(kb):
                t = (tm[i], tn[i], 0)
                add("wait", cyc[i, 0], cyc[i, 1], tile=t, k=index[i], stage=stage[i], barrier="mainloop.full")
                nxt = kb[j + 1] if j + 1 < len(kb) else None
                if nxt is not None and index[nxt] == index[i] + 1 and (tm[nxt], tn[nxt]) == (tm[i], tn[i]):
                    done = cyc[nxt, 3]
                else:
                    done = acc_ready.get((tm[i], tn[i]), cyc[i, 2])
                add("mma", cyc[i, 1], done, tile=t, k=index[i], stage=stage[i])
                if index[i] > 0:
                    add("wait", cyc[i, 2], cyc[i, 3], tile=t, k=index[i], stage=stage[i], barrier="mma.wait_group")
            for i in tiles:
                t = (tm[i], tn[i], 0)
                add("tile", cyc[i, 0], cyc[i, 2], tile=t)
                add("acc_handoff", cyc[i, 1], cyc[i, 1], tile=t)
                first_tile_start = cyc[i, 0] if first_tile_start is None else first_tile_start
            epi = np.nonzero(kind == R.C_EPI)[0]
            store_thread = role == "Consumer0"
            prev_end = None
            for j, i in enumerate(epi):
                t = (tm[i], tn[i], 0)
                end = cyc[i, 3] if store_thread else cyc[i, 2]
                # A subtile starts where the previous one of the same tile ended (registers ->
                # convert -> stmatrix are not stamped separately), the first at accumulator ready.
                same_tile = j > 0 and (tm[epi[j - 1]], tn[epi[j - 1]]) == (tm[i], tn[i])
                start = prev_end if same_tile else acc_ready.get((tm[i], tn[i]), cyc[i, 1])
                add("epilogue", start, end, tile=t, k=index[i], stage=stage[i])
                prev_end = end
                add("wait", cyc[i, 1], cyc[i, 2], tile=t, k=index[i], stage=stage[i], barrier="epilogue.barrier")
                if store_thread:
                    add("wait", cyc[i, 1], cyc[i, 4], tile=t, k=index[i], stage=stage[i],
                        barrier="epilogue.store_buffer")
                    later = epi[j + stores_per_sub] if j + stores_per_sub < len(epi) else None
                    # Only when the wait that saw this store read out belongs to the same tile: across
                    # tiles the next wait comes after a whole mainloop and bounds nothing useful.
                    if later is not None and (tm[later], tn[later]) == (tm[i], tn[i]):
                        add("tma_store", cyc[i, 3], cyc[later, 4], tile=t, k=index[i], stage=stage[i])
            for i in np.nonzero(kind == R.C_ORDER)[0]:  # ping-pong math-order turns
                t = (tm[i], tn[i], 0)
                add("wait", cyc[i, 0], cyc[i, 1], tile=t, stage=0, barrier="math_order")
                add("wait", cyc[i, 2], cyc[i, 3], tile=t, stage=1, barrier="math_order")
            for i in np.nonzero(kind == R.C_STORE_TAIL)[0]:
                add("wait", cyc[i, 0], cyc[i, 1], barrier="epilogue.store_drain")
            for i in np.nonzero(kind == R.C_FIXUP)[0]:  # stream-K / split-K: the flag wait, then the work
                t = (tm[i], tn[i], 0)
                add("wait", cyc[i, 0], cyc[i, 1], tile=t, k=index[i], barrier="fixup")
                add(_FIXUP_KINDS.get(int(stage[i]), "fixup_store"), cyc[i, 0], cyc[i, 2], tile=t, k=index[i])
        if first_tile_start is not None:
            add("prologue", 0, first_tile_start)

    # tma_load: producer issue -> earliest consumer full-wait done of the same (tile, k) on that CTA.
    _add_tma_loads(tr, slices, origin_cyc, csize)
    return tr


def _add_tma_loads(tr: Trace, slices: dict, origin_cyc: dict, csize: int) -> None:
    """tma_load spans: producer issue -> the earliest time a consumer of the same CTA saw that
    (tile, K-block) full. Matched by (tile, K-block), not by order: in ping-pong the two consumers
    take alternate tiles."""
    for (cta, role), sl in slices.items():
        if role != "MainloopLoad" or sl.data.size == 0:
            continue
        prod = sl.data[(sl.data[:, 0] & 0xFF) == R.P_KBLOCK]
        if prod.size == 0:
            continue
        seen: dict[tuple[int, int, int], float] = {}
        for crole in ("Consumer0", "Consumer1"):
            cs = slices.get((cta, crole))
            if cs is None or cs.data.size == 0:
                continue
            cd = cs.data[(cs.data[:, 0] & 0xFF) == R.C_KBLOCK]
            base_c, f_c = origin_cyc[(cta, crole)]
            t_seen = base_c + cs.cycles(cd[:, 3]) / f_c
            for w0, w1, t in zip(cd[:, 0].tolist(), cd[:, 1].tolist(), t_seen.tolist(), strict=True):
                key = (*R.unpack_tile(w1), R.unpack_w0(w0)[2])
                seen[key] = min(seen.get(key, t), t)
        if not seen:
            continue
        base_p, f_p = origin_cyc[(cta, role)]
        issue_cyc = sl.cycles(prod[:, 4])
        for i in range(len(prod)):
            w0, w1 = int(prod[i, 0]), int(prod[i, 1])
            _, stage_w0, kb_w0 = R.unpack_w0(w0)
            key = (*R.unpack_tile(w1), kb_w0)
            if key not in seen:
                continue
            start_ns = base_p + issue_cyc[i] / f_p
            end_ns = max(seen[key], start_ns)
            tr.add_ns(sl.smid, cta, cta // csize, role, "tma_load", start_ns, end_ns,
                      start_cycle=float(issue_cyc[i]), end_cycle=float(issue_cyc[i] + (end_ns - start_ns) * f_p),
                      tile=(key[0], key[1], 0), k_block=key[2], stage=stage_w0)


def summarize(tr: Trace) -> dict:
    """What a comparison needs: total, per-tile durations, per-role busy and wait by barrier."""
    c = tr.columns()
    out: dict = {"spans": len(tr), "duration_ns": tr.duration_ns}
    if len(tr) == 0:
        return out
    roles = sorted(set(c["role"].tolist()))
    per_role = {}
    for r in roles:
        rm = c["role"] == r
        span = {}
        ctas = np.unique(c["cta"][rm])
        total = 0.0
        for cta in ctas:
            mm = rm & (c["cta"] == cta)
            total += float(c["end_ns"][mm].max() - c["start_ns"][mm].min())
        waits = {}
        wm = rm & (c["kind"] == "wait")
        for b in sorted(set(c["barrier"][wm].tolist())):
            bm = wm & (c["barrier"] == b)
            waits[b] = float((c["end_ns"][bm] - c["start_ns"][bm]).sum())
        wait_total = sum(waits.values())
        span["active_ns_sum_over_ctas"] = total
        span["wait_ns_by_barrier"] = waits
        span["wait_fraction"] = wait_total / total if total > 0 else None
        tm = rm & (c["kind"] == "tile")
        dur = c["end_ns"][tm] - c["start_ns"][tm]
        if dur.size:
            span["tile_ns"] = {"median": float(np.median(dur)), "p10": float(np.percentile(dur, 10)),
                               "p90": float(np.percentile(dur, 90)), "count": int(dur.size)}
        for kind in ("mma", "tma_load", "epilogue", "tma_store"):
            km = rm & (c["kind"] == kind)
            if km.any():
                kd = c["end_ns"][km] - c["start_ns"][km]
                span[f"{kind}_ns_median"] = float(np.median(kd))
        per_role[r] = span
    out["roles"] = per_role
    return out


def load_raw(path: str | Path) -> tuple[np.ndarray, dict]:
    """A raw record dump written by validation/collect.py: ``buf`` (int32) and ``meta`` (JSON)."""
    data = np.load(path, allow_pickle=False)
    return data["buf"], json.loads(str(data["meta"]))


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m validation.hw_trace",
                                 description="Convert a raw record dump (collect.py) into a shared-format trace")
    ap.add_argument("raw", help="raw .npz from validation.collect (arrays buf, meta)")
    ap.add_argument("out", help="trace .npz to write")
    ap.add_argument("--min-wait-cycles", type=int, default=0,
                    help="drop wait spans shorter than this (keeps traces small)")
    a = ap.parse_args(argv)
    buf, meta = load_raw(a.raw)
    tr = to_trace(buf, meta, min_wait_cycles=a.min_wait_cycles)
    tr.meta["summary"] = summarize(tr)
    tr.save(a.out)
    s = tr.meta["summary"]
    print(f"{a.out}: {len(tr)} spans, {s['duration_ns'] / 1e3:.1f} us, clock {tr.meta['effective_clock']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
