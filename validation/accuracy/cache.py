"""Simulated outcomes cached on disk, keyed so that a cached result can never be stale.

The key of a row is its config, its arch constants and :func:`model_hash`: every source file under
``simulator/`` (``.py`` and ``.pxd``: the model, the machine constants and the compiled core's C
types), the engine, whether the core is compiled or pure Python, and the versions of Python, numpy,
simpy and Cython. Anything that could change a simulated cycle changes the key.
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = ROOT / "out" / "accuracy-cache"
SOURCE_DIR = ROOT / "simulator"
SOURCE_SUFFIXES = (".py", ".pxd")
#: Constants added after the simulation (they never change the cycles): left out of a row's key.
NOT_SIMULATED = ("launch_overhead_ns",)


def _versions() -> dict[str, str]:
    import numpy
    import simpy

    from simulator import _native
    built = _native.build_record()
    return {"python": platform.python_version(), "numpy": numpy.__version__, "simpy": simpy.__version__,
            "core": "compiled" if _native.COMPILED else "pure-python",
            "cython": str(built.get("cython", "-")) if _native.COMPILED else "-"}


def key_parts(engine: str) -> dict:
    """What the model hash covers besides the sources (printed in the report)."""
    return {"engine": engine, **_versions()}


def model_hash(engine: str = "fast") -> str:
    """A hash of everything that determines a simulated result except the row itself."""
    h = hashlib.sha1()
    for p in sorted(SOURCE_DIR.rglob("*")):
        if p.suffix in SOURCE_SUFFIXES and p.is_file():
            h.update(str(p.relative_to(ROOT)).encode())
            h.update(p.read_bytes())
    h.update(json.dumps(key_parts(engine), sort_keys=True).encode())
    return h.hexdigest()[:16]


def row_key(config, arch) -> str:
    consts = {c.name: c.value for c in arch.constants() if c.name not in NOT_SIMULATED}
    blob = json.dumps([type(config).__name__, asdict(config), arch.name, consts], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()


@dataclass
class SimOutcome:
    cycles: float
    kernel_us: float            # cycles / clock (no launch overhead)
    events: int
    wall_s: float
    engine: str
    ok: bool
    error: str = ""
    # what the power model needs of the run (validation.accuracy.clock)
    tc_busy: float = 0.0        # tensor-core busy fraction of the makespan
    sms: int = 0                # SMs the run used
    l2_bytes: int = 0           # L2 -> SM loads plus the stores (every byte through L2)
    hbm_bytes: int = 0


class SimCache:
    """JSON-lines cache of simulated outcomes, one file per :func:`model_hash` (``sim-<hash>.jsonl``)."""

    def __init__(self, directory: Path | None = CACHE_DIR, enabled: bool = True, engine: str = "fast"):
        self.enabled = enabled and directory is not None
        self.path = directory / f"sim-{model_hash(engine)}.jsonl" if self.enabled else None
        self.data: dict[str, dict] = {}
        if self.path is not None and self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    k, v = json.loads(line)
                except ValueError:          # a line cut by an interrupted run
                    continue
                self.data[k] = v

    def get(self, key: str) -> SimOutcome | None:
        v = self.data.get(key)
        return SimOutcome(**v) if v is not None else None

    def put(self, key: str, value: SimOutcome) -> None:
        self.data[key] = asdict(value)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps([key, asdict(value)]) + "\n")
