"""The ``wsim check`` catalogue: mutations x configs, as JSON and as Markdown (written by a command).

    wsim check --grid full --out validation/results/check_catalogue.md     # also writes the .json beside it

:func:`catalogue` turns a :class:`~simulator.engine.check.CheckReport` into plain data (no wall times:
the same grid gives the same file, bit for bit); :func:`markdown` renders it: the counts per class,
the unmutated protocol's row (nothing found, every config), the CuTe-DSL twins' counts against the
model's, the matrix of classes, each mutation's findings with its first detection cycle, every
"no effect" with its reason, and what Triton's ConSan would catch (its documented checks and tests).
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from simulator.engine.check import CHECK_SMS, CLASSES, CheckReport, Outcome, run_case, sm90_one_stage
from simulator.protocol.mutations import STREAM_K_FIXUP

#: Cell codes of the matrix.
CODES = {"race+deadlock": "RD", "deadlock": "D", "race": "R", "no effect": ".", "n/a": "-"}

#: Triton ConSan's sources (stored public copies read for this table; commits as stored).
CONSAN_SOURCES = {
    "C1": "triton-lang/triton include/triton/Dialect/TritonInstrument/IR/TritonInstrument.md (ConSan design; "
          "commit 0879b818c032a147ead76dbed4aa9c44630d375f): barrier lifecycle and tx-count state, 'Arrivals are "
          "checked for count underflow and tx-count range violations', deadlock detection when every active "
          "partition waits, the visibility model (an access is legal only if the thread can see the completed "
          "conflicting accesses), 'one logical thread per warp-specialization partition', Triton/Gluon IR only",
    "C2": "triton-lang/triton PR #8285 '[ConSan] Deadlock Detection' (2025-09-25): under- and over-arrival deadlocks; "
          "'We treat TMA and TC commits as barrier arrivals with count=1'",
    "C3": "triton-lang/triton PR #9046 '[CONSAN] Fix for false positive deadlock detection' (2025-12-18): 'treating "
          "mbarrier.expect as an arrive ... still allows for deadlocks caused by wrong transfer size in expect'",
    "C4": "triton-lang/triton python/test/gluon/test_consan.py (commit 006f4959ba6701dcbdac3fd4ffa9908830a54b2d): "
          "test_deadlock_underarrival, test_deadlock_overarrival ('Deadlock detected'), test_barrier_underflow "
          "('Barrier arrive underflow'), test_ws_two_loads_two_bars_loop and test_async_tma_kernel (a missing wait: "
          "'Buffer being accessed has outstanding writes/reads', or a deadlock), test_async_shared_store_expect_bytes "
          "(expect +4 B, 2 or 4 CTAs: 'Deadlock detected'), test_clc_result_visibility (CLC result read without its "
          "wait), test_aliasing_tensor_visibility_outstanding_read (TMEM)",
}


#: What ConSan reports, by the short label the catalogue's column uses.
CONSAN_LEGEND = {
    "deadlock": "deadlock detection: the phase never completes and every partition ends up waiting [C2, C4]",
    "underflow / race / deadlock": "'Barrier arrive underflow' when one arrive exceeds what is left; else the phase "
                                   "flips early and the next access is a visibility race, or an over-arrival deadlock "
                                   "[C1, C2, C4]. ConSan counts per arrive op (one logical thread per partition), not "
                                   "per hardware thread [C1]",
    "too many: deadlock; too few: underflow / race / deadlock": "as the two labels above, by the direction of the "
                                                                "dropped factor in the config",
    "race (any timing)": "a visibility race on the executed path whatever the timing ('Buffer being accessed has "
                         "outstanding writes/reads'), or a deadlock [C1, C4]",
    "race or deadlock": "a wait that passes early: a visibility race; one that never passes: deadlock [C1, C2]",
    "nothing": "nothing to report: the barrier orders no buffer access [C1]",
    "not modelled": "named barriers (bar.sync) are not among ConSan's barriers [C1]",
    "not documented": "TMEM deallocation is not among ConSan's instrumented operations [C1]",
    "missed (PR #9046); deadlock (tx-count)": "PR #9046 treats expect as a plain arrive: the kernel hangs with no "
                                               "report [C3]; with the later tx-count accounting, deadlock detection "
                                               "(test_async_shared_store_expect_bytes, +4 B) [C1, C4]",
    "missed (PR #9046); untested (tx-count)": "PR #9046: missed [C3]; with the later tx-count accounting the phase "
                                               "flips after the first TMA and the second one's write lands on the "
                                               "next phase: no test of this case [C1, C4]",
}


def consan(mutation_id: str, family: str, target: str) -> str:
    """What ConSan's documented checks would report for this kind of mistake, were the protocol written
    in Gluon and run on a GPU on the same path (ConSan instruments Triton IR: it cannot run the C++
    seed); a label of :data:`CONSAN_LEGEND`."""
    perf = target.split(".")[0] in ("clc_throttle", "epilogue_throttle", "load_order")
    if family in ("count", "factor"):
        if target in ("tmem_alloc", "epilogue_named"):
            return "not modelled"
        if "count +" in mutation_id:
            return "deadlock"
        if "count -" in mutation_id:
            return "underflow / race / deadlock"
        return "too many: deadlock; too few: underflow / race / deadlock"
    if family in ("release", "start_phase"):
        return "deadlock"
    if family == "wait":
        if perf:
            return "nothing"
        return {"tmem_alloc": "not modelled", "tmem_dealloc": "not documented"}.get(target, "race (any timing)")
    if family == "parity":
        return "nothing" if perf else ("not documented" if target == "tmem_dealloc" else "race or deadlock")
    if family == "expect_tx":
        return ("missed (PR #9046); untested (tx-count)" if "2-SM" in mutation_id
                else "missed (PR #9046); deadlock (tx-count)")
    if family == "throttle":
        return "nothing"
    return ""


#: Characters of a finding's description the catalogue keeps (``wsim check --config`` prints it whole).
DETAIL_CHARS = 160


def compact(outcome: dict) -> dict:
    """An outcome as the catalogue stores it: empty fields and the makespan left out, the description
    shortened, an n/a reason without the knob it restates."""
    d = {k: v for k, v in outcome.items() if v not in (None, "", [], {}) and k != "cycles"}
    if "detail" in d:
        d["detail"] = d["detail"][:DETAIL_CHARS]
    if d.get("cls") == "n/a":
        d.pop("value", None)
        d["why"] = d.get("why", "").split(": cannot apply to this run: ")[-1]
    return d


def _short(cfg) -> dict[str, Any]:
    """The config's fields that differ from the dataclass defaults."""
    out = {}
    for f in fields(cfg):
        v = getattr(cfg, f.name)
        if v != f.default:
            out[f.name] = v
    return out


def catalogue(report: CheckReport, *, grid: str, command: str, twins: list[dict] | None = None) -> dict:
    """Plain, deterministic data of a check run (what the .json holds and the .md is made from);
    ``twins``: the hardware twins' counts against the model's (``hw_kernels.static_counts.twin_rows``,
    which ``wsim`` passes in: the simulator never imports the twins)."""
    from simulator.protocol.mutations import mutations_for

    mutations: dict[tuple[str, str], dict] = {}
    for r in report.cases:
        kernel = _kernel(r.case.id)
        for m in mutations_for(r.case.config.resolved(r.case.resolved_arch())):
            mutations.setdefault((kernel, m.id), {"id": m.id, "family": m.family, "target": m.target,
                                                  "kernel": kernel, "consan": consan(m.id, m.family, m.target)})
    one = run_case(sm90_one_stage(), only=lambda m: False)
    return {
        "command": command,
        "grid": grid,
        "arch": f"B200 (SM100) and H200 (SM90) specs with sm_count={CHECK_SMS}, gpc_count=1 (every cluster up to "
                "4x4 fits; each CTA runs 3 tiles, each stage 2-3 rounds)",
        "classes": list(CLASSES),
        "summary": {k: report.counts(k) for k in ("sm100", "sm90")},
        "baseline": [{"config": r.case.id, "kernel": type(r.case.config).__name__, "fields": _short(r.case.config),
                      "class": r.baseline.cls, "detail": r.baseline.detail, "cycles": round(r.baseline_cycles, 1),
                      "events": r.baseline_events} for r in report.cases],
        "excluded": [{"config": one.case.id, "fields": _short(one.case.config), "class": one.baseline.cls,
                      "detail": one.baseline.detail,
                      "why": "not in the grid: CUTLASS's SM90 collective asserts Stages >= 2 (its consumer releases a "
                             "stage only after waiting on the next one, K_PIPE_MMAS = 1), and the unmutated run "
                             "shows why"}],
        "stream_k": list(STREAM_K_FIXUP) or "the stream-K / split-K fixup barrier is not in the model yet "
                                            "(data-parallel tiles only): no mutation of it is checked",
        "mutations": list(mutations.values()),
        "outcomes": [compact(o.to_dict()) for o in report.outcomes],
        "twins": list(twins or []),
        "consan_sources": CONSAN_SOURCES,
    }


def _kernel(config_id: str) -> str:
    return config_id.split("-")[0]


def describe_outcome(o: Outcome) -> str:
    """One outcome in words: the class and first cycle, what the mutation set, what was found (race
    kinds, blocked roles, the wait-for cycle, the deadlock report) or why nothing was."""
    head = f"{o.mutation}: {o.cls.upper()}" + (f" (first at cycle {o.cycle:,.0f})" if o.cycle is not None else "")
    lines = [head]
    if o.value:
        lines.append(f"  sets: {o.value}")
    if o.race_kinds:
        lines.append("  found: " + ", ".join(f"{k} x{n}" for k, n in o.race_kinds.items()))
    if o.blocked:
        lines.append("  blocked: " + ", ".join(o.blocked))
    if o.wait_for:
        lines.append("  wait-for cycle: " + " -> ".join(o.wait_for + o.wait_for[:1]))
    if o.detail:
        lines.append(f"  {o.detail}")
    if o.why:
        lines.append(f"  why: {o.why}")
    return "\n".join(lines)


def load_catalogue(path: str | Path) -> dict:
    """A catalogue written by ``wsim check --out FILE.md`` (its ``.json``), e.g.
    ``validation/results/check_catalogue.json``."""
    p = Path(path)
    cat = json.loads(p.read_text())
    if not isinstance(cat, dict) or "outcomes" not in cat or "mutations" not in cat:
        raise ValueError(f"{p}: not a wsim check catalogue (no 'outcomes' and 'mutations'; written by wsim check --out)")
    return cat


def mutation_row(cat: dict, mutation_id: str, kernel: str = "sm100") -> list[dict]:
    """One row of the catalogue: the outcome of ``mutation_id`` on every config of ``kernel``'s grid,
    in grid order (compact outcomes, as :func:`compact` stores them)."""
    row = _by_mutation(cat).get((kernel, mutation_id))
    if not row:
        known = [m["id"] for m in cat["mutations"] if m["kernel"] == kernel]
        raise KeyError(f"mutation {mutation_id!r}: not in the catalogue's {kernel} rows ({len(known)} mutations, "
                       f"e.g. {known[0]!r})")
    return row


def format_mutation_row(cat: dict, mutation_id: str, kernel: str = "sm100") -> str:
    """:func:`mutation_row` as text: per class, how many configs, the first finding's cycles, which
    configs, and why nothing was found where nothing was; then what Triton's ConSan would report."""
    row = mutation_row(cat, mutation_id, kernel)
    lines = [f"{kernel} {mutation_id}: {len(row)} configs of the {cat['grid']} grid"]
    for c in cat["classes"]:
        os_ = [o for o in row if o["cls"] == c]
        if not os_:
            continue
        cyc = [o["cycle"] for o in os_ if o.get("cycle") is not None]
        span = _cyc(min(cyc)) + (f"-{_cyc(max(cyc))}" if cyc and max(cyc) > min(cyc) else "") if cyc else ""
        when = f", first found at cycle {span}" if cyc else ""
        names = ", ".join(o["config"] for o in os_[:4]) + (f", ... ({len(os_) - 4} more)" if len(os_) > 4 else "")
        lines.append(f"  {c:<14}{len(os_):>3} config(s){when}: {names}")
        lines += [f"  {'':<14}    why: {why}" for why in dict.fromkeys(o["why"].split("): ")[-1] for o in os_
                                                                         if o.get("why"))]
    consan_label = next(m["consan"] for m in cat["mutations"] if m["kernel"] == kernel and m["id"] == mutation_id)
    return "\n".join(lines + [f"  Triton ConSan, for the same mistake in a Gluon kernel: {consan_label}"])


def _by_mutation(cat: dict) -> dict[tuple[str, str], list[dict]]:
    by: dict[tuple[str, str], list[dict]] = {}
    for o in cat["outcomes"]:
        by.setdefault((_kernel(o["config"]), o["mutation"]), []).append(o)
    return by


def _cell(o: dict) -> str:
    return CODES[o["cls"]]


def _cyc(x) -> str:
    return "-" if x is None else f"{x:,.0f}"


def markdown(cat: dict) -> str:
    out = [f"# wsim check: every mutation of the seed's barriers, {cat['grid']} grid", "",
           f"Written by `{cat['command']}` (do not edit by hand; the same command rewrites it bit for bit, "
           "beside the `.json` with every outcome).", "",
           f"Machine: {cat['arch']}. Each config runs unmutated first, then once per mutation, with the race "
           "detectors on (stage ownership per buffer, bytes per phase, TMEM lifetime; "
           "`simulator/protocol/races.py`). Classes: **deadlock** (roles blocked with nothing left to wake them), "
           "**race** (arrivals in the wrong phase, a stage overwritten while read, a read before all its bytes "
           "landed, TMEM used after it was freed), **race+deadlock** (both; the first finding's cycle is given), "
           "**no effect** (correct run; the reason is listed below), **n/a** (the mutation cannot act on the "
           "config). Cycles are simulated SM cycles from the kernel's start.", ""]
    out += ["## Summary", "", "| kernel | " + " | ".join(cat["classes"]) + " | total |",
            "| --- |" + " ---: |" * (len(cat["classes"]) + 1)]
    for k, counts in cat["summary"].items():
        out.append(f"| {k} | " + " | ".join(str(counts[c]) for c in cat["classes"]) + f" | {sum(counts.values())} |")
    base_bad = [b for b in cat["baseline"] if b["class"] != "no effect"]
    unexplained = [o for o in cat["outcomes"] if o["cls"] == "no effect" and o.get("why", "").startswith("UNEXPLAINED")]
    out += ["", f"Unmutated protocol: **{len(cat['baseline']) - len(base_bad)} of {len(cat['baseline'])} configs "
            f"with nothing found** (no deadlock, no wrong-phase arrival, no race, every tile once)"
            + ("" if not base_bad else f"; FINDINGS on {', '.join(b['config'] for b in base_bad)}") + ". "
            f"No-effect outcomes without a reason: {len(unexplained)}.", ""]
    for e in cat["excluded"]:
        out.append(f"Excluded: `{e['config']}` ({e['why']}): {e['class']}, {e['detail']}.")
    sk = cat["stream_k"]
    if isinstance(sk, list):
        sk = ("the fixup flag of the stream-K scheduler (simulator.protocol.fixup): " + ", ".join(f"*{m}*" for m in sk)
              + "; checked on the grid's stream-K and split-K configs, n/a on the data-parallel ones")
    out += ["", f"Stream-K / split-K: {sk}.", ""]
    out += _twins_md(cat) + _matrix_md(cat) + _mutations_md(cat) + _no_effect_md(cat) + _consan_md(cat)
    return "\n".join(out) + "\n"


def _twins_md(cat: dict) -> list[str]:
    out = ["## The CuTe-DSL twins' counts are the unmutated row", "",
           "Each twin's own arrival counts, read from its source without the DSL (`hw_kernels/static_counts.py`), "
           "against the counts the model's barriers are initialised with in the same config (twin, model):", "",
           "| twin | mode, cluster | configs | equal | counts (twin/model) |", "| --- | --- | --- | --- | --- |"]
    for t in cat["twins"]:
        counts = "; ".join(f"{k} {a}/{b}" for k, (a, b) in t["counts"].items())
        out.append(f"| `{t['twin'].split()[0]}` | {t['mode']}, {t['cluster']} | {len(t['configs'])} | "
                   f"{'yes' if t['equal'] else '**NO**'} | {counts} |")
    return out + [""]


def _matrix_md(cat: dict) -> list[str]:
    out = ["## Matrix", "", "RD race+deadlock, D deadlock, R race, . no effect, - n/a. Configs:", ""]
    for kernel in ("sm100", "sm90"):
        cfgs = [b["config"] for b in cat["baseline"] if b["config"].startswith(kernel)]
        out.append(f"{kernel}: " + ", ".join(f"{i + 1} `{c}`" for i, c in enumerate(cfgs)))
        out.append("")
        by = {(o["mutation"], o["config"]): o for o in cat["outcomes"]}
        muts = [m["id"] for m in cat["mutations"] if m["kernel"] == kernel]
        out.append("| mutation | " + " | ".join(str(i + 1) for i in range(len(cfgs))) + " |")
        out.append("| --- |" + " --- |" * len(cfgs))
        for mid in muts:
            out.append(f"| {mid} | " + " | ".join(_cell(by[(mid, c)]) if (mid, c) in by else " " for c in cfgs) + " |")
        out.append("")
    return out


def _mutations_md(cat: dict) -> list[str]:
    out = ["## Each mutation: what it does over the grid", "",
           "Classes over the configs, the first detection (simulated cycle, smallest and largest over the configs "
           "where something was found) and the finding on the first such config.", ""]
    by = _by_mutation(cat)
    for m in cat["mutations"]:
        os_ = by.get((m["kernel"], m["id"]), [])
        counts = {c: sum(1 for o in os_ if o["cls"] == c) for c in cat["classes"]}
        found = [o for o in os_ if o["cls"] in ("race+deadlock", "deadlock", "race")]
        cyc = [o["cycle"] for o in found if o.get("cycle") is not None]
        line = f"- {m['kernel']} **{m['id']}**: " + ", ".join(f"{c} {n}" for c, n in counts.items() if n)
        if cyc:
            line += f"; detected at cycle {_cyc(min(cyc))}-{_cyc(max(cyc))}"
        if found:
            f = found[0]
            line += f". `{f['config']}` ({f.get('value') or 'as named'}): {f['cls']}: {f.get('detail', '')}"
        out.append(line)
    return out + [""]


def _no_effect_md(cat: dict) -> list[str]:
    out = ["## No effect, and why", "",
           "Mutations that ran and changed nothing the detectors see, by reason (a *latent* hazard is one "
           "nothing orders any more, which this timing never exposes):", ""]
    ran: dict[tuple[str, str], list[str]] = {}
    same: dict[tuple[str, str], list[str]] = {}
    for o in cat["outcomes"]:
        if o["cls"] != "no effect":
            continue
        why = o.get("why", "")
        if o.get("not_run"):
            same.setdefault((o["mutation"], why.split("): ")[-1]), []).append(o["config"])
        else:
            ran.setdefault((o["mutation"], why.split(" (kernel time")[0]), []).append(o["config"])
    for (mid, why), cfgs in ran.items():
        out.append(f"- **{mid}** on {len(cfgs)} config(s) ({', '.join(cfgs[:3])}{', ...' if len(cfgs) > 3 else ''})"
                   f": {why}")
    out += ["", "Mutations that are no change in some configs (the factor they drop is neutral there; not run):",
            ""]
    for (mid, why), cfgs in same.items():
        out.append(f"- {mid}: {len(cfgs)} config(s): {why}")
    out += ["", "n/a (the mutation cannot act on the config), by reason:", ""]
    na: dict[str, int] = {}
    for o in cat["outcomes"]:
        if o["cls"] == "n/a":
            reason = o.get("why", "").split(": cannot apply to this run: ")[-1]
            na[reason] = na.get(reason, 0) + 1
    out += [f"- {n} x {r}" for r, n in sorted(na.items(), key=lambda x: (-x[1], x[0]))]
    return out + [""]


def _consan_md(cat: dict) -> list[str]:
    out = ["## What Triton's ConSan would catch", "",
           "ConSan instruments Triton/Gluon IR and runs on a GPU (Hopper or newer): it cannot check the CUTLASS C++ "
           "seed at all, and sees only the paths a run takes. The column says what its documented checks and "
           "tests report for the same kind of mistake in a Gluon kernel. ConSan flags a missing handoff whatever "
           "the timing (here such a case can be a timing-latent 'no effect'); wsim check runs every mutation on "
           "every config on a CPU, counts per thread, and accounts expect-tx bytes per phase, which PR #9046's "
           "ConSan treats as a plain arrive. Where the two part ways, with this grid's numbers:", "",
           ] + _differences(cat) + [
           "", "| mutation | wsim check over the grid (RD, D, R, no effect, n/a: configs) | ConSan |",
           "| --- | --- | --- |"]
    by = _by_mutation(cat)
    for m in cat["mutations"]:
        cls = [o["cls"] for o in by.get((m["kernel"], m["id"]), [])]
        summary = ", ".join(f"{CODES[c]} {cls.count(c)}" for c in cat["classes"] if cls.count(c))
        out.append(f"| {m['kernel']} {m['id']} | {summary} | {m['consan']} |")
    out += ["", "ConSan labels:", ""] + [f"- **{k}**: {v}" for k, v in CONSAN_LEGEND.items()]
    out += ["", "Sources (stored public copies of the Triton repository, read for this table):", ""]
    out += [f"- [{k}] {v}" for k, v in cat["consan_sources"].items()]
    return out + [""]


def _differences(cat: dict) -> list[str]:
    """The rows where wsim check and ConSan part ways, with this catalogue's numbers."""
    by = _by_mutation(cat)

    def tally(kernel: str, pred) -> tuple[int, int]:
        found = run = 0
        for (k, mid), os_ in by.items():
            if k == kernel and pred(mid):
                for o in os_:
                    run += o["cls"] not in ("n/a",) and not o.get("not_run")
                    found += o["cls"] in ("race+deadlock", "deadlock", "race")
        return found, run

    tx = tally("sm100", lambda m: "expect-tx" in m and "2-SM" not in m)
    tx90 = tally("sm90", lambda m: "expect-tx" in m)
    early = tally("sm100", lambda m: m == "mainloop expect-tx without the 2-SM factor")
    dealloc = tally("sm100", lambda m: m.startswith("tmem_dealloc wait skipped"))
    latent = tally("sm100", lambda m: m == "clc.empty wait skipped")
    return [
        f"- expect-tx one byte too many or too few: found in {tx[0]} of {tx[1]} SM100 runs and {tx90[0]} of "
        f"{tx90[1]} SM90 runs (a phase whose bytes never add up: deadlock); PR #9046's ConSan: none "
        "(a hang with no report), the later tx-count accounting: a deadlock report [C1, C3, C4].",
        f"- expect-tx without the 2-SM factor (the phase completes on the leader's half): found in {early[0]} of "
        f"{early[1]} 2-SM runs, as a read of a stage before the peer's bytes landed; ConSan: missed at PR #9046, "
        "untested since.",
        f"- the TMEM deallocation handshake dropped: TMEM used after free in {dealloc[0]} of {dealloc[1]} runs; "
        "ConSan documents no TMEM deallocation check.",
        f"- the Sched warp's wait on clc.empty skipped: found in {latent[0]} of {latent[1]} runs; in the others the "
        "CLC throttle kept the Sched warp behind its consumers (a latent hazard there); ConSan's visibility model "
        "would flag the missing handoff on any executed path.",
        "- counts off by one thread of a warp-wide arrive (e.g. 255 of 256): wsim counts threads, as the hardware "
        "does; ConSan counts arrive ops, so only a count off by a whole arrive is its unit [C1].",
    ]


def write(cat: dict, md_path: str) -> tuple[Path, Path]:
    """Write ``md_path`` and the JSON beside it (same name, ``.json``)."""
    md = Path(md_path)
    js = md.with_suffix(".json")
    md.write_text(markdown(cat))
    # One outcome per line: a diff of two catalogues shows which outcomes changed.
    head = {k: v for k, v in cat.items() if k != "outcomes"}
    lines = [json.dumps(o, separators=(",", ":")) for o in cat["outcomes"]]
    text = json.dumps(head, indent=1, default=str)[:-2] + ',\n "outcomes": [\n' + ",\n".join(lines) + "\n ]\n}\n"
    js.write_text(text)
    return md, js


__all__ = ["catalogue", "markdown", "write", "consan", "compact", "describe_outcome", "load_catalogue", "mutation_row",
           "format_mutation_row", "CONSAN_SOURCES", "CONSAN_LEGEND"]
