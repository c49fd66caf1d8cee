"""hvd.Handle and the registry of operations in flight, in Python: the fallback where
hvd._fastpath (which has both in C, hvd/_handle.c) was not built. The two offer the
same names: Handle(raw, name_key, function, keepalive, finish, cleanup=None),
name_taken(key), claim_name(key), reap(block=False), in_flight(), complete_all().
"""
import collections
import ctypes
import threading

from ._capi import lib
from .errors import HvdError, check, error_for


def _wait_raw(raw):
    return lib.hvd_wait(raw)


def _poll_raw(raw):
    """True when done; raises the HvdError of a failed poll."""
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


def name_taken(key):
    return _registry.name_taken(key)


def claim_name(key):
    """Raises DuplicateNameError while a pending operation of this process holds the
    name (key: (process set id, name as bytes), or None for an unnamed operation)."""
    taken = key is not None and _registry.name_taken(key)
    # Every enqueue also releases what dropped handles left behind (after the check, so
    # a dropped operation keeps its name until the next call), so a loop of
    # fire-and-forget calls holds only the operations still running.
    _registry.reap()
    if taken:
        raise error_for(4, None, f"an operation named '{key[1].decode('utf-8', 'replace')}' "
                        "is still pending in this process (its handle was not synchronized "
                        "yet): names must be unique among pending operations")


def reap(block=False):
    _registry.reap(block)


def in_flight():
    return _registry.pending()


def complete_all():
    _registry.complete_all()
