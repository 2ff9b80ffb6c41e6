"""SMs that start late: a what-if about the GPU a kernel is launched on, not about the kernel.

The model launches every resident cluster at cycle 0 on an otherwise idle GPU. On a real GPU some
SMs can still be busy when a persistent GEMM launches: a kernel of another stream or process still
holds them, or (with programmatic dependent launch) the previous kernel's last CTAs are still running
there. :class:`LateStart` says that the ``sms`` highest-numbered SMs of the launch become free
``delay_ns`` after it; a cluster starts when all of its SMs are free. What then happens is the
scheduler's business, and the point of the what-if:

* static persistent (``tile_scheduler="static"``): the grid and each cluster's tiles are fixed at
  launch (linear ids ``i, i + R, ...``), so the late clusters run their share of the tiles late;
* CLC (``"clc"``): the grid is every cluster of the problem. At launch the free SMs take clusters
  ``0..R'-1``; the running clusters' ``try_cancel`` take the clusters not yet launched, in launch
  order; when the late SMs become free the hardware launches the next cluster not yet taken there,
  or nothing if none is left.

This is an input, like the clock: nothing in the model predicts it, and the default is None (every
SM free at launch). Only the SM100 model takes it (the SM90 model has no CLC to compare).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.errors import ConfigError


@dataclass(frozen=True)
class LateStart:
    """The ``sms`` highest-numbered SMs of the launch become free ``delay_ns`` after it."""

    sms: int
    delay_ns: float

    def __post_init__(self) -> None:
        if not isinstance(self.sms, int) or isinstance(self.sms, bool) or self.sms < 1:
            raise ConfigError(f"late_start sms={self.sms!r}: expected a whole number of SMs >= 1")
        d = self.delay_ns
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not (d > 0 and math.isfinite(d)):
            raise ConfigError(f"late_start delay_ns={d!r}: expected a finite number of nanoseconds > 0")

    def late_clusters(self, resident: int, cluster_size: int) -> range:
        """The resident clusters (indices; cluster ``i`` holds SMs ``i*size .. i*size+size-1``) that
        touch one of the late SMs. At least one cluster must start on time."""
        used = resident * cluster_size
        first_late_sm = used - self.sms
        first = max(0, first_late_sm // cluster_size)
        if first == 0:
            raise ConfigError(f"late_start sms={self.sms}: covers every cluster of this launch ({resident} "
                              f"cluster(s) of {cluster_size} SM(s) on {used} SMs); leave at least one cluster's "
                              "SMs free at launch")
        return range(first, resident)

    def delay_cycles(self, clock_ghz: float) -> float:
        return self.delay_ns * clock_ghz


def check_late_start(late_start) -> LateStart | None:
    """``simulate(late_start=...)``: None, or a :class:`LateStart`."""
    if late_start is None or isinstance(late_start, LateStart):
        return late_start
    raise ConfigError(f"late_start={late_start!r}: expected a LateStart(sms=..., delay_ns=...) or None")


__all__ = ["LateStart", "check_late_start"]
