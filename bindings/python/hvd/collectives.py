"""Collectives over numpy arrays.

Zero-copy: libhvd reads and writes the arrays' own memory (an input that is not
C-contiguous is copied once first). Every output array the operations allocate is
64-byte aligned (hvd/_aligned.py), so that a framework can adopt it without a copy. Each operation exists as a blocking call, an
`_async` call returning a Handle (complete it with synchronize(handle) or
handle.wait()), and, where the output has the input's shape, an in-place `_` form.
Arrays must not be modified or freed while their operation is in flight; the handle
keeps them referenced.

`name` identifies the operation across ranks (ranks may issue names in any order);
None auto-names it by call order, so unnamed calls must be made in the same order on
every rank. `dtype=hvd.bfloat16` treats 16-bit raw data as bfloat16.
"""
import numpy as np

from . import _capi, _raw, dtypes
from ._aligned import aligned_bytes, aligned_empty, aligned_empty_like
from .basics import Average, process_set_id, reduce_op
from ._capi import lib
from ._refusal import announces_refusal
from .errors import not_a_handle

__all__ = [
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_",
    "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "allgather", "allgather_async", "grouped_allgather", "grouped_allgather_async",
    "alltoall", "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_reducescatter", "grouped_reducescatter_async", "poll", "synchronize",
]


def _input(array, function="hvd"):
    """A C-contiguous numpy array of `array` (copied only when needed)."""
    if array is None:
        raise TypeError(f"{function}: expected a numpy array (or a list or number that "
                        "numpy turns into one), got None")
    a = np.ascontiguousarray(array)
    if a.dtype == np.dtype(object):
        raise TypeError(f"{function}: expected a numpy array of numbers, got "
                        f"{type(array).__name__} that numpy can only hold as Python objects")
    return a


def _inplace(array, function):
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{function}: in-place operations need a numpy.ndarray, "
                        f"not {type(array).__name__}")
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise ValueError(f"{function}: in-place operations need a C-contiguous, writeable "
                         "array (use the out-of-place form, or np.ascontiguousarray)")
    return array


def _options(process_set, prescale=1.0, postscale=1.0):
    return _raw.CallOptions(_raw.scale_factor(prescale, "prescale_factor"),
                            _raw.scale_factor(postscale, "postscale_factor"),
                            process_set_id=process_set_id(process_set))


def _set_size(process_set):
    return lib.hvd_process_set_size(process_set_id(process_set))


def _host_factory(nbytes, device):
    if device != _capi.HVD_DEVICE_CPU:
        raise ValueError("numpy outputs live in host memory")
    buf = aligned_bytes(nbytes)
    return buf, buf.ctypes.data


def _rows_view(owner, dtype, dim0, row_shape):
    shape = (dim0,) + tuple(row_shape)
    count = int(np.prod(shape, dtype=np.int64))
    if owner is None or count == 0:
        return aligned_empty(shape, dtype)
    return owner[:count * dtype.itemsize].view(dtype).reshape(shape)


# --- allreduce ----------------------------------------------------------------------

@announces_refusal("allreduce")
def allreduce_async(array, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=None, out=None, dtype=None):
    """Starts an allreduce of `array` into a new array (or `out`); returns a Handle."""
    src = _input(array, "allreduce")
    code = dtypes.from_numpy(src.dtype, dtype)
    if out is None:
        out = aligned_empty_like(src)
    else:
        out = _inplace(out, "allreduce")
        if out.shape != src.shape or out.dtype != src.dtype:
            raise ValueError(f"allreduce: out has shape {out.shape} and dtype {out.dtype}, "
                             f"expected {src.shape} and {src.dtype}")
    opts = _options(process_set, prescale_factor, postscale_factor)
    shape = np.shape(array)

    def result():
        return out if out.shape == shape else out.reshape(shape)
    return _raw.allreduce(src.ctypes.data, out.ctypes.data, src.size, code,
                          reduce_op(op, "allreduce"), name, opts, (src, out), result,
                          shape=src.shape)


def allreduce(array, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=None, out=None, dtype=None):
    """Reduces `array` over the ranks (op: Average, Sum, Min, Max, Product, or Adasum for
    float dtypes on a process set of 1, 2, 4... ranks) and returns the result in a new
    array (or `out`)."""
    return allreduce_async(array, op, name, prescale_factor, postscale_factor, process_set,
                           out, dtype).wait()


@announces_refusal("allreduce")
def allreduce_async_(array, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=None, dtype=None):
    a = _inplace(array, "allreduce_")
    code = dtypes.from_numpy(a.dtype, dtype)
    opts = _options(process_set, prescale_factor, postscale_factor)
    return _raw.allreduce(a.ctypes.data, a.ctypes.data, a.size, code,
                          reduce_op(op, "allreduce_"), name, opts, a, lambda: a, shape=a.shape)


def allreduce_(array, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=None, dtype=None):
    """In-place allreduce; returns `array`."""
    return allreduce_async_(array, op, name, prescale_factor, postscale_factor, process_set,
                            dtype).wait()


# --- grouped allreduce --------------------------------------------------------------

def _group_list(arrays, function):
    """The members of a group as a list; a lone array is a mistake, not a group of rows."""
    if isinstance(arrays, np.ndarray) or not hasattr(arrays, "__iter__"):
        raise TypeError(f"{function}: expected a list of arrays, got {type(arrays).__name__}")
    return list(arrays)


def _group_dtype(arrays, dtype, function):
    if not arrays:
        raise ValueError(f"{function}: the group is empty")
    codes = {dtypes.from_numpy(a.dtype, dtype) for a in arrays}
    if len(codes) != 1:
        raise TypeError(f"{function}: all arrays of a group must have one dtype, got "
                        f"{sorted(dtypes.NAMES[c] for c in codes)}")
    return codes.pop()


@announces_refusal("grouped_allreduce", "arrays")
def grouped_allreduce_async(arrays, op=Average, name=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=None, dtype=None, outs=None):
    """Allreduces a list of arrays of one dtype as one unit; the Handle's result is a
    list of new arrays (or of `outs`, one per array, of its shape and dtype)."""
    shapes = [np.shape(a) for a in arrays]
    srcs = [_input(a, "grouped_allreduce") for a in arrays]
    code = _group_dtype(srcs, dtype, "grouped_allreduce")
    if outs is None:
        outs = [aligned_empty_like(s) for s in srcs]
    else:
        outs = [_inplace(o, "grouped_allreduce") for o in outs]
        for shape, s, o in zip(shapes, srcs, outs):
            if o.size != s.size or o.dtype != s.dtype:
                raise ValueError(f"grouped_allreduce: an out array has shape {o.shape} and "
                                 f"dtype {o.dtype}, expected {shape} and {s.dtype}")
    opts = _options(process_set, prescale_factor, postscale_factor)
    return _raw.grouped_allreduce([s.ctypes.data for s in srcs], [o.ctypes.data for o in outs],
                                  [s.size for s in srcs], code,
                                  reduce_op(op, "grouped_allreduce"), name, opts,
                                  (srcs, outs),
                                  lambda: [o.reshape(s) for o, s in zip(outs, shapes)],
                                  members=srcs)


def grouped_allreduce(arrays, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=None, dtype=None):
    return grouped_allreduce_async(arrays, op, name, prescale_factor, postscale_factor,
                                   process_set, dtype).wait()


@announces_refusal("grouped_allreduce", "arrays")
def grouped_allreduce_async_(arrays, op=Average, name=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=None, dtype=None):
    arrays = [_inplace(a, "grouped_allreduce_") for a in arrays]
    code = _group_dtype(arrays, dtype, "grouped_allreduce_")
    opts = _options(process_set, prescale_factor, postscale_factor)
    ptrs = [a.ctypes.data for a in arrays]
    return _raw.grouped_allreduce(ptrs, ptrs, [a.size for a in arrays], code,
                                  reduce_op(op, "grouped_allreduce_"), name,
                                  opts, arrays, lambda: arrays,
                                  members=arrays)


def grouped_allreduce_(arrays, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=None, dtype=None):
    return grouped_allreduce_async_(arrays, op, name, prescale_factor, postscale_factor,
                                    process_set, dtype).wait()


# --- broadcast ----------------------------------------------------------------------

@announces_refusal("broadcast")
def broadcast_async_(array, root_rank, name=None, process_set=None, dtype=None):
    a = _inplace(array, "broadcast_")
    code = dtypes.from_numpy(a.dtype, dtype)
    opts = _options(process_set)
    return _raw.broadcast(a.ctypes.data, a.size, code, root_rank, name, opts, a, lambda: a,
                          shape=a.shape)


def broadcast_(array, root_rank, name=None, process_set=None, dtype=None):
    """Overwrites `array` with root_rank's (a global rank, as in Horovod); returns it."""
    return broadcast_async_(array, root_rank, name, process_set, dtype).wait()


@announces_refusal("broadcast")
def broadcast_async(array, root_rank, name=None, process_set=None, dtype=None):
    src = _input(array, "broadcast")
    copy = aligned_empty_like(src)
    np.copyto(copy, src)
    return broadcast_async_(copy, root_rank, name, process_set, dtype)


def broadcast(array, root_rank, name=None, process_set=None, dtype=None):
    """Returns a new array holding root_rank's `array`."""
    return broadcast_async(array, root_rank, name, process_set, dtype).wait()


# --- allgather ----------------------------------------------------------------------

@announces_refusal("allgather")
def allgather_async(array, name=None, process_set=None, dtype=None):
    """Starts gathering every rank's rows (first dimension may differ per rank)."""
    src = _input(array, "allgather")
    if src.ndim == 0:
        src = src.reshape(1)
    code = dtypes.from_numpy(src.dtype, dtype)
    opts = _options(process_set)
    row_shape, np_dtype = src.shape[1:], src.dtype
    return _raw.allgather(src.ctypes.data, src.shape, code, name, opts, _host_factory,
                          _set_size(process_set), src,
                          lambda owner, dim0, _: _rows_view(owner, np_dtype, dim0, row_shape))


def allgather(array, name=None, process_set=None, dtype=None):
    """Concatenation of every rank's array along the first dimension, in rank order."""
    return allgather_async(array, name, process_set, dtype).wait()


@announces_refusal("grouped_allgather", "arrays")
def grouped_allgather_async(arrays, name=None, process_set=None, dtype=None):
    """Starts allgathers of a list of arrays of one dtype as one unit; the Handle's
    result is the list of gathered arrays. Member i is named "<name>.<i>"."""
    srcs = [_input(a, "grouped_allgather") for a in _group_list(arrays, "grouped_allgather")]
    srcs = [s.reshape(1) if s.ndim == 0 else s for s in srcs]
    code = _group_dtype(srcs, dtype, "grouped_allgather")
    opts = _options(process_set)
    layouts = [(s.dtype, s.shape[1:]) for s in srcs]

    def result(owners, dim0s, _):
        return [_rows_view(owner, np_dtype, dim0, row_shape)
                for owner, dim0, (np_dtype, row_shape) in zip(owners, dim0s, layouts)]
    return _raw.grouped_allgather([s.ctypes.data for s in srcs], [s.shape for s in srcs], code,
                                  name, opts, _host_factory, _set_size(process_set), srcs,
                                  result)


def grouped_allgather(arrays, name=None, process_set=None, dtype=None):
    """Allgathers each array of the list (first dimensions may differ per rank and per
    array) as one unit; returns the list of concatenations."""
    return grouped_allgather_async(arrays, name, process_set, dtype).wait()


# --- alltoall -----------------------------------------------------------------------

@announces_refusal("alltoall")
def alltoall_async(array, splits=None, name=None, process_set=None, dtype=None):
    """Starts an alltoall; the Handle's result is (output, received_splits)."""
    src = _input(array, "alltoall")
    if src.ndim == 0:
        raise ValueError("alltoall: the array needs at least one dimension")
    code = dtypes.from_numpy(src.dtype, dtype)
    opts = _options(process_set)
    if splits is not None:
        splits = [int(s) for s in np.asarray(splits).reshape(-1)]
    row_shape, np_dtype = src.shape[1:], src.dtype
    return _raw.alltoall(src.ctypes.data, src.shape, code, splits, name, opts, _host_factory,
                         _set_size(process_set), src,
                         lambda owner, dim0, rs: (_rows_view(owner, np_dtype, dim0, row_shape),
                                                  _aligned_splits(rs)))


def _aligned_splits(received_splits):
    out = aligned_empty(len(received_splits), np.int64)
    out[:] = received_splits
    return out


def alltoall(array, splits=None, name=None, process_set=None, dtype=None):
    """Sends splits[r] rows (even split when None) to rank r; returns (output,
    received_splits)."""
    return alltoall_async(array, splits, name, process_set, dtype).wait()


# --- reducescatter ------------------------------------------------------------------

def _scatter_input(array, function):
    # Checked before _input: np.ascontiguousarray turns a scalar into one row.
    if np.ndim(array) == 0:
        raise ValueError(f"{function}: the array needs at least one dimension")
    return _input(array, function)


def _scatter_output(src, process_set):
    """This rank's block of a reducescatter of src (empty outside the process set)."""
    set_id = process_set_id(process_set)
    set_rank = lib.hvd_process_set_rank(set_id)
    set_size = lib.hvd_process_set_size(set_id)
    rows = lib.hvd_reducescatter_rows(src.shape[0], set_rank, set_size) if set_rank >= 0 else 0
    return aligned_empty((max(rows, 0),) + src.shape[1:], src.dtype)


@announces_refusal("reducescatter")
def reducescatter_async(array, op=Average, name=None, process_set=None, prescale_factor=1.0,
                        postscale_factor=1.0, dtype=None):
    src = _scatter_input(array, "reducescatter")
    code = dtypes.from_numpy(src.dtype, dtype)
    out = _scatter_output(src, process_set)
    opts = _options(process_set, prescale_factor, postscale_factor)
    return _raw.reducescatter(src.ctypes.data, out.ctypes.data, src.shape, code,
                              reduce_op(op, "reducescatter"), name,
                              opts, (src, out), lambda: out)


def reducescatter(array, op=Average, name=None, process_set=None, prescale_factor=1.0,
                  postscale_factor=1.0, dtype=None):
    """Reduces across ranks (Sum or Average) and returns this rank's block of rows."""
    return reducescatter_async(array, op, name, process_set, prescale_factor,
                               postscale_factor, dtype).wait()


@announces_refusal("grouped_reducescatter", "arrays")
def grouped_reducescatter_async(arrays, op=Average, name=None, process_set=None,
                                prescale_factor=1.0, postscale_factor=1.0, dtype=None):
    """Starts reducescatters of a list of arrays of one dtype as one unit; the Handle's
    result is the list of this rank's blocks. Member i is named "<name>.<i>"."""
    srcs = [_scatter_input(a, "grouped_reducescatter")
            for a in _group_list(arrays, "grouped_reducescatter")]
    code = _group_dtype(srcs, dtype, "grouped_reducescatter")
    outs = [_scatter_output(s, process_set) for s in srcs]
    opts = _options(process_set, prescale_factor, postscale_factor)
    return _raw.grouped_reducescatter([s.ctypes.data for s in srcs],
                                      [o.ctypes.data for o in outs], [s.shape for s in srcs],
                                      code, reduce_op(op, "grouped_reducescatter"), name,
                                      opts, (srcs, outs), lambda: outs)


def grouped_reducescatter(arrays, op=Average, name=None, process_set=None, prescale_factor=1.0,
                          postscale_factor=1.0, dtype=None):
    """Reducescatters each array of the list (Sum or Average) as one unit; returns this
    rank's block of rows of each."""
    return grouped_reducescatter_async(arrays, op, name, process_set, prescale_factor,
                                       postscale_factor, dtype).wait()


# --- handles ------------------------------------------------------------------------

def poll(handle):
    """True when the operation behind `handle` has completed."""
    try:
        method = handle.poll
    except AttributeError:
        raise not_a_handle(handle, "poll") from None
    return method()


def synchronize(handle):
    """Waits for `handle` and returns the operation's result."""
    try:
        method = handle.wait
    except AttributeError:
        raise not_a_handle(handle, "synchronize") from None
    return method()

