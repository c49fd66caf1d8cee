"""Exceptions raised for libhvd status codes.

Each non-success hvd_status_t maps to one HvdError subclass carrying the status code,
the library's fixed sentence for it and the thread's hvd_last_error() detail. Every
HvdError is a RuntimeError (what Horovod raises for failed collectives); some also
derive from the builtin Horovod raises in that case, so that handlers written for
Horovod catch them: ValueError for bad arguments, for a name already in flight and for
a call before init() (Horovod's rank(), size()... raise ValueError then, its collectives
a RuntimeError: NotInitializedError is both), NotImplementedError, MemoryError,
TimeoutError.

The library's messages speak C (hvd_allreduce_async, HVD_OP_AVERAGE); python_words()
rewrites them into the names a Python caller uses.
"""
import builtins
import re

from ._capi import lib

SUCCESS = 0
INVALID_ARGUMENT = 2  # HVD_ERR_INVALID_ARGUMENT


class HvdError(RuntimeError):
    """A libhvd call failed. `status` is the hvd_status_t value, `detail` the
    hvd_last_error() text of the failing call."""

    status = None

    def __init__(self, status, detail, function=None):
        self.status = status
        self.detail = detail
        self.function = function
        meaning = lib.hvd_status_string(status).decode("utf-8", "replace")
        text = python_words(detail) or meaning
        where = python_words(function) if function else ""
        # The library's detail often names the function already.
        prefix = f"{where}: " if where and where not in text else ""
        super().__init__(prefix + text)


class NotInitializedError(HvdError, ValueError):
    pass


class InvalidArgumentError(HvdError, ValueError):
    pass


class MismatchError(HvdError):
    pass


class DuplicateNameError(HvdError, ValueError):
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


class DtypeError(TypeError, ValueError):
    """An element type libhvd has no type for (complex, ...): raised before anything
    is enqueued. Horovod raises ValueError for it, hence both."""


def not_a_handle(handle, function):
    """The error for poll()/synchronize() given something that is not a handle:
    ValueError for an int (Horovod's handles are ints; libhvd's *_async calls return
    objects), TypeError for the rest."""
    what = type(handle).__name__
    text = (f"{function}(handle): expected the handle an *_async call returned (an "
            f"hvd.Handle), got {what} {handle!r}")
    if isinstance(handle, int) and not isinstance(handle, bool):
        return ValueError(text + ": libhvd's handles are objects, not Horovod's integers; "
                          "pass the object the *_async call returned")
    return TypeError(text)


# C words -> Python words, applied in order.
_OPS = {"AVERAGE": "Average", "SUM": "Sum", "ADASUM": "Adasum", "MIN": "Min", "MAX": "Max",
        "PRODUCT": "Product"}
_REWRITES = [
    (re.compile(r"\bhvd_op_options_init\(\) or HVD_OP_OPTIONS_INITIALIZER"), "hvd"),
    (re.compile(r"\bHVD_OP_([A-Z]+)\b"), lambda m: "hvd." + _OPS.get(m.group(1), m.group(1))),
    (re.compile(r"\bHVD_DEVICE_CPU \(-1\)"), "the CPU"),
    (re.compile(r"\bHVD_(UINT8|INT8|UINT16|INT16|INT32|INT64|FLOAT16|BFLOAT16|FLOAT32|"
                r"FLOAT64|BOOL)\b"), lambda m: m.group(1).lower()),
    (re.compile(r"\bhvd_(init|shutdown)\b(\(\))?"), r"hvd.\1()"),
    (re.compile(r"\bhvd_(\w+?)(_async)?\b(\(\))?"), r"hvd.\1()"),
]


def python_words(text):
    """`text` with the C API's function and constant names replaced by the Python
    package's (hvd_allreduce_async -> hvd.allreduce(), HVD_OP_AVERAGE -> hvd.Average)."""
    if not text:
        return text
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return text


_BY_STATUS = {
    1: NotInitializedError,
    INVALID_ARGUMENT: InvalidArgumentError,
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
