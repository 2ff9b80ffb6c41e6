# Cython declarations for sm90_tma_ws.py (compiled when a C compiler is available; see setup.py).
cimport cython

from simulator.kernels.common cimport RoleBase, RunStats
from simulator.machine.memory cimport MemorySystem
from simulator.protocol.mbarrier cimport MBarrier, NamedBarrier
from simulator.protocol.pipeline cimport PipelineAsync, PipelineState, PipelineTmaAsync


cdef class Cta:
    cdef dict __dict__
    cdef public object kernel
    cdef public object env
    cdef public object cluster
    cdef public long rank
    cdef public long cx
    cdef public long cy
    cdef public long sm
    cdef public PipelineTmaAsync mainloop
    cdef public PipelineAsync epi_load
    cdef public NamedBarrier epilogue_barrier
    cdef public double tc_free
    cdef public double tma_free
    cdef public double store_free
    cdef public list a_dst
    cdef public list b_dst
    cdef public long long landed_bytes


cdef class Role(RoleBase):
    pass


cdef class MainloopLoad(Role):
    pass


cdef class EpilogueLoad(Role):
    pass


@cython.final
cdef class Consumer(Role):
    cdef public list release_targets
    cdef public long release_count
    cdef public bint releases_mainloop
    @cython.final
    cpdef consumer_release(self, PipelineState state)


@cython.final
cdef class Sm90GemmTmaWarpSpecialized:
    cdef dict __dict__
    cdef public object env
    cdef public MemorySystem mem
    cdef public RunStats stats
    cdef public long k_tiles
    cdef public long k_tail_num
    cdef public long tile_k
    cdef public long long tx_bytes
    cdef public long long a_slice
    cdef public long long b_slice
    cdef public long _epi_m
    cdef public long _epi_n
    cdef public long _epi_per_m
    cdef public long _tile_m
    cdef public long _tile_n
    cdef public long _m
    cdef public long _n
    cdef public long long _d_bytes
    cdef public long _store_stages
    cdef public double _tma_rate
    cdef public double _tma_land_rate
    cdef public double _tma_issue_extra
    cdef public long _a_dests
    cdef public long _b_dests
    cdef public double _l2_cost
    cdef public double _tma_fixed
    cdef public double _zf_cost
    cdef public tuple _zf_rates
    cdef public long _zf_active
    cdef public long mainloop_loading
    cdef public double _store_rate
    cdef public double _store_fixed
    cdef public double _store_write
    cdef public object races
    @cython.final
    cpdef double issue_mainloop_tma(self, Cta cta, object tile, tuple loads, object kb, object stage, Role role)
