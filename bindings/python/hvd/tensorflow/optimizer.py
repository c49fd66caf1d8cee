"""Horovod's horovod.tensorflow.DistributedOptimizer.

A tf.compat.v1.train.Optimizer is wrapped here: compute_gradients() returns the
gradients reduced over the process set (one grouped call into libhvd), and everything
else is the wrapped optimizer's. A Keras 3 optimizer goes to hvd.keras'
DistributedOptimizer, as Horovod's function hands Keras optimizers to
horovod.tensorflow.keras.
"""
import tensorflow as tf

from ..basics import (Adasum, Average, global_process_set, predivide_scales,
                      reduces_gradients)
from .compression import Compression
from .gradient_tape import source_key
from .mpi_ops import grouped_allreduce

__all__ = ["DistributedOptimizer"]

_LegacyOptimizer = tf.compat.v1.train.Optimizer


class _DistributedOptimizer(_LegacyOptimizer):
    """Wraps a tf.compat.v1.train.Optimizer: gradients are reduced in
    compute_gradients(), before apply_gradients() sees them."""

    def __init__(self, optimizer, name, use_locking, compression, sparse_as_dense, op,
                 gradient_predivide_factor, process_set, scale_local_gradients):
        if name is None:
            name = f"Distributed{type(optimizer).__name__}"
        super().__init__(name=name, use_locking=use_locking)
        self._optimizer = optimizer
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op
        self._prescale, self._postscale = predivide_scales(op, gradient_predivide_factor)
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._local_vars = {}

    def register_local_var(self, var):
        """Keeps `var`'s gradient local: not reduced (divided by the set's size when
        scale_local_gradients, as Horovod does)."""
        self._local_vars[source_key(var)] = var

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's (gradient, variable) pairs, gradients reduced."""
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        reduce_at = [i for i, (g, v) in enumerate(pairs)
                     if g is not None and source_key(v) not in self._local_vars]
        if not reduces_gradients(self.process_set):
            reduce_at = []
        to_reduce = [pairs[i][0] for i in reduce_at]
        if self._sparse_as_dense:
            to_reduce = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                         for g in to_reduce]
        reduced = grouped_allreduce(to_reduce, compression=self._compression, op=self._op,
                                    prescale_factor=self._prescale,
                                    postscale_factor=self._postscale,
                                    process_set=self.process_set) if to_reduce else []
        grads = [g for g, _ in pairs]
        for i, g in zip(reduce_at, reduced):
            grads[i] = g
        if self.scale_local_gradients and self._local_vars:
            set_size = float(self.process_set.size())
            for i, (g, v) in enumerate(pairs):
                if g is None or source_key(v) not in self._local_vars:
                    continue
                grads[i] = (tf.IndexedSlices(g.values / set_size, g.indices, g.dense_shape)
                            if isinstance(g, tf.IndexedSlices) else g / set_size)
        return list(zip(grads, [v for _, v in pairs]))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's apply_gradients."""
        return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step,
                                               name=name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense='',
                         device_sparse='', compression=Compression.none,
                         sparse_as_dense=False, backward_passes_per_step=1, op=Average,
                         gradient_predivide_factor=1.0, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=global_process_set,
                         scale_local_gradients=True):
    """Wraps `optimizer` so that gradients are reduced over the process set with `op`
    before they are applied (Horovod's function and signature).

    A tf.compat.v1.train.Optimizer is wrapped here; a Keras 3 optimizer by
    hvd.keras.DistributedOptimizer (horovod.tensorflow.keras'). Every gradient
    travels in one group already, so num_groups and groups change nothing; device
    arguments are accepted, the reduction runs on host memory."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if op == Adasum and average_aggregated_gradients:
        raise ValueError("Adasum does not support average_aggregated_gradients == True")
    if groups is not None and not (isinstance(groups, list) or groups > 0):
        raise ValueError("groups should be a non-negative integer or a list of list of "
                         "tf.Variable.")
    if isinstance(optimizer, _LegacyOptimizer):
        if op == Adasum:
            raise NotImplementedError(
                "DistributedOptimizer: op=hvd.Adasum with a tf.compat.v1 optimizer (Horovod "
                "reduces model deltas there) is not supported; use "
                "hvd.DistributedGradientTape(tape, op=hvd.Adasum) in TensorFlow 2 code")
        if backward_passes_per_step != 1:
            raise NotImplementedError(
                "DistributedOptimizer: backward_passes_per_step > 1 with a tf.compat.v1 "
                "optimizer (TF1 graph sessions) is not supported; with TensorFlow 2 wrap a "
                "Keras optimizer, whose DistributedOptimizer aggregates locally")
        return _DistributedOptimizer(optimizer, name, use_locking, compression,
                                     sparse_as_dense, op, gradient_predivide_factor,
                                     process_set, scale_local_gradients)
    if op == Adasum:
        raise ValueError("op == Adasum is not supported yet with Keras")
    try:
        from ..keras import DistributedOptimizer as keras_distributed_optimizer
    except ImportError as error:
        raise ImportError(f"DistributedOptimizer({type(optimizer).__name__}): a Keras "
                          "optimizer is wrapped by hvd.keras (horovod.tensorflow.keras), "
                          f"which cannot be imported here ({error})") from error
    return keras_distributed_optimizer(
        optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
        compression=compression, sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients,
        process_set=process_set, scale_local_gradients=scale_local_gradients)
