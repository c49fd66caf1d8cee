"""The asynchronous collectives over torch tensors (and the in-place blocking ones),
with Horovod's torch signatures. mpi_ops.py builds the differentiable blocking calls on
these.

CPU tensors are reduced in their own memory. CUDA tensors pass their device ordinal and
the current CUDA stream of that device, so libhvd orders its work after whatever
produced the tensor. Non-contiguous tensors are copied to a contiguous buffer first
(and copied back for in-place calls); so are tensors with torch's negative or
conjugate bit (`x.conj().imag`, `x._neg_view()`), whose memory holds the negated
values: libhvd reads and writes memory, so they are resolved first.

A group (grouped_*) of several dtypes is sent as one grouped operation per dtype,
enqueued together, under one handle (_GroupHandle).
"""
import torch

from .. import _capi, _raw
from .._capi import lib
from ..basics import Average, ProcessSet, Sum, process_set_id, reduce_op
from .._refusal import announces_refusal
from ..errors import INVALID_ARGUMENT, DtypeError, InvalidArgumentError, not_a_handle
from .compression import Compression

_DTYPES = {
    torch.uint8: 0, torch.int8: 1, torch.int16: 3, torch.int32: 4, torch.int64: 5,
    torch.float16: 6, torch.bfloat16: 7, torch.float32: 8, torch.float64: 9, torch.bool: 10,
}


def _dtype_code(tensor):
    try:
        return _DTYPES[tensor.dtype]
    except KeyError:
        raise DtypeError(f"libhvd has no element type for {tensor.dtype}; supported: "
                         + ", ".join(str(d) for d in _DTYPES)) from None


def _is_view_bit(tensor):
    """True when the tensor's memory is not its value: torch's negative bit (the
    imaginary part of a conjugate view, _neg_view()) or conjugate bit."""
    return tensor.is_neg() or tensor.is_conj()


def _plain(tensor):
    """The detached tensor as contiguous memory that holds its values (a copy where
    it has the negative or conjugate bit, or is not contiguous)."""
    src = tensor.detach()
    if _is_view_bit(src):
        src = src.resolve_neg().resolve_conj()
    return src.contiguous()


def _check_tensor(tensor, function):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{function}: expected a torch.Tensor, got {type(tensor).__name__}")
    if tensor.is_sparse:
        raise TypeError(f"{function}: sparse tensors are reduced with sparse_allreduce_async(); "
                        "or pass tensor.to_dense()")
    if not (tensor.is_cpu or tensor.is_cuda):  # cheaper than tensor.device per call
        raise TypeError(f"{function}: tensors on {tensor.device.type} are not supported")


_HOST_DEFAULTS = _raw.CallOptions()


def _options(tensor, process_set, prescale=1.0, postscale=1.0):
    if (process_set is None and prescale == 1.0 and postscale == 1.0
            and not tensor.is_cuda):
        return _HOST_DEFAULTS  # the common case, built once
    device, stream = _capi.HVD_DEVICE_CPU, None
    if tensor.is_cuda:
        device = tensor.device.index if tensor.device.index is not None \
            else torch.cuda.current_device()
        stream = torch.cuda.current_stream(device).cuda_stream or None
    return _raw.CallOptions(_raw.scale_factor(prescale, "prescale_factor"),
                            _raw.scale_factor(postscale, "postscale_factor"), device,
                            process_set_id(process_set), stream)


def _resolve_op(average, op, function):
    if average is not None:
        if op is not None:
            raise ValueError(f"{function}: op and average cannot both be given")
        return Average if average else Sum
    return Average if op is None else reduce_op(op, function)


def _output_factory(nbytes, device):
    where = "cpu" if device < 0 else f"cuda:{device}"
    buf = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=where)
    return buf, buf.data_ptr()


def _rows(owner, dtype, device, dim0, row_shape):
    shape = (dim0,) + tuple(row_shape)
    count = 1
    for d in shape:
        count *= d
    if owner is None or count == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    itemsize = torch.empty((), dtype=dtype).element_size()
    return owner[:count * itemsize].view(dtype).reshape(shape)


def _contiguous_inplace(tensor):
    """A contiguous buffer holding the tensor's values for an in-place op, and the
    callable that completes it (copying the result back where the buffer is a copy:
    copy_ into a tensor with the negative bit stores the negated values, so it then
    reads as the result)."""
    if tensor.is_contiguous() and not _is_view_bit(tensor):
        return tensor, lambda: tensor
    buf = _plain(tensor)

    def copy_back():
        tensor.copy_(buf)
        return tensor
    return buf, copy_back


def _contiguous_group(members):
    """_contiguous_inplace for a group: the buffers, and one callable that copies the
    results back where a buffer is a copy and returns the members."""
    bufs, copied = [], []
    for t in members:
        if t.is_contiguous() and not (t.is_neg() or t.is_conj()):
            bufs.append(t)
        else:
            buf = _plain(t)
            bufs.append(buf)
            copied.append((t, buf))
    members = list(members)
    if not copied:
        return bufs, lambda: list(members)

    def finish():
        for t, buf in copied:
            t.copy_(buf)
        return list(members)
    return bufs, finish


# --- allreduce ----------------------------------------------------------------------

@announces_refusal("allreduce")
def _allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=None):
    """Starts an in-place allreduce of `tensor`; synchronize(handle) returns it."""
    _check_tensor(tensor, "allreduce_async_")
    op = Average if average is None and op is None else \
        _resolve_op(average, op, "allreduce_async_")
    buf, finish = _contiguous_inplace(tensor)
    opts = _options(buf, process_set, prescale_factor, postscale_factor)
    ptr = buf.data_ptr()
    if buf is tensor:
        return _raw.allreduce(ptr, ptr, buf.numel(), _dtype_code(buf), op, name, opts, tensor,
                              None, shape=buf.shape, result=tensor)
    return _raw.allreduce(ptr, ptr, buf.numel(), _dtype_code(buf), op, name, opts,
                          (tensor, buf), finish, shape=buf.shape)


# An optimizer calls allreduce_async_ once per gradient: where hvd._fastpath was built,
# the common case (a dense, contiguous host tensor, ...) is read and enqueued in one C
# call (hvd/_torch_calls.c), which hands every other case to the function above.
allreduce_async_ = _allreduce_async_
if _raw.fast is not None:
    _raw.fast.bind_torch(_allreduce_async_, _DTYPES, _raw, ProcessSet)
    allreduce_async_ = _raw.fast.allreduce_async_


@announces_refusal("allreduce")
def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=None):
    """Starts an allreduce into a new tensor; synchronize(handle) returns it."""
    _check_tensor(tensor, "allreduce_async")
    op = _resolve_op(average, op, "allreduce_async")
    src = _plain(tensor)
    out = torch.empty_like(src, memory_format=torch.contiguous_format)
    opts = _options(src, process_set, prescale_factor, postscale_factor)
    return _raw.allreduce(src.data_ptr(), out.data_ptr(), src.numel(), _dtype_code(src), op,
                          name, opts, (src, out), lambda: out, shape=src.shape)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=None):
    """In-place allreduce; returns `tensor`."""
    return allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor,
                            process_set).wait()


# --- grouped allreduce --------------------------------------------------------------

def _group_list(tensors, function):
    """The members of a group as a list; a lone tensor is a mistake, not a group of rows."""
    if isinstance(tensors, torch.Tensor) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"{function}: expected a list of tensors, got {type(tensors).__name__}")
    return list(tensors)


def _group_parts(tensors, function):
    """Checks a group and splits it by dtype: [(dtype code, member indices)], in the
    order each dtype first appears (the same on every rank that passes the same list)."""
    if not tensors:
        raise ValueError(f"{function}: the group is empty")
    # One pass (a step's gradients are a group of hundreds). One hvd_op_options_t (one
    # device and stream) describes every member: get_device() is -1 on the CPU, the
    # ordinal on a GPU, and cheaper than building torch.device objects.
    parts = {}
    first_device = None
    mixed = False
    for i, t in enumerate(tensors):
        _check_tensor(t, function)
        parts.setdefault(_dtype_code(t), []).append(i)
        where = t.get_device()
        if first_device is None:
            first_device = where
        elif where != first_device:
            mixed = True
    if mixed:
        devices = {t.device for t in tensors}
        # A ValueError that is also the RuntimeError Horovod raises here.
        raise InvalidArgumentError(
            INVALID_ARGUMENT,
            f"{function}: all tensors of a group must be on one device, got "
            + ", ".join(sorted(str(d) for d in devices)) + "; move them to one device first")
    return list(parts.items())


def _wait_all(handles):
    """Every handle's result, in order. Each is waited also after one failed, so that
    none is left in flight (its name pending); the first failure is then raised."""
    results, error = [], None
    for h in handles:
        try:
            results.append(h.wait())
        except BaseException as exc:  # noqa: B902 - re-raised below
            error = error or exc
    if error is not None:
        raise error
    return results


class _GroupHandle:
    """The handle of a group of several dtypes. libhvd's grouped calls take one dtype,
    so such a group is one grouped operation per dtype, enqueued one after the other
    (negotiated in the same cycle when they arrive in time) under derived names
    ("<name>.<dtype>"); wait() waits for every one and returns the results in the
    order of the members."""

    __slots__ = ("_handles", "_parts", "_count")

    def __init__(self, handles, parts, count):
        self._handles, self._parts, self._count = handles, parts, count

    def poll(self):
        return all(h.poll() for h in self._handles)

    def wait(self):
        results = _wait_all(self._handles)
        out = [None] * self._count
        for (_, members), result in zip(self._parts, results):
            for i, r in zip(members, result):
                out[i] = r
        return out


_DTYPE_NAMES = {code: str(dtype).replace("torch.", "") for dtype, code in _DTYPES.items()}


def _start_group(tensors, name, function, start, check=None):
    """start(members, dtype code, name) enqueues one single-dtype group and returns
    its handle; a group of several dtypes gets one per dtype under one _GroupHandle.
    check(member) raises for an invalid member before anything is enqueued."""
    tensors = list(tensors)
    parts = _group_parts(tensors, function)
    for t in tensors if check else ():
        check(t)
    if len(parts) == 1:
        return start(tensors, parts[0][0], name)
    handles = [start([tensors[i] for i in members], code,
                     None if name is None else f"{name}.{_DTYPE_NAMES[code]}")
               for code, members in parts]
    return _GroupHandle(handles, parts, len(tensors))


@announces_refusal("grouped_allreduce", "tensors")
def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=None):
    """Starts an in-place allreduce of a list of tensors (of one or several dtypes);
    synchronize(handle) returns the list."""
    op = _resolve_op(average, op, "grouped_allreduce_async_")

    def start(members, code, part_name):
        bufs, finish = _contiguous_group(members)
        opts = _options(bufs[0], process_set, prescale_factor, postscale_factor)
        ptrs = [b.data_ptr() for b in bufs]
        return _raw.grouped_allreduce(ptrs, ptrs, [b.numel() for b in bufs], code, op,
                                      part_name, opts, (members, bufs), finish,
                                      members=bufs)
    return _start_group(tensors, name, "grouped_allreduce_async_", start)


@announces_refusal("grouped_allreduce", "tensors")
def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=None):
    """Starts an allreduce of a list of tensors (of one or several dtypes) into new
    tensors; synchronize(handle) returns their list."""
    op = _resolve_op(average, op, "grouped_allreduce_async")

    def start(members, code, part_name):
        srcs = [_plain(t) for t in members]
        outs = [torch.empty_like(s, memory_format=torch.contiguous_format) for s in srcs]
        opts = _options(srcs[0], process_set, prescale_factor, postscale_factor)
        return _raw.grouped_allreduce([s.data_ptr() for s in srcs],
                                      [o.data_ptr() for o in outs], [s.numel() for s in srcs],
                                      code, op, part_name, opts, (srcs, outs), lambda: outs,
                                      members=srcs)
    return _start_group(tensors, name, "grouped_allreduce_async", start)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=None):
    return grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                    postscale_factor, process_set).wait()


# --- broadcast ----------------------------------------------------------------------

@announces_refusal("broadcast")
def broadcast_async_(tensor, root_rank, name=None, process_set=None):
    _check_tensor(tensor, "broadcast_async_")
    buf, finish = _contiguous_inplace(tensor)
    opts = _options(buf, process_set)
    return _raw.broadcast(buf.data_ptr(), buf.numel(), _dtype_code(buf), root_rank, name, opts,
                          (tensor, buf), finish, shape=buf.shape)


@announces_refusal("broadcast")
def broadcast_async(tensor, root_rank, name=None, process_set=None):
    _check_tensor(tensor, "broadcast_async")
    # clone() resolves the negative and conjugate bits.
    copy = tensor.detach().clone(memory_format=torch.contiguous_format)
    return broadcast_async_(copy, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=None):
    """Overwrites `tensor` with root_rank's; returns it."""
    return broadcast_async_(tensor, root_rank, name, process_set).wait()


# --- allgather ----------------------------------------------------------------------

def _set_size(process_set):
    return lib.hvd_process_set_size(process_set_id(process_set))


@announces_refusal("allgather")
def allgather_async(tensor, name=None, process_set=None):
    _check_tensor(tensor, "allgather_async")
    src = _plain(tensor)
    if src.dim() == 0:
        src = src.reshape(1)
    opts = _options(src, process_set)
    row_shape, dtype, device = src.shape[1:], src.dtype, src.device
    return _raw.allgather(src.data_ptr(), list(src.shape), _dtype_code(src), name, opts,
                          _output_factory, _set_size(process_set), src,
                          lambda owner, dim0, _: _rows(owner, dtype, device, dim0, row_shape))


@announces_refusal("grouped_allgather", "tensors")
def grouped_allgather_async(tensors, name=None, process_set=None):
    """synchronize(handle) returns the list of gathered tensors (the members may have
    several dtypes)."""
    tensors = _group_list(tensors, "grouped_allgather_async")

    def start(members, code, part_name):
        srcs = [_plain(t) for t in members]
        srcs = [s.reshape(1) if s.dim() == 0 else s for s in srcs]
        opts = _options(srcs[0], process_set)
        layouts = [(s.dtype, s.device, s.shape[1:]) for s in srcs]

        def result(owners, dim0s, _):
            return [_rows(owner, dtype, device, dim0, row_shape)
                    for owner, dim0, (dtype, device, row_shape) in zip(owners, dim0s, layouts)]
        return _raw.grouped_allgather([s.data_ptr() for s in srcs],
                                      [list(s.shape) for s in srcs], code, part_name, opts,
                                      _output_factory, _set_size(process_set), srcs, result)
    return _start_group(tensors, name, "grouped_allgather_async", start)


# --- alltoall -----------------------------------------------------------------------

@announces_refusal("alltoall")
def alltoall_async(tensor, splits=None, name=None, process_set=None):
    """synchronize(handle) returns (output, received_splits)."""
    _check_tensor(tensor, "alltoall_async")
    src = _plain(tensor)
    if src.dim() == 0:
        raise ValueError("alltoall: the tensor needs at least one dimension")
    split_list = None
    splits_device = torch.device("cpu")
    if splits is not None:
        splits = torch.as_tensor(splits)
        splits_device = splits.device  # received_splits come back where splits were
        if splits.is_floating_point() or splits.is_complex() or splits.dtype == torch.bool:
            raise ValueError(f"alltoall: splits must hold integers (torch.int32), not "
                             f"{splits.dtype}")
        split_list = [int(s) for s in splits.reshape(-1).tolist()]
    opts = _options(src, process_set)
    row_shape, dtype, device = src.shape[1:], src.dtype, src.device
    return _raw.alltoall(src.data_ptr(), list(src.shape), _dtype_code(src), split_list, name,
                         opts, _output_factory, _set_size(process_set), src,
                         lambda owner, dim0, rs: (_rows(owner, dtype, device, dim0, row_shape),
                                                  torch.tensor(rs, dtype=torch.int32,
                                                               device=splits_device)))


# --- reducescatter ------------------------------------------------------------------

def _scatter_dims(tensor, function):
    if tensor.dim() == 0:
        raise ValueError(f"{function}: the tensor needs at least one dimension")


def _scatter_input(tensor, function):
    _check_tensor(tensor, function)
    _scatter_dims(tensor, function)
    return _plain(tensor)


def _scatter_output(src, process_set):
    """This rank's block of a reducescatter of src (empty outside the process set)."""
    set_id = process_set_id(process_set)
    set_rank, set_size = lib.hvd_process_set_rank(set_id), lib.hvd_process_set_size(set_id)
    rows = lib.hvd_reducescatter_rows(src.shape[0], set_rank, set_size) if set_rank >= 0 else 0
    return torch.empty((max(rows, 0),) + tuple(src.shape[1:]), dtype=src.dtype,
                       device=src.device)


@announces_refusal("reducescatter")
def reducescatter_async(tensor, name=None, op=Average, process_set=None, prescale_factor=1.0,
                        postscale_factor=1.0):
    src = _scatter_input(tensor, "reducescatter_async")
    out = _scatter_output(src, process_set)
    opts = _options(src, process_set, prescale_factor, postscale_factor)
    return _raw.reducescatter(src.data_ptr(), out.data_ptr(), list(src.shape), _dtype_code(src),
                              _resolve_op(None, op, "reducescatter"), name, opts, (src, out),
                              lambda: out)


@announces_refusal("grouped_reducescatter", "tensors")
def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=None,
                                prescale_factor=1.0, postscale_factor=1.0):
    """synchronize(handle) returns the list of this rank's blocks (the members may have
    several dtypes)."""
    tensors = _group_list(tensors, "grouped_reducescatter_async")
    op = _resolve_op(None, op, "grouped_reducescatter")

    def start(members, code, part_name):
        srcs = [_scatter_input(t, "grouped_reducescatter_async") for t in members]
        outs = [_scatter_output(s, process_set) for s in srcs]
        opts = _options(srcs[0], process_set, prescale_factor, postscale_factor)
        return _raw.grouped_reducescatter([s.data_ptr() for s in srcs],
                                          [o.data_ptr() for o in outs],
                                          [list(s.shape) for s in srcs], code, op, part_name,
                                          opts, (srcs, outs), lambda: outs)
    return _start_group(tensors, name, "grouped_reducescatter_async", start,
                        check=lambda t: _scatter_dims(t, "grouped_reducescatter_async"))


# --- handles and synchronization ----------------------------------------------------

def poll(handle):
    """True when the operation behind `handle` has completed."""
    try:
        method = handle.poll
    except AttributeError:
        raise not_a_handle(handle, "poll") from None
    return method()


def synchronize(handle):
    """Waits for `handle` and returns the operation's output."""
    try:
        method = handle.wait
    except AttributeError:
        raise not_a_handle(handle, "synchronize") from None
    return method()


if _raw.fast is not None:
    synchronize = _raw.fast.synchronize  # the same, without a Python frame per gradient


def join(device=-1):
    """This rank is out of data: it contributes zeros to the others' allreduces until
    every rank has joined. Returns the last rank to join."""
    from .. import basics
    if isinstance(device, torch.device):
        device = -1 if device.type == "cpu" else (device.index or 0)
    return basics.join(device)
