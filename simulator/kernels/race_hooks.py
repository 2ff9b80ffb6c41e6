"""What each kernel model's buffer accesses are, told to the race detectors (``wsim check``).

The kernel models call these functions only when they run with a
:class:`~simulator.protocol.races.RaceDetector` (``kernel.races is not None``; ``simulate(race_check=
True)``), one line at each access; by default no call is made. Each names the buffer (CTA, pipeline,
stage), the round (the role's own ``PipelineState.count // stages``) and the interval of the access:

* SM100 mainloop stage: written by every CTA's TMA loads whose slices land in the MMA leader's stage
  (issued -> landed; the leader's buffer counts the pair's ``tma_transaction_bytes``), read by the
  leader's MMA (first instruction -> commit);
* SM100 accumulator stage: written by the MMA leader (first MMA -> last one complete, in the TMEM of
  both CTAs of a 2-SM pair), read by each CTA's epilogue (its wait -> its release); TMEM lifetime:
  every such access against the MMA warp's deallocation;
* C subtile stage (both kernels): written by the epilogue-load TMA, read by the epilogue;
* SM100 CLC response: written by ``try_cancel`` in every CTA's copy, read by each role's
  ``fetch_next_work``;
* SM90 mainloop stage: A and B slices from the CTA's cluster row and column, read by a consumer
  warpgroup (its wgmma batch -> its release); SM90 store buffers: each consumer warpgroup writes its
  share of a subtile, the TMA store reads it;
* the stream-K / split-K workspace slice of each fixup flag (global memory): a peer's partial stored or
  added (issued -> acknowledged) is written in the round of its place in K order, the next peer's add or
  the final split's load reads it (:mod:`simulator.kernels.fixup` numbers the rounds).
"""

from __future__ import annotations

from typing import Any


def cta_name(cta: Any) -> str:
    return f"CTA{cta.cluster.index}.{cta.rank}"


def _buffer(k: Any, cta: Any, pipe: str, index: int, units: int):
    return k.races.buffer((cta.cluster.index, cta.rank, pipe, index), f"{cta_name(cta)}/{pipe}[{index}]", units)


def _round(state: Any) -> int:
    return state.count // state.stages


# ------------------------------------------------------------------------------------ SM100
def mainloop_write(k: Any, cta: Any, state: Any, land: float, role: Any) -> None:
    """One K-block's TMA loads from ``cta``: its slices land in the stage of each receiving MMA leader."""
    now = k.env.now
    for lead, nbytes in cta.load_plan[3]:
        _buffer(k, cta.cluster.ctas[lead], "mainloop", state.index, k.cfg.tma_transaction_bytes).write(
            _round(state), now, land, nbytes, role.who)


def stage_read(k: Any, cta: Any, pipe: str, state: Any, t_start: float, t_end: float, role: Any) -> None:
    """A consumer reads stage ``state`` of ``pipe`` ("mainloop": the MMA; "epi_load": a C subtile)."""
    units = k.cfg.tma_transaction_bytes if pipe == "mainloop" else k.cfg.epi_c_subtile_bytes
    _buffer(k, cta, pipe, state.index, units).read(_round(state), t_start, t_end, role.who)


def c_write(k: Any, cta: Any, state: Any, land: float, role: Any) -> None:
    nbytes = k.cfg.epi_c_subtile_bytes
    _buffer(k, cta, "epi_load", state.index, nbytes).write(_round(state), k.env.now, land, nbytes, role.who)


def accumulator_write(k: Any, cta: Any, acc_state: Any, first: float, done: float, role: Any) -> None:
    """The MMA leader writes one tile's accumulator stage, in the TMEM of every CTA of its pair."""
    _buffer(k, cta, "accumulator", acc_state.index, 1).write(_round(acc_state), first, done, 1, role.who)
    for i in range(cta.atom):
        k.races.tmem_use(cta_name(cta.cluster.ctas[cta.leader_rank + i]), first, done, role.who)


def accumulator_read(k: Any, cta: Any, acc_state: Any, t_acc: float, releasing: bool, last: bool,
                     role: Any) -> None:
    """An epilogue TMEM load: the stage is read from ``t_acc`` until its release; TMEM until the last load."""
    now = k.env.now
    if releasing:
        leader = cta.cluster.ctas[cta.leader_rank]
        _buffer(k, leader, "accumulator", acc_state.index, 1).read(_round(acc_state), t_acc, now, role.who)
    if last:
        k.races.tmem_use(cta_name(cta), t_acc, now, role.who)


def tmem_free(k: Any, cta: Any, t: float, role: Any) -> None:
    """The CTA's MMA warp frees its TMEM allocation."""
    k.races.tmem_free(cta_name(cta), t, role.who)


def clc_write(k: Any, cluster: Any, prod: Any, role: Any) -> None:
    """``try_cancel``: the response lands in every CTA's copy of the stage (``issue_clc_query``)."""
    now = k.env.now
    land = now + k.timing.clc_latency
    for c in cluster.ctas:
        _buffer(k, c, "clc", prod.index, 1).write(_round(prod), now, land, 1, f"{role.who} (try_cancel)")


def clc_read(k: Any, cta: Any, st: Any, role: Any) -> None:
    now = k.env.now
    _buffer(k, cta, "clc", st.index, 1).read(_round(st), now, now, role.who)


# ------------------------------------------------------------------------------------ SM90
def _sm90_units(k: Any, pipe: str) -> int:
    return k.tx_bytes if pipe == "mainloop" else k.cfg.epi_c_subtile_bytes


def sm90_mainloop_write(k: Any, cta: Any, state: Any, land: float, role: Any) -> None:
    """A K-block's two TMA loads from ``cta``: its A slice lands in its cluster row's stages, its B slice
    in its column's (each receiving stage counts a whole K-block)."""
    now, rnd = k.env.now, _round(state)
    for dests, nbytes in ((cta.a_dst, k.a_slice), (cta.b_dst, k.b_slice)):
        for c in dests:
            _buffer(k, c, "mainloop", state.index, k.tx_bytes).write(rnd, now, land, nbytes, role.who)


def sm90_stage_write(k: Any, cta: Any, pipe: str, state: Any, land: float, nbytes: int, role: Any) -> None:
    _buffer(k, cta, pipe, state.index, _sm90_units(k, pipe)).write(_round(state), k.env.now, land, nbytes, role.who)


def sm90_stage_read(k: Any, cta: Any, pipe: str, state: Any, t_start: float, t_end: float, role: Any) -> None:
    _buffer(k, cta, pipe, state.index, _sm90_units(k, pipe)).read(_round(state), t_start, t_end, role.who)


def sm90_store_buffer(k: Any, cta: Any, subtile: int, t_start: float, t_end: float, write: bool, writers: int,
                      role: Any) -> None:
    """The epilogue's SMEM store buffers, a ring of ``epilogue_store_stages`` over the CTA's subtiles in
    order: the tile's ``writers`` consumer warpgroups write their shares, the TMA store reads it."""
    n = k.cfg.epilogue_store_stages
    b = _buffer(k, cta, "epi_store", subtile % n, writers)
    if write:
        b.write(subtile // n, t_start, t_end, 1, role.who)
    else:
        b.read(subtile // n, t_start, t_end, f"{role.who} (TMA store)")


# ----------------------------------------------------------------------- stream-K / split-K fixup
def _workspace(k: Any, lock: Any, slot: int | None = None):
    """The workspace slice behind one fixup flag (global memory), one round per ordered access; with
    ``slot`` >= 0, one of the separate reduction's slots (one per non-final split, each written once); -1,
    the nondeterministic reduction's first store alone (what its atomic adds wait for)."""
    name = lock.name.replace("fixup", "workspace")
    if slot is None:
        return k.races.buffer(("workspace", lock.name), name, 1)
    return k.races.buffer(("workspace", lock.name, slot), f"{name}.slot{slot}" if slot >= 0 else f"{name}.first", 1)


def fixup_write(k: Any, lock: Any, rnd: int, t_issue: float, t_done: float, role: Any, slot: int | None = None) -> None:
    """A peer's partial stored (or added atomically) into the workspace: issued -> acknowledged."""
    _workspace(k, lock, slot).write(rnd, t_issue, t_done, 1, role.who)


def fixup_read(k: Any, lock: Any, rnd: int, t_start: float, t_end: float, role: Any, slot: int | None = None) -> None:
    """A peer reads what the earlier peers wrote (the final peer's load, an atomic add's read)."""
    _workspace(k, lock, slot).read(rnd, t_start, t_end, role.who)
