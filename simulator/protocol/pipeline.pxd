# Cython declarations for pipeline.py (compiled when a C compiler is available; see setup.py).
cimport cython

from simulator.protocol.clock cimport EventLoop
from simulator.protocol.mbarrier cimport MBarrier


cpdef _arrive_kw(MBarrier bar, long count, str who, object round)
@cython.locals(bar=MBarrier)
cpdef _arrive_all(list bars, long count, str who, object round)


cdef class PipelineState:
    cdef public long stages
    cdef public long index
    cdef public long phase
    cdef public long count
    cpdef PipelineState advance(self)
    cpdef PipelineState copy(self)


cdef class Pipeline:
    cdef public object env
    cdef EventLoop _loop
    cdef public object params
    cdef public str name
    cdef public long stages
    cdef public long cta
    cdef public double remote_latency
    cdef public list full
    cdef public list empty
    cdef public list peers
    cdef public long rank
    @cython.locals(bar=MBarrier)
    cpdef object producer_acquire(self, PipelineState state, str who)
    @cython.locals(bar=MBarrier)
    cpdef producer_commit(self, PipelineState state, str who, long count=*)
    @cython.locals(bar=MBarrier)
    cpdef object consumer_wait(self, PipelineState state, str who)
    @cython.locals(bar=MBarrier)
    cpdef consumer_release(self, PipelineState state, str who, long count=*)


cdef class PipelineAsync(Pipeline):
    pass


cdef class PipelineTmaAsync(Pipeline):
    cpdef consumer_release_to(self, PipelineState state, object dst_ranks, str who, long count=*)
    @cython.locals(bar=MBarrier, peer=Pipeline, r=long, remote=list, loop=EventLoop)
    cpdef release_stage(self, long index, long round, object dst_ranks, str who, long count=*)
    @cython.locals(bar=MBarrier)
    cpdef producer_acquire_expect(self, PipelineState state, str who, bint is_leader=*, object nbytes=*)
    @cython.locals(bar=MBarrier, peer=Pipeline, lat=double, r=long)
    cpdef release_stage_at(self, double t, long index, long round, object dst_ranks, str who, long count=*)


cdef class PipelineTransactionAsync(Pipeline):
    pass


cdef class PipelineTmaUmmaAsync(PipelineTmaAsync):
    pass


cdef class PipelineUmmaAsync(Pipeline):
    @cython.locals(bar=MBarrier, peer=Pipeline, lat=double, r=long, rnd=long)
    cpdef producer_commit_to_at(self, double t, PipelineState state, object dst_ranks, str who)


cdef class PipelineCLCFetchAsync(Pipeline):
    pass
