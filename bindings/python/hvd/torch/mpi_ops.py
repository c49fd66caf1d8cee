"""Horovod's torch collectives: the asynchronous calls of async_ops.py, and blocking
calls that are differentiable as Horovod defines them (horovod/torch/mpi_ops.py):

- allreduce: the gradient is the same allreduce of the incoming gradient;
- allgather: the average over the set of the incoming gradient, this rank's rows;
- broadcast: the average over the set of the incoming gradient on the root rank, zero
  elsewhere;
- reducescatter: the allgather of the incoming gradient (times the set size for Sum,
  times the scale factors);
- alltoall: the reverse alltoall, sending back the rows received from each rank;
- the grouped forms: the same, member by member, as one grouped operation.

sparse_allreduce_async reduces a sparse tensor by allgathering its indices and values.
"""
import torch

from .._capi import lib
from .._refusal import announces_refusal, refuse
from ..basics import Average, Sum, process_set_id
from .async_ops import (_check_tensor, _group_list, _resolve_op, _set_size, _wait_all,
                        allgather_async, allreduce_async, alltoall_async, broadcast_async,
                        grouped_allgather_async, grouped_allreduce_async,
                        grouped_reducescatter_async, reducescatter_async, synchronize)
from .compression import Compression

from .async_ops import (allreduce_, allreduce_async_, broadcast_,  # noqa: F401 - API
                        broadcast_async_, grouped_allreduce_, grouped_allreduce_async_, join,
                        poll)

__all__ = [
    "allgather", "allgather_async", "allreduce", "allreduce_", "allreduce_async",
    "allreduce_async_", "alltoall", "alltoall_async", "broadcast", "broadcast_",
    "broadcast_async", "broadcast_async_", "grouped_allgather", "grouped_allgather_async",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "grouped_reducescatter", "grouped_reducescatter_async", "join",
    "poll", "reducescatter", "reducescatter_async", "sparse_allreduce_async", "synchronize",
]


def _set_rank(process_set):
    return lib.hvd_process_set_rank(process_set_id(process_set))


def _own_rows(grad, dims, process_set):
    """This rank's rows of a gradient of allgathered tensors whose first dimensions on
    this rank were `dims` (one per member): the rows start after the lower ranks'."""
    counts = synchronize(grouped_allgather_async(
        [torch.tensor([d], dtype=torch.int64) for d in dims], process_set=process_set))
    r = _set_rank(process_set)
    return [g.narrow(0, int(c[:r].sum()), d) for g, c, d in zip(grad, counts, dims)]


def _scaled_for_scatter(ctx, grads):
    """Horovod's gradient of a reducescatter, before its allgather."""
    factor = 1.0
    if ctx.op == Sum:
        factor *= _set_size(ctx.process_set)
    factor *= ctx.prescale_factor * ctx.postscale_factor
    return [g * factor if factor != 1.0 else g for g in grads]


# --- allreduce ----------------------------------------------------------------------

class _Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return synchronize(allreduce_async(tensor, None, name, op, prescale_factor,
                                           postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        op, pre, post, process_set = ctx.args
        grad = synchronize(allreduce_async(grad_output, None, None, op, pre, post, process_set))
        return grad, None, None, None, None, None


@announces_refusal("allreduce")
def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=None):
    """Returns the reduction of `tensor` over the ranks (differentiable)."""
    _check_tensor(tensor, "allreduce")
    op = _resolve_op(average, op, "allreduce")
    compressed, ctx = compression.compress(tensor)
    reduced = _Allreduce.apply(compressed, name, op, prescale_factor, postscale_factor,
                               process_set)
    return compression.decompress(reduced, ctx)


class _GroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(synchronize(grouped_allreduce_async(
            list(tensors), None, name, op, prescale_factor, postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        op, pre, post, process_set = ctx.args
        reduced = synchronize(grouped_allreduce_async(list(grads), None, None, op, pre, post,
                                                      process_set))
        return (None, None, None, None, None, *reduced)


@announces_refusal("grouped_allreduce", "tensors")
def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=None):
    """Allreduces a list of tensors of one dtype as one unit; returns new tensors
    (differentiable)."""
    tensors = _group_list(tensors, "grouped_allreduce")
    op = _resolve_op(average, op, "grouped_allreduce")
    pairs = [compression.compress(t) for t in tensors]
    outs = _GroupedAllreduce.apply(name, op, prescale_factor, postscale_factor, process_set,
                                   *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


# --- allgather ----------------------------------------------------------------------

class _GroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims = [t.shape[0] if t.dim() > 0 else 1 for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        averaged = synchronize(grouped_allreduce_async(list(grads), None, None, Average, 1.0,
                                                       1.0, ctx.process_set))
        return (None, None, *_own_rows(averaged, ctx.dims, ctx.process_set))


class _Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.shape = tensor.shape  # a scalar travels as one row
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        averaged = synchronize(allreduce_async(grad_output, None, None, Average, 1.0, 1.0,
                                               ctx.process_set))
        dim = ctx.shape[0] if len(ctx.shape) else 1
        rows = _own_rows([averaged], [dim], ctx.process_set)[0]
        return rows.reshape(ctx.shape), None, None


@announces_refusal("allgather")
def allgather(tensor, name=None, process_set=None):
    """Concatenates every rank's tensor along the first dimension, in rank order
    (differentiable)."""
    _check_tensor(tensor, "allgather")
    return _Allgather.apply(tensor, name, process_set)


@announces_refusal("grouped_allgather", "tensors")
def grouped_allgather(tensors, name=None, process_set=None):
    """Allgathers a list of tensors of one dtype as one unit; returns the list of
    concatenations (first dimensions may differ per rank and per tensor;
    differentiable)."""
    tensors = _group_list(tensors, "grouped_allgather")
    return list(_GroupedAllgather.apply(name, process_set, *tensors))


# --- broadcast ----------------------------------------------------------------------

class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output, None, None, Average, 1.0, 1.0,
                                           ctx.process_set))
        if lib.hvd_rank() != ctx.root_rank:
            grad = torch.zeros_like(grad)
        return grad, None, None, None


@announces_refusal("broadcast")
def broadcast(tensor, root_rank, name=None, process_set=None):
    """Returns a new tensor holding root_rank's `tensor` (root_rank: a global rank;
    differentiable)."""
    _check_tensor(tensor, "broadcast")
    return _Broadcast.apply(tensor, root_rank, name, process_set)


# --- alltoall -----------------------------------------------------------------------

class _Alltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received, ctx.process_set = received, process_set
        if splits is None:
            return output
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, *_):
        grad, _ = synchronize(alltoall_async(grad_output, ctx.received, None, ctx.process_set))
        return grad, None, None, None


@announces_refusal("alltoall")
def alltoall(tensor, splits=None, name=None, process_set=None):
    """Sends splits[r] rows (an even split when None) to rank r. Returns the received
    rows, and also the received splits when `splits` was given (as Horovod does);
    differentiable."""
    _check_tensor(tensor, "alltoall")
    return _Alltoall.apply(tensor, splits, name, process_set)


# --- reducescatter ------------------------------------------------------------------

class _Reducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.op, ctx.process_set = op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                               postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        grad = _scaled_for_scatter(ctx, [grad_output])[0]
        return synchronize(allgather_async(grad, None, ctx.process_set)), \
            None, None, None, None, None


class _GroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.op, ctx.process_set = op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name, op, process_set, prescale_factor, postscale_factor)))

    @staticmethod
    def backward(ctx, *grads):
        scaled = _scaled_for_scatter(ctx, grads)
        gathered = synchronize(grouped_allgather_async(scaled, None, ctx.process_set))
        return (None, None, None, None, None, *gathered)


@announces_refusal("reducescatter")
def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=None, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces across ranks (Sum or Average) and returns this rank's block of rows
    (differentiable)."""
    _check_tensor(tensor, "reducescatter")
    op = _resolve_op(None, op, "reducescatter")
    compressed, ctx = compression.compress(tensor)
    out = _Reducescatter.apply(compressed, name, op, process_set, prescale_factor,
                               postscale_factor)
    return compression.decompress(out, ctx)


@announces_refusal("grouped_reducescatter", "tensors")
def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=None, prescale_factor=1.0, postscale_factor=1.0):
    """Reducescatters a list of tensors of one dtype as one unit (Sum or Average);
    returns this rank's block of rows of each (differentiable)."""
    tensors = _group_list(tensors, "grouped_reducescatter")
    op = _resolve_op(None, op, "grouped_reducescatter")
    pairs = [compression.compress(t) for t in tensors]
    outs = _GroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                       postscale_factor, *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(outs, pairs)]


# --- sparse tensors -----------------------------------------------------------------

class SparseHandle:
    """The handle of sparse_allreduce_async: call it (as Horovod's) or pass it to
    synchronize() to get the reduced sparse tensor."""

    def __init__(self, tensor, indices_handle, values_handle, average, set_size):
        self._tensor = tensor
        self._handles = (indices_handle, values_handle)
        self._average, self._set_size = average, set_size
        self._result = None

    def poll(self):
        return all(h.poll() for h in self._handles)

    def wait(self):
        if self._result is None:
            indices, values = _wait_all(self._handles)
            if self._average:
                values = values / self._set_size
            t = self._tensor
            self._result = torch.sparse_coo_tensor(indices.t(), values, t.size(),
                                                   dtype=t.dtype, device=t.device)
        return self._result

    __call__ = wait


def sparse_allreduce_async(tensor, name=None, op=Average, process_set=None):
    """Starts reducing a sparse COO tensor by allgathering its indices and values (as
    Horovod does: the result holds every rank's entries, duplicates summed when it is
    coalesced). op: Average or Sum."""
    indices_name = None if name is None else f"{name}.indices"
    values_name = None if name is None else f"{name}.values"
    try:
        if not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
            what = "a dense tensor" if isinstance(tensor, torch.Tensor) else type(tensor).__name__
            raise TypeError(f"sparse_allreduce_async: expected a sparse COO torch.Tensor, "
                            f"got {what}")
        op = _resolve_op(None, op, "sparse_allreduce_async")
        if op not in (Average, Sum):
            raise ValueError("sparse_allreduce_async: op must be hvd.Average or hvd.Sum")
    except Exception as error:  # noqa: BLE001 - announced, then re-raised
        # The peers wait in both allgathers (automatic names too: one each).
        refuse("allgather", indices_name, process_set, error)
        refuse("allgather", values_name, process_set, error)
        raise
    indices = tensor._indices().t().contiguous()
    indices_handle = allgather_async(indices, indices_name, process_set)
    values_handle = allgather_async(tensor._values(), values_name, process_set)
    return SparseHandle(tensor, indices_handle, values_handle, op == Average,
                        _set_size(process_set))

