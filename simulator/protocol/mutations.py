"""Every way to break the seed's barriers, for one kernel config: the mutations ``wsim check`` runs.

Each :class:`Mutation` is one protocol knob (:class:`~simulator.protocol.knobs.ProtocolKnobs`) with a
name that is the same for every config of a kernel (so that a catalogue row is one mutation across
the grid), or, where it cannot act on this config, the reason (``n/a``: the barrier or pipeline is
not used here; ``no effect``: the mutated value equals the seed's here, e.g. a count without the
cluster factor in a 1x1 cluster). The families:

* ``count``: every barrier's arrival count +1 and -1 (named barriers count whole warps: +-32);
* ``factor``: every count with one factor of its formula dropped -- the cluster size, the 2-SM peer,
  the C read, the epilogue (SM90: consumer) threads, the consumer warpgroups -- evaluated by
  :mod:`simulator.protocol.arrivals` with that factor neutral (1 for a product, no term for a sum);
  a factor appears for a barrier only if some config's count depends on it;
* ``release``: a pipeline's consumers never release a stage;
* ``wait``: every wait on a barrier skipped (the TMEM allocation and deallocation handshakes and the
  epilogue-throttle barrier dropped are the waits on ``tmem_alloc``, ``tmem_dealloc``,
  ``epilogue_throttle``); ``parity``: every wait on an mbarrier on the other phase parity;
* ``start_phase``: a producer starts in phase 0 instead of CUTLASS's producer start state (1);
* ``expect_tx``: expect-tx bytes one too many, one too few, and (SM100 mainloop) without the 2-SM factor;
* ``throttle``: the CLC throttle off;
* the stream-K / split-K fixup flag (the seed's ``NumFixupBarriers``, :mod:`simulator.protocol.fixup`),
  :data:`STREAM_K_FIXUP`: every arrival one K tile too many or too few (``count``), the non-final
  splits' arrive skipped (``release``), every peer's wait skipped (``wait``); n/a for a data-parallel
  decomposition (no tile is split).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from simulator.errors import ConfigError
from simulator.protocol.arrivals import (
    KernelFacts,
    Sm90KernelFacts,
    sm90_arrival_counts,
    sm90_barrier_counts,
    sm100_arrival_counts,
    sm100_barrier_counts,
)
from simulator.protocol.knobs import (
    MBARRIER_MAX_COUNT,
    NAMED_BARRIERS,
    WARP_SIZE,
    ProtocolKnobs,
    barriers_in_use,
)

FAMILIES = ("count", "factor", "release", "wait", "parity", "start_phase", "expect_tx", "throttle")

#: Mutations of the stream-K / split-K fixup flag: (id, family, knobs, value). Each arrival adds its K tiles
#: (arrivals.fixup_increment) one more or one less, the partial tiles' arrive skipped, every peer's wait skipped.
_FIXUP_MUTATIONS = (
    ("fixup count +1", "count", {"fixup_delta": 1}, "K tiles + 1 per arrival (seed: the unit's K tiles)"),
    ("fixup count -1", "count", {"fixup_delta": -1}, "K tiles - 1 per arrival (seed: the unit's K tiles)"),
    ("fixup arrive skipped (the partial tile's arrive)", "release", {"skip_release": ["fixup"]}, ""),
    ("fixup wait skipped (the final split's wait)", "wait", {"skip_wait": ["fixup"]}, ""),
)
STREAM_K_FIXUP: tuple[str, ...] = tuple(m[0] for m in _FIXUP_MUTATIONS)

SM100_PIPES = ("mainloop", "accumulator", "clc", "clc_throttle", "epi_load")
SM100_SINGLES = ("epilogue_throttle.cta0", "epilogue_throttle.peer", "tmem_alloc", "tmem_dealloc", "load_order")
SM100_WAITS = tuple(f"{p}.{s}" for p in SM100_PIPES for s in ("full", "empty")) + (
    "epilogue_throttle", "tmem_alloc", "tmem_dealloc", "load_order")
SM90_PIPES = ("mainloop", "epi_load")
SM90_SINGLES = ("load_order", "epilogue_named", "math_order")
SM90_WAITS = tuple(f"{p}.{s}" for p in SM90_PIPES for s in ("full", "empty")) + SM90_SINGLES
#: What the wait-skipped mutations of these barriers are called in the issue's words.
WAIT_NAMES = {"tmem_alloc": "TMEM allocation handshake dropped", "tmem_dealloc": "TMEM deallocation handshake dropped",
              "epilogue_throttle": "epilogue throttle barrier dropped"}

#: A factor of a count formula: how to make it neutral on the facts (properties to override).
_SM100_FACTORS = {
    "cluster factor": lambda f: {"cluster_size": 1, "cluster_m": f.atom_thr_m, "cluster_n": 1},
    "2-SM peer factor": lambda f: {"atom_thr_m": 1, "has_mma_peer_cta": False},
    "C-read term": lambda f: {"read_c": False},
    "epilogue-threads factor": lambda f: {"num_epilogue_threads": 1},
}
_SM90_FACTORS = {
    "cluster factor": lambda f: {"mcast_size": 1, "cluster_size": 1},
    "consumer-warpgroups factor": lambda f: {"consumer_warpgroups_per_stage": 1},
    "epilogue-threads factor": lambda f: {"consumer_threads": 1},
}


#: Why a dropped factor leaves a count as it is (the configs where it matters are the others).
_NEUTRAL_WHEN = {
    "cluster factor": "is 1 here (one MMA tile per cluster row and column, or one CTA); a count that only matters "
                      "with clusters",
    "2-SM peer factor": "is 1 in 1-SM mode (no MMA peer CTA)",
    "C-read term": "is absent without C (read_c=False)",
    "epilogue-threads factor": "does not enter this config's formula",
    "consumer-warpgroups factor": "is 1 in the ping-pong kernel (one warpgroup per stage)",
}


def _facts_label(f: Any) -> str:
    if isinstance(f, Sm90KernelFacts):
        return f"cluster {f.cluster_m}x{f.cluster_n}, {f.schedule}{', C read' if f.read_c else ''}"
    return (f"cluster {f.cluster_m}x{f.cluster_n}, {'2-SM' if f.use_2sm else '1-SM'}"
            f"{', C read' if f.read_c else ', no C'}{', overlapping accumulators' if f.overlapping_accum else ''}")


@dataclass(frozen=True)
class Mutation:
    """One mutation of the protocol on one config (``knobs`` None: nothing to run, see ``skip_class``)."""

    id: str                  # the same for every config of a kernel, e.g. "clc.empty count -1"
    family: str              # one of FAMILIES
    target: str              # the barrier, wait or pipeline it changes
    knobs: ProtocolKnobs | None
    value: str = ""          # what it sets in this config, e.g. "383 (seed 384)"
    skip_class: str = ""     # "n/a" or "no effect" when knobs is None
    skip_why: str = ""


def _neutral(facts: Any, props: dict) -> Any:
    """``facts`` with some of its fields/properties replaced (a factor of a formula made neutral)."""
    cls = type(f"{type(facts).__name__}Neutral", (type(facts),),
               {k: property(lambda self, v=v: v) for k, v in props.items()})
    obj = object.__new__(cls)
    for f in fields(facts):
        obj.__dict__[f.name] = getattr(facts, f.name)
    return obj


def _sm100_counts(f: Any) -> dict[str, int]:
    c = sm100_arrival_counts(f)
    out = {f"{p}.{side}": getattr(c[p], "producer" if side == "full" else "consumer")
           for p in SM100_PIPES for side in ("full", "empty")}
    b0, b1 = sm100_barrier_counts(f, 0), sm100_barrier_counts(f, 1)
    out.update({"epilogue_throttle.cta0": b0["epilogue_throttle"], "epilogue_throttle.peer": b1["epilogue_throttle"],
                "tmem_alloc": b0["tmem_alloc"], "tmem_dealloc": b0["tmem_dealloc"], "load_order": b0["load_order"]})
    return out


def _sm90_counts(f: Any) -> dict[str, int]:
    c = sm90_arrival_counts(f)
    out = {f"{p}.{side}": getattr(c[p], "producer" if side == "full" else "consumer")
           for p in SM90_PIPES for side in ("full", "empty")}
    b = sm90_barrier_counts(f)
    out.update({"load_order": b["load_order"], "epilogue_named": b["epilogue_named"],
                "math_order": b.get("math_wg_order", 0)})
    return out


def _rich_facts(sm90: bool) -> list[Any]:
    """Facts where every factor is not 1, to find which counts depend on which factor."""
    if sm90:
        return [Sm90KernelFacts(cluster_m=2, cluster_n=2, schedule=s, read_c=True) for s in ("cooperative", "pingpong")]
    return [KernelFacts(cluster_m=4, cluster_n=2, use_2sm=True, read_c=True, overlapping_accum=o) for o in (False, True)]


def factor_table(sm90: bool) -> dict[str, tuple[str, ...]]:
    """barrier -> the factors of its count formula (those that change the count in some config)."""
    counts_of, factors = (_sm90_counts, _SM90_FACTORS) if sm90 else (_sm100_counts, _SM100_FACTORS)
    out: dict[str, list[str]] = {}
    for f in _rich_facts(sm90):
        base = counts_of(f)
        for name, props in factors.items():
            changed = counts_of(_neutral(f, props(f)))
            for b, n in base.items():
                if changed[b] != n and name not in out.setdefault(b, []):
                    out[b].append(name)
    return {b: tuple(v) for b, v in out.items()}


def _knobs(**kw) -> ProtocolKnobs | str:
    """Knobs from values, or the rule the values break (a count PTX does not allow)."""
    try:
        return ProtocolKnobs.make(**kw)
    except ConfigError as e:
        return str(e)


def _applies(m: Mutation, cfg: Any) -> Mutation:
    """``m`` as n/a (with the reason) if its knob cannot act on ``cfg``'s run."""
    if m.knobs is None:
        return m
    try:
        m.knobs.check_applies(cfg)
    except ConfigError as e:
        return Mutation(m.id, m.family, m.target, None, m.value, "n/a", str(e))
    return m


def _count_mutations(cfg: Any, sm90: bool) -> list[Mutation]:
    facts = Sm90KernelFacts.from_config(cfg) if sm90 else KernelFacts.from_config(cfg)
    counts_of, factors = (_sm90_counts, _SM90_FACTORS) if sm90 else (_sm100_counts, _SM100_FACTORS)
    seed = counts_of(facts)
    table = factor_table(sm90)
    out: list[Mutation] = []
    for b, n in seed.items():
        step = WARP_SIZE if b in NAMED_BARRIERS else 1
        unit = " (one warp)" if step > 1 else ""
        variants = [(f"{b} count +{step}{unit}", "count", n + step), (f"{b} count -{step}{unit}", "count", n - step)]
        for name in table.get(b, ()):
            variants.append((f"{b} count without the {name}", "factor",
                             counts_of(_neutral(facts, factors[name](facts)))[b]))
        for mid, family, v in variants:
            value = f"{v} (seed {n})"
            if n == 0:
                why = barriers_in_use(cfg)[1].get(b, f"{b}: not initialised in this config")
                out.append(Mutation(mid, family, b, None, value, "n/a", why))
            elif v == n:
                factor = mid.split(" without the ")[-1]
                out.append(Mutation(mid, family, b, None, value, "no effect",
                                    f"the same count as the seed's ({n}) in this config ({_facts_label(facts)}): "
                                    f"the {factor} {_NEUTRAL_WHEN[factor]}"))
            elif v < 1 or v > MBARRIER_MAX_COUNT:
                out.append(Mutation(mid, family, b, None, value, "n/a",
                                    f"{b}={v}: not a valid count (PTX ISA: 1 .. 2^20 - 1 arrivals)"))
            else:
                k = _knobs(arrival_counts={b: v})
                out.append(Mutation(mid, family, b, k, value) if isinstance(k, ProtocolKnobs)
                           else Mutation(mid, family, b, None, value, "n/a", k))
    return out


def _tx_bytes(cfg: Any, sm90: bool) -> dict[str, int]:
    out = {"mainloop": cfg.tma_transaction_bytes, "epi_load": cfg.epi_c_subtile_bytes}
    if not sm90:
        out["clc"] = 16   # sizeof(CLCResponse)
    return out


def _other_mutations(cfg: Any, sm90: bool) -> list[Mutation]:
    pipes, waits = (SM90_PIPES, SM90_WAITS) if sm90 else (SM100_PIPES, SM100_WAITS)
    out = [Mutation(f"{p} release skipped", "release", p, ProtocolKnobs.make(skip_release=[p])) for p in pipes]
    for w in waits:
        label = f"{w} wait skipped" + (f" ({WAIT_NAMES[w]})" if w in WAIT_NAMES else "")
        out.append(Mutation(label, "wait", w, ProtocolKnobs.make(skip_wait=[w])))
    for w in waits:
        if w in NAMED_BARRIERS:
            continue
        out.append(Mutation(f"{w} wait on the wrong parity", "parity", w, ProtocolKnobs.make(wrong_parity=[w])))
    for p in pipes:
        out.append(Mutation(f"{p} producer starts in phase 0", "start_phase", p,
                            ProtocolKnobs.make(producer_start_phase={p: 0})))
    for p, n in _tx_bytes(cfg, sm90).items():
        for mid, v in ((f"{p} expect-tx +1 B", n + 1), (f"{p} expect-tx -1 B", n - 1)):
            out.append(Mutation(mid, "expect_tx", p, ProtocolKnobs.make(expect_tx={p: v}), f"{v} B (seed {n} B)"))
    if not sm90:
        n = cfg.tma_transaction_bytes
        v = n // cfg.atom_thr_m
        mid = "mainloop expect-tx without the 2-SM factor"
        out.append(Mutation(mid, "expect_tx", "mainloop", ProtocolKnobs.make(expect_tx={"mainloop": v}),
                            f"{v} B (seed {n} B)") if v != n else
                   Mutation(mid, "expect_tx", "mainloop", None, f"{v} B (seed {n} B)", "no effect",
                            "1-SM: the 2-SM factor is 1, the bytes are the seed's"))
        out.append(Mutation("CLC throttle off", "throttle", "clc_throttle", ProtocolKnobs.make(clc_throttle=False)))
    return out


def _fixup_mutations() -> list[Mutation]:
    return [Mutation(mid, family, "fixup", ProtocolKnobs.make(**kw), value) for mid, family, kw, value in
            _FIXUP_MUTATIONS]


def mutations_for(cfg: Any) -> list[Mutation]:
    """Every mutation of the kernel of ``cfg`` (a resolved Sm100GemmConfig or Sm90GemmConfig), in a
    fixed order; each with its knobs, or why it cannot run on this config."""
    sm90 = getattr(cfg, "arch_name", "sm100") == "sm90"
    return [_applies(m, cfg) for m in _count_mutations(cfg, sm90) + _other_mutations(cfg, sm90)
            + _fixup_mutations()]


__all__ = ["Mutation", "FAMILIES", "STREAM_K_FIXUP", "WAIT_NAMES", "factor_table", "mutations_for"]
