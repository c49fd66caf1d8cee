"""Runs the numpy collectives (hvd/collectives.py) on tf.Tensors.

Executing eagerly, the function gets the tensors' .numpy() arrays directly; inside
tf.function it runs as a tf.numpy_function, stateful so that tf.function keeps the
collectives in program order (unnamed ones pair up across ranks by that order).
TensorFlow adopts a returned array without a copy only when its data are 64-byte
aligned; the collectives allocate their outputs so, and anything else is copied into
an aligned array here, never handed over unaligned.
"""
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
    return tf.numpy_function(graph_function, inputs, output_dtypes, stateful=True)


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
