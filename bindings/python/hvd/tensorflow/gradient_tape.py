"""DistributedGradientTape: a tf.GradientTape whose gradients are allreduced.

    with tf.GradientTape() as tape:
        loss = ...
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, variables)

All dense gradients of one gradient() call go to libhvd in one grouped call (one per
dtype); tf.IndexedSlices are allgathered, or densified with sparse_as_dense=True.
"""
import tensorflow as tf

from ..basics import (Adasum, Average, Sum, global_process_set, predivide_scales,
                      reduces_gradients)
from .compression import Compression
from .mpi_ops import grouped_allreduce

__all__ = ["DistributedGradientTape", "PartialDistributedGradientTape"]


def source_key(source):
    """A hashable key of a variable: tf.Variable.ref(); Keras 3 variables have neither
    ref() nor a hash, so their identity (the registries keep the variable alive)."""
    return source.ref() if hasattr(source, "ref") else ("object", id(source))


class _DistributedGradientTape:
    """Wraps a tf.GradientTape: gradient() reduces, everything else is the tape's."""

    def __init__(self, tape, compression, sparse_as_dense, op, gradient_predivide_factor,
                 process_set, scale_local_gradients):
        self._tape = tape
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op
        self._prescale, self._postscale = predivide_scales(op, gradient_predivide_factor)
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._local_sources = {}

    def __enter__(self):
        self._tape.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self._tape.__exit__(*exc_info)

    def __getattr__(self, name):
        return getattr(self._tape, name)

    def register_local_source(self, source):
        """Keeps `source`'s gradient local (not reduced; divided by the size when
        scale_local_gradients, as Horovod does)."""
        self._local_sources[source_key(source)] = source

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        grads = self._tape.gradient(target, sources, output_gradients,
                                    unconnected_gradients=unconnected_gradients)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = list(tf.nest.flatten(grads))
        reduce_at = [i for i, (s, g) in enumerate(zip(flat_sources, flat_grads))
                     if g is not None and not self._is_local(s)]
        if not reduces_gradients(self.process_set):
            reduce_at = []
        to_reduce = [flat_grads[i] for i in reduce_at]
        if self._sparse_as_dense:
            to_reduce = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                         for g in to_reduce]
        reduced = grouped_allreduce(to_reduce, compression=self._compression, op=self._op,
                                    prescale_factor=self._prescale,
                                    postscale_factor=self._postscale,
                                    process_set=self.process_set) if to_reduce else []
        for i, g in zip(reduce_at, reduced):
            flat_grads[i] = g
        if self.scale_local_gradients and self._local_sources:
            size = float(self.process_set.size())
            for i, s in enumerate(flat_sources):
                g = flat_grads[i]
                if g is None or not self._is_local(s):
                    continue
                if isinstance(g, tf.IndexedSlices):
                    flat_grads[i] = tf.IndexedSlices(g.values / size, g.indices, g.dense_shape)
                else:
                    flat_grads[i] = g / size
        return tf.nest.pack_sequence_as(sources, flat_grads)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None):
        """gradient(), split: ([(source, gradient)] of the local sources, the same of
        the reduced ones), each in the order of `sources`."""
        grads = self.gradient(target, sources, output_gradients)
        local, reduced = [], []
        for source, grad in zip(sources, grads):
            (local if self._is_local(source) else reduced).append((source, grad))
        return local, reduced

    def _is_local(self, source):
        return source_key(source) in self._local_sources


def DistributedGradientTape(gradtape, device_dense='', device_sparse='',
                            compression=Compression.none, sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None,
                            process_set=global_process_set, scale_local_gradients=True):
    """Wraps `gradtape` (Horovod's function): its gradient() returns gradients reduced
    over the process set with `op` (Average, Sum, Adasum), compressed on the wire by
    `compression`. gradient_predivide_factor (Average only) scales by 1/f before the
    sum and f/size after it. num_groups and groups are accepted for Horovod's signature:
    every gradient travels in one group already. Device arguments are accepted: the
    reduction runs on host memory."""
    if op not in (Average, Sum, Adasum):
        raise ValueError(f"DistributedGradientTape: op={op!r}; use hvd.Average, hvd.Sum "
                         "or hvd.Adasum")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    return _DistributedGradientTape(gradtape, compression, sparse_as_dense, op,
                                    gradient_predivide_factor, process_set,
                                    scale_local_gradients)


def PartialDistributedGradientTape(gradtape, device_dense='', device_sparse='',
                                   compression=Compression.none, sparse_as_dense=False,
                                   op=Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=global_process_set,
                                   local_layers=None, scale_local_gradients=True):
    """DistributedGradientTape whose gradients of the Keras layers `local_layers` (a
    layer or a list of them) stay local to each rank (Horovod's function)."""
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, tf.keras.layers.Layer):
        local_layers = [local_layers]
    elif not all(isinstance(layer, tf.keras.layers.Layer) for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression,
                                   sparse_as_dense, op, gradient_predivide_factor, num_groups,
                                   groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape
