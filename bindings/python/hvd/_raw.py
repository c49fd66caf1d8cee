"""Pointer-level asynchronous collectives shared by the numpy and torch layers.

Each function enqueues one libhvd operation and returns a Handle. The Handle keeps
every buffer and ctypes object the operation reads or writes alive until it has
completed, and turns the final status into a result or an HvdError.

Outputs of unknown size (allgather, alltoall) are allocated by a Python factory that
libhvd calls through the options' allocator, so the result lands directly in memory
the framework owns (a numpy array or a torch tensor): no copy, no hvd_free.
"""
import collections
import ctypes
import itertools
import threading

from . import _capi
from ._capi import lib
from ._fastcall import fast
from .errors import HvdError, check, error_for


def encode_name(name):
    if name is None:
        return None
    if isinstance(name, bytes):
        return name
    return str(name).encode("utf-8")


class CallOptions(collections.namedtuple(
        "CallOptions", "prescale postscale device process_set_id stream",
        defaults=(1.0, 1.0, _capi.HVD_DEVICE_CPU, _capi.HVD_GLOBAL_PROCESS_SET, None))):
    """What hvd_op_options_t carries for one call, as plain values: the C fast path
    takes them as arguments, the ctypes path builds the structure from them (c())."""
    __slots__ = ()

    def c(self):
        return _capi.new_options(*self)


def _wait_raw(raw):
    if fast is not None:
        return fast.wait(raw)
    return lib.hvd_wait(raw)


def _poll_raw(raw):
    """True when done; raises the HvdError of a failed poll."""
    if fast is not None:
        done = fast.poll(raw)
        if done < 0:
            check(-done, "poll")
        return done == 1
    done = ctypes.c_int(0)
    check(lib.hvd_poll(raw, ctypes.byref(done)), "poll")
    return done.value == 1


class _Operation:
    """What one enqueued operation needs until libhvd is done with it: the raw handle,
    every buffer and ctypes object libhvd reads or writes, and how to make the result.

    The registry below owns it while it is in flight, not the Handle the caller gets:
    a caller may drop its Handle at once, and the memory must stay valid until the
    library has completed the operation."""

    __slots__ = ("raw", "name_key", "function", "keepalive", "finish", "cleanup",
                 "completed", "result", "error", "lock")

    def __init__(self, raw, name_key, function, keepalive, finish, cleanup):
        self.raw = raw
        self.name_key = name_key
        self.function = function
        self.keepalive = keepalive
        self.finish = finish
        self.cleanup = cleanup
        self.completed = False
        self.result = None
        self.error = None
        self.lock = threading.Lock()

    def poll(self):
        with self.lock:
            if self.completed:
                return True
            return _poll_raw(self.raw)

    def complete(self):
        """Waits for the operation (releasing the C handle), makes its result or error,
        and lets go of its buffers. Idempotent."""
        with self.lock:
            if self.completed:
                return
            status = _wait_raw(self.raw)
            self.completed = True
            try:
                if status != 0:
                    self.error = error_for(status, self.function)
                elif self.finish is not None:
                    self.result = self.finish()
            except BaseException as exc:  # noqa: BLE001 - kept for the waiter
                self.error = exc
            finally:
                if self.cleanup is not None:
                    self.cleanup()
                self.keepalive = self.finish = self.cleanup = None
        _registry.forget(self)

    def outcome(self):
        self.complete()
        if self.error is not None:
            raise self.error
        return self.result


class _Registry:
    """Every operation in flight, and those whose Handle was dropped (orphans).

    A dropped Handle's finalizer only queues its operation (it may run inside garbage
    collection, on any thread, so it takes no lock); orphans are reaped on later
    enqueues and at shutdown: a completed one is waited for (freeing the C handle) and
    its buffers released, one still running stays registered."""

    # No lock: every step below is one operation on a built-in set, dict or deque,
    # atomic under the GIL (a lock here cost a quarter of a microsecond per call, on
    # a path users take per gradient). forget's check-then-delete cannot remove another
    # operation's name: while this one holds the name, a second claim of it is refused
    # (here, or by libhvd's own in-flight check before any Handle exists).

    def __init__(self):
        self._live = set()
        self._names = {}  # (process set id, name) -> its pending operation
        self._orphans = collections.deque()

    def add(self, op):
        self._live.add(op)
        if op.name_key is not None:
            self._names[op.name_key] = op

    def forget(self, op):
        self._live.discard(op)
        key = op.name_key
        if key is not None and self._names.get(key) is op:
            self._names.pop(key, None)

    def name_taken(self, key):
        return key in self._names

    def orphan(self, op):
        self._orphans.append(op)

    def pending(self):
        return len(self._live)

    def reap(self, block=False):
        """Completes orphans that are done; keeps the others for a later reap.

        Called on every enqueue, so it stays cheap with thousands of orphans: it looks
        at the oldest ones (operations mostly complete in the order they were started)
        and stops after a few that are still running, sending those to the back."""
        if not self._orphans:
            return
        misses = 0
        for _ in range(len(self._orphans)):
            try:
                op = self._orphans.popleft()
            except IndexError:
                break
            try:
                done = block or op.poll()
            except HvdError:
                done = True  # hvd_wait reports the failure to nobody, and frees it
            if done:
                op.complete()
                continue
            self._orphans.append(op)
            misses += 1
            if misses >= _REAP_MISSES:
                break

    def complete_all(self):
        """After hvd_shutdown every operation has completed (with HVD_ERR_SHUT_DOWN if it
        had not run): wait for all of them, so that no C handle outlives the runtime and
        a later wait() on a kept Handle reports that error without calling into C."""
        for op in self._live.copy():  # copied in one step: other threads may add or forget
            op.complete()
        self._orphans.clear()


_REAP_MISSES = 4
_registry = _Registry()


class Handle:
    """An operation in flight: poll() says whether it completed, wait() returns its
    result (or raises its HvdError). Waiting twice returns the same result. Dropping
    a Handle without waiting is safe: the operation completes in the background."""

    __slots__ = ("_op",)

    def __init__(self, raw, name_key, function, keepalive, finish, cleanup=None):
        self._op = _Operation(raw, name_key, function, keepalive, finish, cleanup)
        _registry.add(self._op)

    def __del__(self):
        # May run inside garbage collection, on any thread: only queue the operation
        # (a deque append takes no lock); a later enqueue or shutdown reaps it.
        op = getattr(self, "_op", None)
        if op is not None and not op.completed and _registry is not None:
            _registry.orphan(op)

    @property
    def raw(self):
        """The hvd_handle_t value."""
        return self._op.raw

    def poll(self):
        return self._op.poll()

    def wait(self):
        return self._op.outcome()

    def __repr__(self):
        state = "done" if self._op.completed else "pending"
        return f"<hvd.Handle {self._op.raw} {self._op.function} {state}>"


def in_flight():
    """Number of operations whose buffers are still held (waited for or not)."""
    return _registry.pending()


def reap_dropped(block=False):
    """Releases the operations whose Handle was dropped and that have completed; with
    block, waits for every dropped operation first (each must be able to complete)."""
    _registry.reap(block)


def complete_all_after_shutdown():
    _registry.complete_all()


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

def _name_key(name, options):
    return None if name is None else (options.process_set_id, encode_name(name))


def _claim_name(key):
    """Checks that no operation of this process holds the name (key from _name_key).

    A name stays taken until this process has released its operation: waited for its
    handle, or reaped it after the handle was dropped. libhvd rejects a name still in
    flight in the library; this also rejects one whose operation completed there but
    not yet here, so reusing a name before synchronize() fails on every run, not only
    when the first operation happens to be slower than the second call."""
    taken = key is not None and _registry.name_taken(key)
    # Every enqueue also releases what dropped handles left behind (after the check, so
    # a dropped operation keeps its name until the next call), so a loop of
    # fire-and-forget calls holds only the operations still running.
    _registry.reap()
    if taken:
        raise error_for(4, None, f"an operation named '{key[1].decode('utf-8', 'replace')}' "
                        "is still pending in this process (its handle was not synchronized "
                        "yet): names must be unique among pending operations")


def _claim(name, options):
    """The name as bytes and its key, once the name is checked free (_claim_name)."""
    encoded = encode_name(name)
    key = None if encoded is None else (options.process_set_id, encoded)
    _claim_name(key)
    return encoded, key


def _handle_out(name, options):
    """Checks the name, then returns the ctypes handle to enqueue into."""
    _claim_name(_name_key(name, options))
    return _capi.handle_t(0)


def _fast_handle(result, function):
    """The handle a _fastpath call returned, or its failure raised."""
    if result < 0:
        check(-result, function)
    return result


def allreduce(send, recv, count, dtype, op, name, options, keepalive, finish, shape=None):
    """options: a CallOptions. shape: the tensor's shape, which every rank must then
    pass alike (optional)."""
    if fast is not None:
        encoded, key = _claim(name, options)
        raw = _fast_handle(fast.allreduce(send, recv, count, dtype, op, encoded, *options,
                                          shape), "hvd_allreduce")
        return Handle(raw, key, "hvd_allreduce", keepalive, finish)
    c_options = options.c()
    shape_arr = _capi.set_shape(c_options, shape)
    encoded, key = _claim(name, options)
    h = _capi.handle_t(0)
    check(lib.hvd_allreduce_async(send, recv, count, dtype, op, encoded,
                                  ctypes.byref(c_options), ctypes.byref(h)), "hvd_allreduce")
    return Handle(h.value, key, "hvd_allreduce", (keepalive, c_options, shape_arr), finish)


def grouped_allreduce(sends, recvs, counts, dtype, op, name, options, keepalive, finish,
                      shapes=None):
    """shapes: the members' shapes; libhvd compares the shape of a group of one."""
    n = len(sends)
    if fast is not None:
        encoded, key = _claim(name, options)
        raw = _fast_handle(fast.grouped_allreduce(sends, recvs, counts, dtype, op, encoded,
                                                  *options,
                                                  shapes[0] if shapes and n == 1 else None),
                           "hvd_grouped_allreduce")
        return Handle(raw, key, "hvd_grouped_allreduce", keepalive, finish)
    options = options.c()
    shape_arr = _capi.set_shape(options, shapes[0]) if shapes and n == 1 else None
    send_arr = (ctypes.c_void_p * n)(*sends)
    recv_arr = (ctypes.c_void_p * n)(*recvs)
    count_arr = (ctypes.c_int64 * n)(*counts)
    h = _handle_out(name, options)
    check(lib.hvd_grouped_allreduce_async(n, send_arr, recv_arr, count_arr, dtype, op,
                                          encode_name(name), ctypes.byref(options),
                                          ctypes.byref(h)), "hvd_grouped_allreduce")
    return Handle(h.value, _name_key(name, options), "hvd_grouped_allreduce",
                  (keepalive, options, shape_arr, send_arr, recv_arr, count_arr), finish)


def broadcast(buf, count, dtype, root_rank, name, options, keepalive, finish, shape=None):
    """root_rank: a global rank. shape: as for allreduce."""
    if fast is not None:
        encoded, key = _claim(name, options)
        raw = _fast_handle(fast.broadcast(buf, count, dtype, int(root_rank), encoded,
                                          options.device, options.process_set_id,
                                          options.stream, shape), "hvd_broadcast")
        return Handle(raw, key, "hvd_broadcast", keepalive, finish)
    c_options = options.c()
    shape_arr = _capi.set_shape(c_options, shape)
    encoded, key = _claim(name, options)
    h = _capi.handle_t(0)
    check(lib.hvd_broadcast_async(buf, count, dtype, int(root_rank), encoded,
                                  ctypes.byref(c_options), ctypes.byref(h)), "hvd_broadcast")
    return Handle(h.value, key, "hvd_broadcast", (keepalive, c_options, shape_arr), finish)


def allgather(send, shape, dtype, name, options, factory, set_size, keepalive, finish):
    """finish(output_owner_or_None, recv_dim0, rows_per_rank) makes the result."""
    options = options.c()
    shape_arr = _capi.shape_array(shape)
    recv_ptr = ctypes.c_void_p()
    dim0 = ctypes.c_int64(0)
    per_rank = (ctypes.c_int64 * max(set_size, 1))()
    slot = OutputSlot(factory)
    slot.attach(options)
    h = _handle_out(name, options)
    try:
        check(lib.hvd_allgather_async(send, len(shape), shape_arr, dtype, ctypes.byref(recv_ptr),
                                      ctypes.byref(dim0), per_rank, encode_name(name),
                                      ctypes.byref(options), ctypes.byref(h)), "hvd_allgather")
    except BaseException:
        slot.release()
        raise
    return Handle(h.value, _name_key(name, options), "hvd_allgather",
                  (keepalive, options, shape_arr, recv_ptr, dim0, per_rank),
                  lambda: finish(slot.value, dim0.value, list(per_rank[:set_size])),
                  cleanup=slot.release)


def alltoall(send, shape, dtype, splits, name, options, factory, set_size, keepalive, finish):
    """splits: None (even) or set_size row counts. finish(owner, recv_dim0, recv_splits)."""
    options = options.c()
    shape_arr = _capi.shape_array(shape)
    split_arr = None
    if splits is not None:
        # libhvd reads one count per rank of the set from this array.
        if set_size >= 0 and len(splits) != set_size:
            raise error_for(2, "alltoall", f"splits has {len(splits)} entries but "
                            f"the process set has {set_size} ranks; give one row count per "
                            "rank")
        split_arr = (ctypes.c_int64 * len(splits))(*[int(s) for s in splits])
    recv_ptr = ctypes.c_void_p()
    dim0 = ctypes.c_int64(0)
    recv_splits = (ctypes.c_int64 * max(set_size, 1))()
    slot = OutputSlot(factory)
    slot.attach(options)
    h = _handle_out(name, options)
    try:
        check(lib.hvd_alltoall_async(send, len(shape), shape_arr, dtype, split_arr,
                                     ctypes.byref(recv_ptr), ctypes.byref(dim0), recv_splits,
                                     encode_name(name), ctypes.byref(options), ctypes.byref(h)),
              "hvd_alltoall")
    except BaseException:
        slot.release()
        raise
    return Handle(h.value, _name_key(name, options), "hvd_alltoall",
                  (keepalive, options, shape_arr, split_arr, recv_ptr, dim0, recv_splits),
                  lambda: finish(slot.value, dim0.value, list(recv_splits[:set_size])),
                  cleanup=slot.release)


def reducescatter(send, recv, shape, dtype, op, name, options, keepalive, finish):
    options = options.c()
    shape_arr = _capi.shape_array(shape)
    h = _handle_out(name, options)
    check(lib.hvd_reducescatter_async(send, recv, len(shape), shape_arr, dtype, op,
                                      encode_name(name), ctypes.byref(options), ctypes.byref(h)),
          "hvd_reducescatter")
    return Handle(h.value, _name_key(name, options), "hvd_reducescatter",
                  (keepalive, options, shape_arr), finish)


def grouped_allgather(sends, shapes, dtype, name, options, factory, set_size, keepalive,
                      finish):
    """finish(owners, recv_dim0s, rows_per_rank) makes the result; each is a list with
    one entry per member (rows_per_rank: a list of set_size row counts per member)."""
    options = options.c()
    n = len(sends)
    send_arr = (ctypes.c_void_p * n)(*sends)
    shape_ptrs, ndims, shape_arrs = _capi.shape_arrays(shapes)
    recv_arr = (ctypes.c_void_p * n)()
    dim0s = (ctypes.c_int64 * n)()
    per_rank = (ctypes.c_int64 * max(n * set_size, 1))()
    slot = OutputSlot(factory)
    slot.attach(options)
    h = _handle_out(name, options)
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
    return Handle(h.value, _name_key(name, options), "hvd_grouped_allgather",
                  (keepalive, options, send_arr, shape_ptrs, ndims, shape_arrs, recv_arr,
                   dim0s, per_rank), result, cleanup=slot.release)


def grouped_reducescatter(sends, recvs, shapes, dtype, op, name, options, keepalive, finish):
    options = options.c()
    n = len(sends)
    send_arr = (ctypes.c_void_p * n)(*sends)
    recv_arr = (ctypes.c_void_p * n)(*recvs)
    shape_ptrs, ndims, shape_arrs = _capi.shape_arrays(shapes)
    h = _handle_out(name, options)
    check(lib.hvd_grouped_reducescatter_async(n, send_arr, recv_arr, ndims, shape_ptrs, dtype,
                                              op, encode_name(name), ctypes.byref(options),
                                              ctypes.byref(h)), "hvd_grouped_reducescatter")
    return Handle(h.value, _name_key(name, options), "hvd_grouped_reducescatter",
                  (keepalive, options, send_arr, recv_arr, shape_ptrs, ndims, shape_arrs),
                  finish)
