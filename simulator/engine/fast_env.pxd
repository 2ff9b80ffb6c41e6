# Cython declarations for fast_env.py (compiled when a C compiler is available; see setup.py).
cimport cython

from simulator.protocol.clock cimport EventLoop

cdef int _PRIORITY_SHIFT
cdef bint COMPILED


@cython.final
@cython.freelist(256)
cdef class FastEvent:
    cdef public object env
    cdef public object proc
    cdef public object fn
    cdef public tuple args
    cdef public bint done
    cdef public bint _ok
    cdef public object _value
    cdef public double _t
    cdef public long long _key


cdef class FastEnv(EventLoop):
    cdef public list _queue
    cdef public Py_ssize_t _n
    cdef public object _times
    cdef public object _keys
    cdef double[::1] _tv
    cdef long long[::1] _kv
    cdef public long long _seq
    cdef public long long events_processed
    cdef public object max_events
    cdef public object progress
    cdef public long long progress_every
    cpdef object event(self)
    @cython.locals(key=cython.longlong)
    cdef void _push(self, FastEvent ev, double t, int priority)
    cdef FastEvent _pop(self)
    @cython.locals(extra=Py_ssize_t)
    cdef void _grow(self)
    @cython.locals(times=cython.double[::1], keys=cython.longlong[::1], evs=list, pos=Py_ssize_t,
                   parent=Py_ssize_t, pt=double)
    cdef void _sift_push(self, FastEvent ev, double t, long long key)
    @cython.locals(times=cython.double[::1], keys=cython.longlong[::1], evs=list, n=Py_ssize_t, top=FastEvent,
                   last_t=double, last_k=cython.longlong, last=object, pos=Py_ssize_t, child=Py_ssize_t,
                   right=Py_ssize_t, ct=double)
    cdef FastEvent _sift_pop(self)
    cpdef schedule(self, object event, int priority=*, double delay=*)
    cpdef object timeout(self, double delay, object value=*)
    cpdef call_later(self, double delay, object fn, tuple args)
    cpdef FastEvent process(self, object generator)
    @cython.locals(ev=FastEvent, nxt=FastEvent, n=cython.longlong, next_check=cython.longlong,
                   every=cython.longlong)
    cpdef run(self)
