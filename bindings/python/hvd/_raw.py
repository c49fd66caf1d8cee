"""Pointer-level asynchronous collectives shared by the numpy and torch layers.

Each function enqueues one libhvd operation and returns a Handle. The Handle keeps
every buffer and ctypes object the operation reads or writes alive until it has
completed, and turns the final status into a result or an HvdError.

Outputs of unknown size (allgather, alltoall) are allocated by a Python factory that
libhvd calls through the options' allocator, so the result lands directly in memory
the framework owns (a numpy array or a torch tensor): no copy, no hvd_free.
"""
import ctypes
import itertools
import threading

from . import _capi
from ._capi import lib
from .errors import check, error_for


def encode_name(name):
    if name is None:
        return None
    if isinstance(name, bytes):
        return name
    return str(name).encode("utf-8")


class Handle:
    """An operation in flight: poll() says whether it completed, wait() returns its
    result (or raises its HvdError). Waiting twice returns the same result."""

    def __init__(self, raw, function, keepalive, finish, cleanup=None):
        self._raw = raw
        self._function = function
        self._keepalive = keepalive
        self._finish = finish
        self._cleanup = cleanup
        self._completed = False
        self._result = None
        self._error = None
        self._lock = threading.Lock()

    @property
    def raw(self):
        """The hvd_handle_t value."""
        return self._raw

    def poll(self):
        with self._lock:
            if self._completed:
                return True
            done = ctypes.c_int(0)
            check(lib.hvd_poll(self._raw, ctypes.byref(done)), "hvd_poll")
            return done.value == 1

    def wait(self):
        with self._lock:
            if not self._completed:
                status = lib.hvd_wait(self._raw)
                error = error_for(status, self._function) if status != 0 else None
                self._completed = True
                try:
                    if error is None:
                        self._result = self._finish() if self._finish else None
                    else:
                        self._error = error
                finally:
                    if self._cleanup:
                        self._cleanup()
                    self._keepalive = None
                    self._finish = None
            if self._error is not None:
                raise self._error
            return self._result

    def __repr__(self):
        state = "done" if self._completed else "pending"
        return f"<hvd.Handle {self._raw} {self._function} {state}>"


# --- output allocation through hvd_op_options_t.allocator ---------------------------

_factories = {}
_factory_keys = itertools.count(1)
_factory_lock = threading.Lock()


@_capi.allocator_fn
def _allocate_trampoline(nbytes, device, user_data):
    # Runs on libhvd's background thread; ctypes takes the GIL for us. Any failure
    # becomes NULL, which libhvd reports as HVD_ERR_NO_MEMORY.
    try:
        with _factory_lock:
            slot = _factories[user_data]
        return slot.allocate(nbytes, device)
    except BaseException:  # noqa: BLE001 - nothing may propagate into C
        return None


class OutputSlot:
    """Holds the objects a factory allocated for one operation's outputs.

    factory(nbytes, device) returns (owner, address): the owner keeps the memory alive
    and becomes `value`. A grouped operation allocates one output per member, in no
    set order (members are fused), so owners are also kept by address: owner_at()
    finds a member's owner from the pointer libhvd wrote for it."""

    def __init__(self, factory):
        self._factory = factory
        self.value = None
        self._by_address = {}
        with _factory_lock:
            self.key = next(_factory_keys)
            _factories[self.key] = self

    def allocate(self, nbytes, device):
        owner, address = self._factory(int(nbytes), int(device))
        self.value = owner
        self._by_address[address] = owner
        return address

    def owner_at(self, address):
        return self._by_address.get(address)

    def attach(self, options):
        options.allocator = _allocate_trampoline
        options.allocator_user_data = self.key

    def release(self):
        with _factory_lock:
            _factories.pop(self.key, None)


# --- the operations -----------------------------------------------------------------

def _handle_out():
    return _capi.handle_t(0)


def allreduce(send, recv, count, dtype, op, name, options, keepalive, finish):
    h = _handle_out()
    check(lib.hvd_allreduce_async(send, recv, count, dtype, op, encode_name(name),
                                  ctypes.byref(options), ctypes.byref(h)), "hvd_allreduce")
    return Handle(h.value, "hvd_allreduce", (keepalive, options), finish)


def grouped_allreduce(sends, recvs, counts, dtype, op, name, options, keepalive, finish):
    n = len(sends)
    send_arr = (ctypes.c_void_p * n)(*sends)
    recv_arr = (ctypes.c_void_p * n)(*recvs)
    count_arr = (ctypes.c_int64 * n)(*counts)
    h = _handle_out()
    check(lib.hvd_grouped_allreduce_async(n, send_arr, recv_arr, count_arr, dtype, op,
                                          encode_name(name), ctypes.byref(options),
                                          ctypes.byref(h)), "hvd_grouped_allreduce")
    return Handle(h.value, "hvd_grouped_allreduce",
                  (keepalive, options, send_arr, recv_arr, count_arr), finish)


def broadcast(buf, count, dtype, root_rank, name, options, keepalive, finish):
    h = _handle_out()
    check(lib.hvd_broadcast_async(buf, count, dtype, int(root_rank), encode_name(name),
                                  ctypes.byref(options), ctypes.byref(h)), "hvd_broadcast")
    return Handle(h.value, "hvd_broadcast", (keepalive, options), finish)


def allgather(send, shape, dtype, name, options, factory, set_size, keepalive, finish):
    """finish(output_owner_or_None, recv_dim0, rows_per_rank) makes the result."""
    shape_arr = _capi.shape_array(shape)
    recv_ptr = ctypes.c_void_p()
    dim0 = ctypes.c_int64(0)
    per_rank = (ctypes.c_int64 * max(set_size, 1))()
    slot = OutputSlot(factory)
    slot.attach(options)
    h = _handle_out()
    try:
        check(lib.hvd_allgather_async(send, len(shape), shape_arr, dtype, ctypes.byref(recv_ptr),
                                      ctypes.byref(dim0), per_rank, encode_name(name),
                                      ctypes.byref(options), ctypes.byref(h)), "hvd_allgather")
    except BaseException:
        slot.release()
        raise
    return Handle(h.value, "hvd_allgather",
                  (keepalive, options, shape_arr, recv_ptr, dim0, per_rank),
                  lambda: finish(slot.value, dim0.value, list(per_rank[:set_size])),
                  cleanup=slot.release)


def alltoall(send, shape, dtype, splits, name, options, factory, set_size, keepalive, finish):
    """splits: None (even) or set_size row counts. finish(owner, recv_dim0, recv_splits)."""
    shape_arr = _capi.shape_array(shape)
    split_arr = None
    if splits is not None:
        split_arr = (ctypes.c_int64 * len(splits))(*[int(s) for s in splits])
    recv_ptr = ctypes.c_void_p()
    dim0 = ctypes.c_int64(0)
    recv_splits = (ctypes.c_int64 * max(set_size, 1))()
    slot = OutputSlot(factory)
    slot.attach(options)
    h = _handle_out()
    try:
        check(lib.hvd_alltoall_async(send, len(shape), shape_arr, dtype, split_arr,
                                     ctypes.byref(recv_ptr), ctypes.byref(dim0), recv_splits,
                                     encode_name(name), ctypes.byref(options), ctypes.byref(h)),
              "hvd_alltoall")
    except BaseException:
        slot.release()
        raise
    return Handle(h.value, "hvd_alltoall",
                  (keepalive, options, shape_arr, split_arr, recv_ptr, dim0, recv_splits),
                  lambda: finish(slot.value, dim0.value, list(recv_splits[:set_size])),
                  cleanup=slot.release)


def reducescatter(send, recv, shape, dtype, op, name, options, keepalive, finish):
    shape_arr = _capi.shape_array(shape)
    h = _handle_out()
    check(lib.hvd_reducescatter_async(send, recv, len(shape), shape_arr, dtype, op,
                                      encode_name(name), ctypes.byref(options), ctypes.byref(h)),
          "hvd_reducescatter")
    return Handle(h.value, "hvd_reducescatter", (keepalive, options, shape_arr), finish)


def grouped_allgather(sends, shapes, dtype, name, options, factory, set_size, keepalive,
                      finish):
    """finish(owners, recv_dim0s, rows_per_rank) makes the result; each is a list with
    one entry per member (rows_per_rank: a list of set_size row counts per member)."""
    n = len(sends)
    send_arr = (ctypes.c_void_p * n)(*sends)
    shape_ptrs, ndims, shape_arrs = _capi.shape_arrays(shapes)
    recv_arr = (ctypes.c_void_p * n)()
    dim0s = (ctypes.c_int64 * n)()
    per_rank = (ctypes.c_int64 * max(n * set_size, 1))()
    slot = OutputSlot(factory)
    slot.attach(options)
    h = _handle_out()
    try:
        check(lib.hvd_grouped_allgather_async(n, send_arr, ndims, shape_ptrs, dtype, recv_arr,
                                              dim0s, per_rank, encode_name(name),
                                              ctypes.byref(options), ctypes.byref(h)),
              "hvd_grouped_allgather")
    except BaseException:
        slot.release()
        raise

    def result():
        owners = [slot.owner_at(recv_arr[i]) for i in range(n)]
        rows = [list(per_rank[i * set_size:(i + 1) * set_size]) for i in range(n)]
        return finish(owners, list(dim0s), rows)
    return Handle(h.value, "hvd_grouped_allgather",
                  (keepalive, options, send_arr, shape_ptrs, ndims, shape_arrs, recv_arr,
                   dim0s, per_rank), result, cleanup=slot.release)


def grouped_reducescatter(sends, recvs, shapes, dtype, op, name, options, keepalive, finish):
    n = len(sends)
    send_arr = (ctypes.c_void_p * n)(*sends)
    recv_arr = (ctypes.c_void_p * n)(*recvs)
    shape_ptrs, ndims, shape_arrs = _capi.shape_arrays(shapes)
    h = _handle_out()
    check(lib.hvd_grouped_reducescatter_async(n, send_arr, recv_arr, ndims, shape_ptrs, dtype,
                                              op, encode_name(name), ctypes.byref(options),
                                              ctypes.byref(h)), "hvd_grouped_reducescatter")
    return Handle(h.value, "hvd_grouped_reducescatter",
                  (keepalive, options, send_arr, recv_arr, shape_ptrs, ndims, shape_arrs),
                  finish)
