"""Exceptions raised for libhvd status codes.

Each non-success hvd_status_t maps to one HvdError subclass carrying the status code,
the library's fixed sentence for it and the thread's hvd_last_error() detail. Some
also derive from the matching builtin (ValueError, NotImplementedError, ...) so that
generic handlers keep working.
"""
import builtins

from ._capi import lib

SUCCESS = 0


class HvdError(RuntimeError):
    """A libhvd call failed. `status` is the hvd_status_t value, `detail` the
    hvd_last_error() text of the failing call."""

    status = None

    def __init__(self, status, detail, function=None):
        self.status = status
        self.detail = detail
        self.function = function
        meaning = lib.hvd_status_string(status).decode("utf-8", "replace")
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{detail or meaning}")


class NotInitializedError(HvdError):
    pass


class InvalidArgumentError(HvdError, ValueError):
    pass


class MismatchError(HvdError):
    pass


class DuplicateNameError(HvdError):
    pass


class ShutDownError(HvdError):
    pass


class TimeoutError(HvdError, builtins.TimeoutError):  # noqa: A001 - mirrors the status name
    pass


class UnsupportedError(HvdError, NotImplementedError):
    pass


class MpiError(HvdError):
    pass


class CudaError(HvdError):
    pass


class NcclError(HvdError):
    pass


class NoMemoryError(HvdError, MemoryError):
    pass


class InternalError(HvdError):
    pass


_BY_STATUS = {
    1: NotInitializedError,
    2: InvalidArgumentError,
    3: MismatchError,
    4: DuplicateNameError,
    5: ShutDownError,
    6: TimeoutError,
    7: UnsupportedError,
    8: MpiError,
    9: CudaError,
    10: NcclError,
    11: NoMemoryError,
    12: InternalError,
}


def error_for(status, function=None, detail=None):
    """The exception for a failed status, with the current thread's last error."""
    if detail is None:
        raw = lib.hvd_last_error()
        detail = raw.decode("utf-8", "replace") if raw else ""
    return _BY_STATUS.get(status, HvdError)(status, detail, function)


def check(status, function=None):
    """Raises the matching HvdError unless status is HVD_SUCCESS."""
    if status != SUCCESS:
        raise error_for(status, function)
