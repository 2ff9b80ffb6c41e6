# Cython declarations for memory.py (compiled when a C compiler is available; see setup.py).
cimport cython


@cython.final
cdef class Channel:
    cdef public str name
    cdef public double bytes_per_cycle
    cdef public double next_free
    cdef public long long bytes_total
    cdef public double busy_cycles
    cdef public double bin_cycles
    cdef public dict bins
    cpdef double reserve(self, double now, long long nbytes)
    @cython.locals(start=double, dur=double, end=double, b=long)
    cpdef double reserve_scaled(self, double now, long long nbytes, double cost)


@cython.final
cdef class MemorySystem:
    cdef public object t
    cdef public double _hbm_latency
    cdef public double _l2_latency
    cdef public double _tma_overhead
    cdef public long long _l2_capacity
    cdef public Channel hbm
    cdef public Channel l2
    cdef public long long _lru_bytes
    cdef public object _prev_arr
    cdef public object _next_arr
    cdef public object _size_arr
    cdef public object _ready_arr
    cdef public object _dirty_arr
    cdef long long[::1] _prev
    cdef long long[::1] _next
    cdef long long[::1] _size
    cdef double[::1] _ready
    cdef signed char[::1] _dirty
    cdef public long long hbm_read_bytes
    cdef public long long hbm_write_bytes
    cdef public long long l2_hits
    cdef public long long l2_misses
    cdef public long long load_bytes
    cdef public long long zero_fill_bytes
    cdef public bint last_hit
    cdef public bint fill_wait
    cdef public double miss_extra
    cdef public dict _key_blocks
    cdef public object _next_key
    cdef public long long workspace_write_bytes
    cdef public long long workspace_read_bytes
    cdef public long long _dirty_slots
    cpdef object key_block(self, tuple name, long long size)
    cdef void _reserve_slots(self, Py_ssize_t slots)
    @cython.locals(prev=cython.longlong[::1], nxt=cython.longlong[::1], p=Py_ssize_t, n=Py_ssize_t)
    cdef void _unlink(self, Py_ssize_t slot)
    @cython.locals(prev=cython.longlong[::1], nxt=cython.longlong[::1], last=Py_ssize_t)
    cdef void _push_most_recent(self, Py_ssize_t slot)
    cpdef double load(self, double now, object key, long long nbytes)
    @cython.locals(end=double, land=double, slot=Py_ssize_t, size=cython.longlong[::1])
    cpdef double load_scaled(self, double now, object key, long long nbytes, double l2_cost)
    @cython.locals(old=Py_ssize_t, size=cython.longlong[::1], nxt=cython.longlong[::1])
    cdef void _evict(self, double now)
    @cython.locals(end=double, slot=Py_ssize_t, size=cython.longlong[::1])
    cpdef double workspace_write(self, double now, long long key, long long nbytes, double l2_cost=*)
    @cython.locals(slot=Py_ssize_t)
    cpdef double workspace_read(self, double now, long long key, long long nbytes)
    @cython.locals(end=double)
    cpdef double zero_fill(self, double now, long long nbytes, double cost)
    @cython.locals(end=double)
    cpdef double store(self, double now, long long nbytes)
    cpdef double store_accepted(self, double now, long long nbytes)
