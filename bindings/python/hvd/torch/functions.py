"""Broadcasting model parameters, optimizer state and Python objects."""
import torch

from ..objects import allgather_object, broadcast_object
from .mpi_ops import broadcast_async_, synchronize

__all__ = ["broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
           "allgather_object"]


def broadcast_parameters(params, root_rank, process_set=None):
    """Overwrites every rank's tensors with root_rank's, in place.

    params: model.state_dict(), model.named_parameters(), or a list of tensors or of
    (name, tensor) pairs. All ranks must pass the same structure.
    """
    if isinstance(params, dict):
        items = sorted(params.items())
    elif hasattr(params, "__iter__"):
        items = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError(f"broadcast_parameters: invalid params of type {type(params).__name__}")
    handles = []
    for i, (name, tensor) in enumerate(items):
        if tensor is None:
            continue
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"broadcast_parameters: entry {name or i} is a "
                            f"{type(tensor).__name__}, not a tensor")
        label = f"broadcast.{name}" if name is not None else f"broadcast.param.{i}"
        handles.append(broadcast_async_(tensor.data, root_rank, label, process_set))
    for handle in handles:
        synchronize(handle)


class _TensorSlot:
    """Stands for a tensor in a broadcast state skeleton."""

    def __init__(self, index, shape, dtype):
        self.index, self.shape, self.dtype = index, shape, dtype


def _strip_tensors(obj, tensors):
    if isinstance(obj, torch.Tensor):
        tensors.append(obj)
        return _TensorSlot(len(tensors) - 1, tuple(obj.shape), obj.dtype)
    if isinstance(obj, dict):
        return {k: _strip_tensors(v, tensors) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_strip_tensors(v, tensors) for v in obj)
    return obj


def _fill_tensors(obj, tensors):
    if isinstance(obj, _TensorSlot):
        return tensors[obj.index]
    if isinstance(obj, dict):
        return {k: _fill_tensors(v, tensors) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_fill_tensors(v, tensors) for v in obj)
    return obj


def _collect_slots(obj, out):
    if isinstance(obj, _TensorSlot):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect_slots(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect_slots(v, out)
    return out


def _fill_missing_grads(optimizer, model):
    """As Horovod: before the first step, trainable parameters without a gradient get
    a zero one (sparse for SparseAdam and for sparse embeddings of `model`), so code
    that reads or reduces p.grad next finds a tensor on every rank."""
    sparse_ids = set()
    if model is not None:
        for m in model.modules():
            if isinstance(m, torch.nn.Embedding) and m.sparse:
                sparse_ids.update(id(p) for p in m.parameters())
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam) or id(p) in sparse_ids:
                    p.grad = p.grad.to_sparse()


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=None):
    """Makes every rank's optimizer state (moments, step counts, hyper-parameters)
    equal to root_rank's (a global rank).

    The state's structure and scalars travel as one pickled object; its tensors are
    broadcast directly (through host memory), so large moment buffers are not pickled.
    Ranks whose optimizer has not stepped yet receive the full state. model: optional,
    to know which parameters have sparse gradients (as Horovod's argument).
    """
    from ..basics import process_set_id
    from .._capi import lib
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("broadcast_optimizer_state: torch.optim.LBFGS keeps its state as "
                         "nested Python objects and is not supported; broadcast the model "
                         "and let each rank build its own LBFGS state")
    if not optimizer.state_dict()["state"]:
        _fill_missing_grads(optimizer, model)
    is_root = lib.hvd_rank() == root_rank
    tensors = []
    skeleton = _strip_tensors(optimizer.state_dict(), tensors) if is_root else None
    skeleton = broadcast_object(skeleton, root_rank, "optimizer_state.skeleton", process_set)
    if is_root:
        tensors = [t.detach().to("cpu").contiguous() for t in tensors]
    else:
        slots = sorted(_collect_slots(skeleton, []), key=lambda s: s.index)
        tensors = [torch.empty(s.shape, dtype=s.dtype) for s in slots]
    handles = [broadcast_async_(t, root_rank, f"optimizer_state.{i}", process_set)
               for i, t in enumerate(tensors)]
    for handle in handles:
        synchronize(handle)
    if not is_root:
        optimizer.load_state_dict(_fill_tensors(skeleton, tensors))
