"""Deadlock analysis: what each blocked role waits for, who owes it, and the wait-for cycle.

A run is deadlocked when the event queue is empty while some roles have not finished: nothing
can ever wake them. For each blocked (CTA, role) the report names the barrier, its stage, the
phase parity waited on, the barrier's own phase, the arrivals and transaction bytes still
missing and the roles that owe them. Roles that owe an arrival and are themselves blocked form a
wait-for graph; a cycle in it is the deadlock's cause, and is reported when there is one. A role
that owes an arrival but has already exited (a skipped release, a loop that ended early) is named
as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Which warp roles arrive on each barrier kind (pipeline.side or barrier name).
OWERS: dict[str, tuple[str, ...]] = {
    "mainloop.full": ("MainloopLoad",),
    "mainloop.empty": ("MMA", "Consumer0", "Consumer1"),
    "accumulator.full": ("MMA",),
    "accumulator.empty": ("Epilogue",),
    "clc.full": ("Sched",),
    "clc.empty": ("Sched", "MainloopLoad", "MMA", "Epilogue", "EpilogueLoad"),
    "clc_throttle.full": ("MainloopLoad",),
    "clc_throttle.empty": ("Sched",),
    "epi_load.full": ("EpilogueLoad",),
    "epi_load.empty": ("Epilogue", "Consumer0", "Consumer1"),
    "load_order": ("MainloopLoad",),
    "tmem_alloc": ("MMA", "Epilogue"),
    "tmem_dealloc": ("MMA", "Epilogue"),
    "epilogue_throttle": ("MMA", "Sched", "MainloopLoad", "EpilogueLoad"),
    "math_order": ("Consumer0", "Consumer1"),
    "epilogue.barrier": ("Consumer0", "Consumer1"),
    "fixup": ("Consumer0", "Consumer1", "Epilogue"),
}


def barrier_kind(name: str) -> str:
    """``"CTA1/mainloop.full[2]"`` -> ``"mainloop.full"``."""
    base = name.split("/", 1)[-1]
    return base.split("[", 1)[0]


def barrier_stage(name: str) -> int:
    if "[" in name:
        return int(name.rsplit("[", 1)[1].rstrip("]"))
    return -1


@dataclass(frozen=True)
class BlockedRole:
    who: str                # "CTA<cluster>.<rank>/<Role>"
    role: str
    cluster: int
    barrier: str            # full barrier name, e.g. "CTA1/mainloop.empty[0]"
    pipeline: str           # "mainloop.empty"
    stage: int
    waits_for_parity: int
    barrier_phase: int
    missing_arrivals: int
    expected_arrivals: int
    missing_tx_bytes: int
    owed_by: str
    since_cycle: float
    excess_tx_bytes: int = 0  # bytes landed beyond what the phase expected (tx count below zero)
    detail: str = ""          # what the wait is, for a barrier that is not an mbarrier (the fixup flag)

    def describe(self) -> str:
        if self.detail:
            return (f"{self.who} blocked since cycle {self.since_cycle:.0f} on {self.barrier} ({self.detail}); "
                    f"owed by {self.owed_by}")
        miss = f"{self.missing_arrivals} of {self.expected_arrivals} arrivals missing"
        if self.missing_tx_bytes:
            miss += f", {self.missing_tx_bytes} transaction bytes missing"
        if self.excess_tx_bytes:
            miss += (f", {self.excess_tx_bytes} transaction bytes landed beyond those expected (an expect-tx count "
                     "too small: the count can never return to zero)")
        return (f"{self.who} blocked since cycle {self.since_cycle:.0f} on {self.barrier} "
                f"(waits for parity {self.waits_for_parity}, barrier in phase {self.barrier_phase}): "
                f"{miss}; owed by {self.owed_by}")


@dataclass
class DeadlockReport:
    time_cycle: float
    blocked: list[BlockedRole]
    cycle: list[str] = field(default_factory=list)           # a wait-for cycle of "who" names
    exited_owers: list[str] = field(default_factory=list)    # "<barrier kind>: owed by <role>, which has exited"
    unexplained: list[str] = field(default_factory=list)     # unfinished roles not found waiting anywhere
    suspects: list[str] = field(default_factory=list)        # barriers that saw arrivals in the wrong phase

    @property
    def pipelines(self) -> list[str]:
        return sorted({b.pipeline for b in self.blocked})

    @property
    def roles(self) -> list[str]:
        return sorted({b.role for b in self.blocked})

    def summary(self) -> str:
        lines = [f"DEADLOCK at cycle {self.time_cycle:.0f}: {len(self.blocked)} role(s) blocked, "
                 f"nothing left to wake them."]
        by_kind: dict[str, list[BlockedRole]] = {}
        for b in self.blocked:
            by_kind.setdefault(f"{b.role} on {b.pipeline}", []).append(b)
        for key, items in sorted(by_kind.items()):
            lines.append(f"  {key}: {len(items)} CTA(s), e.g. {items[0].describe()}")
        if self.cycle:
            lines.append("  wait-for cycle: " + " -> ".join(self.cycle + self.cycle[:1]))
        if self.suspects:
            lines.append("  likely cause: arrivals landed in the wrong phase of " + ", ".join(self.suspects)
                         + " (an arrival count that does not match the arrivers; see PROTOCOL VIOLATIONS)")
        for e in self.exited_owers[:6]:
            lines.append(f"  {e}")
        for u in self.unexplained[:6]:
            lines.append(f"  not waiting on a barrier: {u}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "time_cycle": self.time_cycle,
            "pipelines": self.pipelines,
            "roles": self.roles,
            "cycle": self.cycle,
            "exited_owers": self.exited_owers,
            "suspects": self.suspects,
            "blocked": [b.__dict__ for b in self.blocked],
        }


def analyze(kernel, now: float) -> DeadlockReport | None:
    """Inspect a kernel model whose event queue emptied; ``None`` if every role finished."""
    unfinished = kernel.unfinished_roles()
    if not unfinished:
        return None
    waiting: dict[str, tuple] = {}
    for bar in kernel.all_barriers():
        for w in bar.waiters:
            waiting[w.who] = (bar, w)
    blocked: list[BlockedRole] = []
    unexplained: list[str] = []
    for role in unfinished:
        hit = waiting.get(role.who)
        if hit is None:
            unexplained.append(role.who)
            continue
        bar, w = hit
        kind = barrier_kind(bar.name)
        tx = getattr(bar, "tx", 0)
        detail = bar.wait_detail(w) if hasattr(bar, "wait_detail") else ""
        blocked.append(BlockedRole(
            who=role.who, role=role.name, cluster=role.cta.cluster.index, barrier=bar.name, pipeline=kind,
            stage=barrier_stage(bar.name), waits_for_parity=w.parity, barrier_phase=getattr(bar, "phase", 0),
            missing_arrivals=bar.pending, expected_arrivals=bar.expected, missing_tx_bytes=max(0, tx),
            owed_by=bar.owed_by or ", ".join(OWERS.get(kind, ("?",))), since_cycle=w.since,
            excess_tx_bytes=max(0, -tx), detail=detail))
    # Wait-for graph within each cluster: blocked role -> blocked roles that owe its barrier.
    by_cluster: dict[int, list[BlockedRole]] = {}
    for b in blocked:
        by_cluster.setdefault(b.cluster, []).append(b)
    exited: dict[tuple[str, str], set[int]] = {}
    finished_names = {(r.cta.cluster.index, r.name) for r in kernel.roles if r.done}
    edges: dict[str, list[str]] = {}
    for b in blocked:
        owers = OWERS.get(b.pipeline, ())
        edges[b.who] = [o.who for o in by_cluster[b.cluster] if o.role in owers and o.who != b.who]
        for o in owers:
            if (b.cluster, o) in finished_names:
                exited.setdefault((b.pipeline, o), set()).add(b.cluster)
    cycle = _find_cycle(edges)
    exited_lines = [f"{kind}: owed (in part) by {role}, which has already exited, in {len(cl)} cluster(s)"
                    for (kind, role), cl in sorted(exited.items())]
    return DeadlockReport(now, blocked, cycle, exited_lines, unexplained)


def _find_cycle(edges: dict[str, list[str]]) -> list[str]:
    color: dict[str, int] = {}
    stack: list[str] = []

    def dfs(u: str) -> list[str] | None:
        color[u] = 1
        stack.append(u)
        for v in edges.get(u, ()):
            if color.get(v, 0) == 1:
                return stack[stack.index(v):]
            if color.get(v, 0) == 0:
                found = dfs(v)
                if found:
                    return found
        stack.pop()
        color[u] = 2
        return None

    for u in sorted(edges):
        if color.get(u, 0) == 0:
            found = dfs(u)
            if found:
                return list(found)
    return []
