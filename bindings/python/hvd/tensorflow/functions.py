"""Broadcasting variables and Python objects (Horovod's TensorFlow helpers)."""
import tensorflow as tf

from .. import objects
from ..basics import global_process_set
from .mpi_ops import grouped_broadcast

__all__ = ["broadcast_variables", "broadcast_object", "allgather_object"]


def broadcast_variables(variables, root_rank, process_set=global_process_set,
                        inplace=False):
    """Assigns root_rank's values to `variables` on every rank, all in one call into
    libhvd. Returns the group of assignments (None when executing eagerly)."""
    variables = list(variables)
    values = grouped_broadcast([v.read_value() for v in variables], root_rank,
                               process_set=process_set)
    return tf.group(*[v.assign(value) for v, value in zip(variables, values)])


def broadcast_object(obj, root_rank=0, session=None, name=None,
                     process_set=global_process_set):
    """root_rank's picklable `obj` on every rank (`session` is TF1's, unused)."""
    return objects.broadcast_object(obj, root_rank, name, process_set)


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """The list of every rank's picklable `obj`, in rank order (`session` is unused)."""
    return objects.allgather_object(obj, name, process_set)
