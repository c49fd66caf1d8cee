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
    outputs as tensors (without static shapes inside tf.function: the caller sets them)."""
    inputs = [tf.convert_to_tensor(t) for t in inputs]
    output_dtypes = list(output_dtypes)
    if tf.executing_eagerly():
        results = function(*[t.numpy() for t in inputs])
        return [tf.convert_to_tensor(aligned(r), dtype=d)
                for r, d in zip(results, output_dtypes)]

    def graph_function(*arrays):
        return [aligned(r) for r in function(*arrays)]
    # Each collective waits inside its numpy_function until every rank has submitted
    # it, holding one of TensorFlow's few inter-op threads: in a graph with more
    # independent collectives than threads, ranks that started different ones would
    # wait for each other for ever. Each collective depends on the one made before it
    # in the same graph, so every rank runs them one at a time, in the order the graph
    # was built (tf.function orders stateful ops so already; TF1's graphs do not).
    graph = tf.compat.v1.get_default_graph()
    previous = _last_collective.get(graph)
    with tf.control_dependencies([previous] if previous is not None else []):
        outputs = tf.numpy_function(graph_function, inputs, output_dtypes, stateful=True)
    _last_collective[graph] = outputs[0].op
    return outputs


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
