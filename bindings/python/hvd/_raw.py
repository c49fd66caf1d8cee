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
from .errors import check, error_for


def encode_name(name):
    """A tensor name as the bytes libhvd takes: a str as UTF-8; bytes as they are,
    when they are UTF-8 text; anything else as str(name) is. Every rank must mean the
    same tensor by it, so a name libhvd would not see whole is refused with ValueError:
    one holding a NUL character (a C string ends there: "x\\0A" and "x\\0B" would both
    be "x") or one that is not valid UTF-8 (a str with a lone surrogate, such as
    os.fsdecode gives for undecodable bytes, or bytes that do not decode). The C fast
    path (_fastpath.c, name_build) applies the same rule."""
    if name is None:
        return None
    if isinstance(name, bytes):
        try:
            name.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"name {name!r} is not valid UTF-8: byte 0x{name[error.start]:02x} "
                             f"at offset {error.start} ({error.reason}); tensor names are "
                             f"text, the same on every rank") from None
        encoded = name
    else:
        text = name if isinstance(name, str) else str(name)
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"name {text!r} is not valid UTF-8 text: character "
                             f"{error.start} ({text[error.start]!r}) is a lone surrogate, "
                             f"which UTF-8 cannot encode; tensor names are text, the same on "
                             f"every rank") from None
    nul = encoded.find(b"\0")
    if nul >= 0:
        raise ValueError(f"name {name!r} holds a NUL character at byte {nul}: libhvd would "
                         f"see only {encoded[:nul]!r}; tensor names must not contain NUL")
    return encoded


class CallOptions(collections.namedtuple(
        "CallOptions", "prescale postscale device process_set_id stream",
        defaults=(1.0, 1.0, _capi.HVD_DEVICE_CPU, _capi.HVD_GLOBAL_PROCESS_SET, None))):
    """What hvd_op_options_t carries for one call, as plain values: the C fast path
    takes them as arguments, the ctypes path builds the structure from them (c())."""
    __slots__ = ()

    def c(self):
        return _capi.new_options(*self)


def scale_factor(value, parameter):
    """A prescale or postscale factor as a float: a number, or anything with
    __float__ (a numpy scalar, a one-element tensor). A string is refused, which
    float() would read: the factor is a number, as in Horovod."""
    if value is not None and not isinstance(value, (str, bytes, bytearray)):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"{parameter} must be a number, got {type(value).__name__} {value!r}")


# hvd.Handle and the registry of operations in flight: in C where hvd._fastpath was
# built (hvd/_handle.c), else in Python (hvd/_pyhandle.py). Chosen once, here: the
# enqueue path (`fast`, which tests swap for ctypes) does not change where handles live.
if fast is not None:
    fast.bind_errors(error_for, check)
    _handles = fast
else:
    from . import _pyhandle as _handles
Handle = _handles.Handle


def in_flight():
    """Number of operations whose buffers are still held (waited for or not)."""
    return _handles.in_flight()


def reap_dropped(block=False):
    """Releases the operations whose Handle was dropped and that have completed; with
    block, waits for every dropped operation first (each must be able to complete)."""
    _handles.reap(block)


def complete_all_after_shutdown():
    _handles.complete_all()


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


def _claim(name, options):
    """The name as bytes and its key, once no pending operation of this process holds
    the name. A name stays taken until this process has released its operation: waited
    for its handle, or reaped it after the handle was dropped. libhvd rejects a name
    still in flight in the library; this also rejects one whose operation completed
    there but not yet here, so reusing a name before synchronize() fails on every run,
    not only when the first operation happens to be slower than the second call."""
    encoded = encode_name(name)
    key = None if encoded is None else (options.process_set_id, encoded)
    _handles.claim_name(key)
    return encoded, key


def _handle_out(name, options):
    """Checks the name, then returns the ctypes handle to enqueue into."""
    _handles.claim_name(_name_key(name, options))
    return _capi.handle_t(0)


def allreduce(send, recv, count, dtype, op, name, options, keepalive, finish, shape=None,
              result=None):
    """options: a CallOptions. shape: the tensor's shape, which every rank must then
    pass alike (optional). The Handle's result is finish() where finish is given, else
    `result`."""
    if fast is not None:
        return fast.allreduce(send, recv, count, dtype, op, name, *options, shape, keepalive,
                              finish, result)
    if finish is None:
        finish = lambda: result  # noqa: E731 - the Python Handle takes a callable
    c_options = options.c()
    shape_arr = _capi.set_shape(c_options, shape)
    encoded, key = _claim(name, options)
    h = _capi.handle_t(0)
    check(lib.hvd_allreduce_async(send, recv, count, dtype, op, encoded,
                                  ctypes.byref(c_options), ctypes.byref(h)), "hvd_allreduce")
    return Handle(h.value, key, "hvd_allreduce", (keepalive, c_options, shape_arr), finish)


def grouped_allreduce(sends, recvs, counts, dtype, op, name, options, keepalive, finish,
                      members=None):
    """members: the arrays or tensors (anything with .shape); libhvd compares the shape
    of a group of one only, so only then is it read (a thousand torch shapes: 0.13 ms)."""
    n = len(sends)
    lone_shape = members[0].shape if members is not None and n == 1 else None
    if fast is not None:
        return fast.grouped_allreduce(sends, recvs, counts, dtype, op, name, *options,
                                      lone_shape, keepalive, finish, None)
    options = options.c()
    shape_arr = _capi.set_shape(options, lone_shape) if lone_shape is not None else None
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
        return fast.broadcast(buf, count, dtype, int(root_rank), name, options.device,
                              options.process_set_id, options.stream, shape, keepalive,
                              finish, None)
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
