"""Runs the numpy collectives (hvd/collectives.py) on tf.Tensors.

Executing eagerly, the function gets the tensors' .numpy() arrays directly; inside
tf.function it runs as a tf.numpy_function, stateful so that tf.function keeps the
collectives in program order (unnamed ones pair up across ranks by that order).
TensorFlow adopts a returned array without a copy only when its data are 64-byte
aligned; the collectives allocate their outputs so, and anything else is copied into
an aligned array here, never handed over unaligned.
"""
import weakref

import numpy as np
import tensorflow as tf

from .._aligned import aligned_empty_like, is_aligned
from . import _errors


def aligned(array):
    """`array` itself when C-contiguous and 64-byte aligned, else an aligned copy."""
    array = np.asarray(array)
    if array.flags.c_contiguous and is_aligned(array):
        return array
    out = aligned_empty_like(array)
    np.copyto(out, array)
    return out


def run(function, inputs, output_dtypes):
    """function(*arrays) -> a sequence of arrays, one per output dtype; returns the
    outputs as tensors (without static shapes inside tf.function: the caller sets them).
    A failure reaches the caller as the tf.errors type Horovod raises (_errors.py)."""
    inputs = [tf.convert_to_tensor(t) for t in inputs]
    output_dtypes = list(output_dtypes)
    if tf.executing_eagerly():
        try:
            results = function(*[t.numpy() for t in inputs])
        except Exception as error:  # noqa: BLE001 - every failure, as its tf.errors type
            raise _errors.as_tf_error(error) from None
        return [tf.convert_to_tensor(aligned(r), dtype=d)
                for r, d in zip(results, output_dtypes)]

    def graph_function(*arrays):
        try:
            results = [aligned(r) for r in function(*arrays)]
        except Exception as error:  # noqa: BLE001
            if not _errors.needs_graph_failure(error):
                raise
            # The outputs are never read: graph_failure fails first.
            return [np.zeros(0, d.as_numpy_dtype) for d in output_dtypes] + \
                [np.bytes_(f"{type(error).__name__}: {error}".encode("utf-8", "replace"))]
        return results + [np.bytes_(b"")]
    # Each collective waits inside its numpy_function until every rank has submitted
    # it, holding one of TensorFlow's few inter-op threads: in a graph with more
    # independent collectives than threads, ranks that started different ones would
    # wait for each other for ever. Each collective depends on the one made before it
    # in the same graph, so every rank runs them one at a time, in the order the graph
    # was built (tf.function orders stateful ops so already; TF1's graphs do not).
    graph = tf.compat.v1.get_default_graph()
    previous = _last_collective.get(graph)
    with tf.control_dependencies([previous] if previous is not None else []):
        *outputs, failure = tf.numpy_function(graph_function, inputs,
                                              output_dtypes + [tf.string], stateful=True)
    _last_collective[graph] = failure.op
    with tf.control_dependencies([_errors.graph_failure(failure)]):
        return [tf.identity(t) for t in outputs]


# The collective op made last in each graph (the graph's own, so that a graph that
# goes away takes its entry with it).
_last_collective = weakref.WeakKeyDictionary()


def with_shape(tensor, shape):
    """`tensor` with its static shape set (inside tf.function numpy_function outputs
    have none)."""
    tensor.set_shape(shape)
    return tensor


def rows_shape(shape):
    """The static shape of a gathered or scattered result: the first dimension unknown."""
    shape = tf.TensorShape(shape)
    if shape.rank is None:
        return tf.TensorShape(None)
    return tf.TensorShape([None]).concatenate(shape[1:])
