# Cython declarations for common.py (compiled when a C compiler is available; see setup.py).
cimport cython

from simulator.protocol.clock cimport EventLoop


@cython.final
cdef class _WaitTotal:
    cdef public double cycles


cdef class RunStats:
    cdef public dict wait_cycles
    cdef public dict role_cycles
    cdef public dict role_count
    cdef public list tiles_done
    cdef public long long mma_kblocks
    cdef public double tc_busy_cycles
    cdef public long long tx_expected
    cdef public long long tx_landed
    cdef public long long clc_queries
    cdef public double end_cycle
    cpdef add_wait(self, str role, str barrier, double cycles)


cdef class RoleBase:
    cdef dict __dict__
    cdef public object cta
    cdef public object k
    cdef public object env
    cdef EventLoop _loop
    cdef public str who
    cdef public object tr
    cdef public RunStats stats
    cdef public bint done
    cdef public object start_cycle
    cdef public str stat_name
    cdef public dict wait_acc
    cdef public object races
    @cython.locals(loop=EventLoop)
    cdef double _time(self)
    @cython.locals(loop=EventLoop)
    cdef object _sleep(self, double delay)
    # cdef, not cpdef: a cpdef method of a class with a __dict__ looks itself up on every call.
    # Only the (compiled) role code calls it.
    @cython.locals(loop=EventLoop, now=double, acc=_WaitTotal)
    cdef _waited(self, str barrier, int stage, double t0, object tile=*, int k_block=*)
