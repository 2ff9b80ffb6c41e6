# Cython declarations for clock.py (compiled when a C compiler is available; see setup.py).
cdef class EventLoop:
    cdef public double _now
    cpdef object event(self)
    cpdef schedule(self, object event, int priority=*, double delay=*)
    cpdef object timeout(self, double delay, object value=*)
    cpdef call_later(self, double delay, object fn, tuple args)
