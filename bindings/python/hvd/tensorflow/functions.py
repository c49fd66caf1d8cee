"""Broadcasting variables and Python objects (Horovod's TensorFlow helpers)."""
import tensorflow as tf

from .. import objects
from ..basics import global_process_set
from .mpi_ops import grouped_broadcast, read_variable

__all__ = ["broadcast_variables", "broadcast_global_variables", "broadcast_object",
           "broadcast_object_fn", "allgather_object", "BroadcastGlobalVariablesHook"]


def broadcast_variables(variables, root_rank, process_set=global_process_set,
                        inplace=False):
    """Assigns root_rank's values to `variables` (tf.Variable or Keras 3 variables) on
    every rank, all in one call into libhvd. Returns the group of assignments (None
    when executing eagerly)."""
    variables = list(variables)
    values = grouped_broadcast([read_variable(v) for v in variables], root_rank,
                               process_set=process_set)
    return tf.group(*[v.assign(value) for v, value in zip(variables, values)])


def broadcast_object(obj, root_rank=0, session=None, name=None,
                     process_set=global_process_set):
    """root_rank's picklable `obj` on every rank (`session` is TF1's, unused)."""
    return objects.broadcast_object(obj, root_rank, name, process_set)


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """The list of every rank's picklable `obj`, in rank order (`session` is unused)."""
    return objects.allgather_object(obj, name, process_set)


def broadcast_object_fn(root_rank=0, session=None, name=None, process_set=global_process_set):
    """A function that returns root_rank's picklable argument on every rank (Horovod's
    TF1 helper; `session` is unused)."""
    def broadcast(obj):
        return objects.broadcast_object(obj, root_rank, name, process_set)
    return broadcast


def broadcast_global_variables(root_rank):
    """TF1: assigns root_rank's values to every global variable of the default graph
    (tf.compat.v1.global_variables()); returns the op to run in the session."""
    if tf.executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager execution (TensorFlow "
            "2 keeps no global variables): use hvd.broadcast_variables(<model/optimizer "
            "variables>, root_rank) instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook:
    """Horovod's TF1 SessionRunHook for tf.estimator and MonitoredTrainingSession, which
    TensorFlow 2.16 removed (tf.estimator); refused with the TensorFlow 2 way."""

    def __init__(self, root_rank, device=''):
        raise NotImplementedError(
            "hvd.BroadcastGlobalVariablesHook is a TF1 SessionRunHook for tf.estimator, "
            "which TensorFlow 2 no longer has: call hvd.broadcast_variables(variables, "
            "root_rank=0) once the variables exist (after the first step of a "
            "DistributedGradientTape loop), or pass "
            "horovod.tensorflow.keras.callbacks.BroadcastGlobalVariablesCallback(0) to "
            "model.fit")
