"""Collectives refused in Python are refused to the other ranks too.

An exception raised by an entry point before it calls libhvd (its own checks'
TypeError or ValueError, or whatever the framework raises while preparing the call),
leaves the other ranks of the process set waiting for this rank's tensor for
ever: they made the call correctly. `announces_refusal` wraps an entry point so that
such an error is announced through hvd_refuse (the operation then fails on every other
rank with MismatchError naming this rank and the error's text) and raised here as
before. Errors of libhvd's own (HvdError) were announced, or are not refusals; an error
is announced once, by the innermost entry point it passes; and an error raised after a
wrapped entry point inside the call returned (the operation was queued: a blocking
form's wait) is no refusal: the peers' operation ran.
"""
import ctypes
import functools
import inspect
import threading

from . import _capi
from ._capi import lib
from .basics import process_set_id
from .errors import HvdError

_MAX_REASON_BYTES = 4096
# .queued: a wrapped entry point returned normally since the innermost running one began.
_state = threading.local()


def announces_refusal(op, group_argument=None):
    """Decorates an entry point of collective `op` (hvd_refuse's names: "allreduce",
    "grouped_allgather", ...); group_argument names the parameter holding a group's
    members. The entry point's parameters `name` and `process_set` name the call."""
    def wrap(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args, **kwargs):
            outer_queued = getattr(_state, "queued", False)
            _state.queued = False
            try:
                result = function(*args, **kwargs)
                _state.queued = True
                return result
            except HvdError:
                raise
            except Exception as error:  # noqa: BLE001 - announced, then re-raised
                if not _state.queued and not getattr(error, "_hvd_announced", False):
                    _announce(op, group_argument, signature, args, kwargs, error)
                raise
            finally:
                _state.queued = outer_queued or _state.queued
        return call
    return wrap


def _announce(op, group_argument, signature, args, kwargs, error):
    try:
        error._hvd_announced = True
    except AttributeError:
        return  # cannot be marked: announcing it again up the stack would be wrong
    if not lib.hvd_is_initialized():
        return
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return  # arguments that do not fit the function name no call
    bound.apply_defaults()
    arguments = bound.arguments
    members = 0
    if group_argument is not None:
        try:
            members = len(arguments.get(group_argument))
        except TypeError:
            members = 0
    refuse(op, arguments.get("name"), arguments.get("process_set"), error, members)


def refuse(op, name, process_set, error, members=0):
    """Announces that this rank will not make the call `op` of tensor `name` (members:
    a group's size, 0 for a lone tensor), giving `error` as the reason: the peers' call
    fails with MismatchError instead of waiting for this rank."""
    if not lib.hvd_is_initialized():
        return
    try:
        options = _capi.new_options(process_set_id=process_set_id(process_set))
    except TypeError:
        return  # no process set: no peers to tell
    encoded = _refused_name(name)
    reason = str(error).encode("utf-8", "replace")[:_MAX_REASON_BYTES] or type(error).__name__.encode()
    # The call this rank did not make is still refused if hvd_refuse fails (a process
    # set this rank is not in): nothing more can be done, and the caller's error stands.
    lib.hvd_refuse(op.encode(), encoded, members, ctypes.byref(options), reason)


def _refused_name(name):
    """The bytes the refusal of `name` is announced under, whatever the name: a name
    refused for not being UTF-8 still names the call. libhvd announces it with U+FFFD
    for each byte that is not UTF-8 (a str's lone surrogate from os.fsdecode is the
    byte it stands for); a name with NUL ends there, as the C string does."""
    if name is None or isinstance(name, bytes):
        return name
    try:
        text = name if isinstance(name, str) else str(name)
    except Exception:  # noqa: BLE001 - an object whose str() fails names no call
        return None
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
