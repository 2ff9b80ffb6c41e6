# Cython declarations for mbarrier.py (compiled when a C compiler is available; see setup.py).
cimport cython

from simulator.protocol.clock cimport EventLoop


@cython.final
@cython.freelist(64)
cdef class _Wait:
    cdef public str who
    cdef public long parity
    cdef public double since
    cdef public object event
    cdef public bint woken


@cython.final
@cython.freelist(64)
cdef class _LaterOp:
    cdef public double t
    cdef public int kind
    cdef public long long amount
    cdef public str who
    cdef public object round


cdef class MBarrier:
    cdef public object env
    cdef EventLoop _loop
    cdef public str name
    cdef public long expected
    cdef public long _pending
    cdef public long long _tx
    cdef public long _phase
    cdef public list _waiters
    cdef public str owed_by
    cdef public double wake_latency
    cdef public list violations
    cdef public long violation_count
    cdef public long long arrivals_total
    cdef public long long tx_total
    cdef public double phase_done_at
    cdef public list _future
    cdef public object _op_time
    cdef public long _unwoken
    cdef public int wait_mutation
    cdef public long long tx_override

    cpdef bint test_wait(self, long parity)
    @cython.locals(loop=EventLoop)
    cdef double _time(self)
    @cython.locals(loop=EventLoop)
    cdef object _new_event(self)
    @cython.locals(loop=EventLoop)
    cdef void _wake(self, object ev, double delay)
    cpdef arrive(self, long count=*, str who=*, object round=*)
    @cython.locals(pending=long, take=long)
    cpdef _arrive_now(self, long count, str who, object round)
    cpdef expect_tx(self, long long nbytes)
    cpdef arrive_and_expect_tx(self, long long nbytes, long count=*, str who=*, object round=*)
    cpdef complete_tx(self, long long nbytes)
    cpdef _complete_tx_now(self, long long nbytes)
    cpdef arrive_at(self, double t, long count=*, str who=*, object round=*)
    cpdef complete_tx_at(self, double t, long long nbytes)
    @cython.locals(f=list, i=Py_ssize_t, t=double, prev=_LaterOp)
    cdef _later(self, _LaterOp op)
    @cython.locals(f=list, now=double, op=_LaterOp)
    cpdef _sync(self, object until=*)
    @cython.locals(p=cython.longlong, x=cython.longlong, op=_LaterOp)
    cpdef object _predict(self)
    @cython.locals(cur=long, predicted=bint, t=double, w=_Wait)
    cpdef _schedule_waiters(self)
    @cython.locals(done=long, now=double, at=double, delay=double, w=_Wait, keep=list, waiters=list)
    cpdef _complete_phase(self)
    cpdef _violation(self, str who, long round)
    cpdef object wait(self, long parity, str who)


cdef class NamedBarrier:
    cdef public object env
    cdef public str name
    cdef public long expected
    cdef public long pending
    cdef public list _waiters
    cdef public str owed_by
    cdef public long generation
    cdef public int wait_mutation
    cdef public list violations
    cdef public long violation_count


cdef class ClusterBarrier(MBarrier):
    cdef public double remote_latency
