"""Horovod's rank and size ops: int32 scalars read when the op runs, not when the graph
is built, so that a graph (or a tf.function) built in one job runs right in another
(an elastic job's size changes under it)."""
import numpy as np
import tensorflow as tf

from ..basics import is_initialized, local_rank, local_size, rank, size
from ..errors import NotInitializedError
from .._capi import lib
from . import _errors

__all__ = ["rank_op", "local_rank_op", "size_op", "local_size_op", "process_set_included_op"]

# Horovod's process_set_included_op error codes (horovod/common/process_sets.h).
PROCESS_SET_ERROR_INIT = -1
PROCESS_SET_ERROR_UNKNOWN_SET = -3


def _value_op(read, name):
    """An int32 scalar op whose value read() gives when the op runs."""
    def value():
        return np.int32(read())
    if tf.executing_eagerly():
        try:
            return tf.constant(value(), dtype=tf.int32, name=name)
        except Exception as error:  # noqa: BLE001 - as its tf.errors type
            raise _errors.as_tf_error(error) from None
    with tf.name_scope(name or "HorovodValue"):
        out = tf.numpy_function(value, [], tf.int32, stateful=True)
    out.set_shape([])
    return out


def _initialized(read):
    def checked():
        if not is_initialized():
            raise NotInitializedError(1, "Horovod has not been initialized; use hvd.init().")
        return read()
    return checked


def _set_size(process_set_id):
    def read():
        value = lib.hvd_process_set_size(int(process_set_id))
        if value < 0:
            raise ValueError(f"size_op: process set {process_set_id} is not registered; "
                             "use an id that hvd.add_process_set() returned")
        return value
    return read


def rank_op(name=None):
    """This process's rank (global)."""
    return _value_op(_initialized(rank), name)


def local_rank_op(name=None):
    """This process's rank on its node."""
    return _value_op(_initialized(local_rank), name)


def size_op(process_set_id=0, name=None):
    """The number of ranks in the process set (0: all of them)."""
    read = size if int(process_set_id) == 0 else _set_size(process_set_id)
    return _value_op(_initialized(read), name)


def local_size_op(name=None):
    """The number of ranks on this process's node."""
    return _value_op(_initialized(local_size), name)


def process_set_included_op(process_set_id=0, name=None):
    """1 if this process is in the process set, 0 if not; Horovod's error codes -1 (not
    initialized) and -3 (no such set) otherwise."""
    def read():
        if not is_initialized():
            return PROCESS_SET_ERROR_INIT
        included = lib.hvd_process_set_included(int(process_set_id))
        return PROCESS_SET_ERROR_UNKNOWN_SET if included < 0 else included
    return _value_op(read, name)
