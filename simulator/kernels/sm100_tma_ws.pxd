# Cython declarations for sm100_tma_ws.py (compiled when a C compiler is available; see setup.py).
cimport cython

from simulator.kernels.common cimport RoleBase, RunStats
from simulator.machine.memory cimport MemorySystem
from simulator.protocol.mbarrier cimport ClusterBarrier, MBarrier, NamedBarrier
from simulator.protocol.pipeline cimport (
    PipelineAsync,
    PipelineCLCFetchAsync,
    PipelineState,
    PipelineTmaUmmaAsync,
    PipelineTransactionAsync,
    PipelineUmmaAsync,
)


cdef class Cta:
    cdef dict __dict__
    cdef public object kernel
    cdef public object env
    cdef public object cluster
    cdef public long rank
    cdef public long cx
    cdef public long cy
    cdef public long sm
    cdef public long atom
    cdef public bint is_first_cta
    cdef public bint is_mma_leader
    cdef public long leader_rank
    cdef public PipelineTmaUmmaAsync mainloop
    cdef public PipelineUmmaAsync accumulator
    cdef public PipelineCLCFetchAsync clc
    cdef public PipelineAsync clc_throttle
    cdef public PipelineTransactionAsync epi_load
    cdef public NamedBarrier tmem_alloc
    cdef public ClusterBarrier epilogue_throttle
    cdef public list clc_response
    cdef public double tc_free
    cdef public double ingress_free
    cdef public tuple load_plan
    cdef public list tma_dests
    cdef public long long load_bytes


cdef class Role(RoleBase):
    cdef public PipelineState clc_state


cdef class MainloopLoad(Role):
    pass


cdef class Mma(Role):
    pass


cdef class EpilogueLoad(Role):
    pass


cdef class Epilogue(Role):
    pass


cdef class Sched(Role):
    pass


@cython.final
cdef class Sm100GemmTmaWarpSpecialized:
    cdef dict __dict__
    cdef public object env
    cdef public MemorySystem mem
    cdef public RunStats stats
    cdef public double _ingress_rate
    cdef public double _ingress_lat
    cdef public double _l2_cost
    cdef public long _a_dests
    cdef public long _b_dests
    cdef public object races
    @cython.final
    cpdef double issue_mainloop_tma(self, Cta cta, object tile, tuple loads, object kb, object stage, Role role)
