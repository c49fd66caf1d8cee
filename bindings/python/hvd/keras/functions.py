"""Horovod's Keras module-level collectives: a value (a number, a numpy array, a
backend tensor) in, the running backend's tensor out, executed at once."""
import keras

from ..basics import Average, global_process_set
from .. import objects
from . import _backend
from .compression import Compression
from .variables import broadcast_variables, model_variables


def _tensor(value):
    return keras.ops.convert_to_tensor(value)


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=Compression.none, process_set=global_process_set):
    """`value` reduced over the ranks with `op` (Average unless told; Horovod's
    deprecated `average` is read as before)."""
    if op is not None and average is not None:
        raise ValueError("allreduce: give op or average, not both (average is deprecated)")
    if op is None:
        from ..basics import Sum
        op = Sum if average is False else Average
    tensor, ctx = compression.compress(_tensor(value))
    reduced, = _backend.grouped_allreduce([tensor], op, prescale_factor, postscale_factor,
                                          process_set)
    return compression.decompress(reduced, ctx)


def allgather(value, name=None, process_set=global_process_set):
    """Every rank's `value` concatenated along the first dimension, in rank order."""
    return _backend.ops().allgather(_tensor(value), name=name, process_set=process_set)


def broadcast(value, root_rank, name=None, process_set=global_process_set):
    """root_rank's `value` on every rank."""
    return _backend.ops().broadcast(_tensor(value), root_rank, name=name,
                                    process_set=process_set)


def reducescatter(value, name=None, op=Average, process_set=global_process_set):
    """`value` reduced over the ranks (Average or Sum), this rank's block of rows."""
    return _backend.ops().reducescatter(_tensor(value), name=name, op=op,
                                        process_set=process_set)


def broadcast_global_variables(root_rank, model=None, process_set=global_process_set):
    """Broadcasts root_rank's model and optimizer variables to every rank. Keras 3
    keeps no collection of global variables (TensorFlow 1's graph did): name the
    model, or train with BroadcastGlobalVariablesCallback."""
    _backend.name()
    if model is None:
        raise ValueError(
            "broadcast_global_variables(root_rank, model): Keras 3 has no collection of "
            "global variables to broadcast; pass the model (its optimizer's variables "
            "go with it), or add hvd.callbacks.BroadcastGlobalVariablesCallback(0) to fit")
    broadcast_variables(model_variables(model), root_rank, process_set)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's picklable `obj` on every rank."""
    return objects.broadcast_object(obj, root_rank, name, process_set)


def allgather_object(obj, name=None, process_set=global_process_set):
    """The list of every rank's picklable `obj`, in rank order."""
    return objects.allgather_object(obj, name, process_set)
