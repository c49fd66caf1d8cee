"""SyncBatchNormalization: Keras batch normalization whose training statistics cover
every rank's batch (Horovod's hvd.SyncBatchNormalization, on Keras 3).

Each rank's mean and mean of squares are averaged in one allreduce; the variance is
E[x^2] - E[x]^2 of the averages. As in Horovod, every rank's batch weighs the same.
"""
import tensorflow as tf

from ..basics import Sum, size
from .mpi_ops import allreduce

__all__ = ["SyncBatchNormalization"]


class SyncBatchNormalization(tf.keras.layers.BatchNormalization):
    """Synchronous batch normalization: statistics are synchronized across all ranks
    during training. fused is Horovod's argument: only False (Keras 3 has no fused
    kernel to turn off)."""

    def __init__(self, fused=False, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        if not kwargs.get("name"):
            kwargs["name"] = "sync_batch_normalization"
        super().__init__(**kwargs)

    def _moments(self, inputs, mask):
        mean, variance = super()._moments(inputs, mask)
        ranks = size()
        if ranks == 1:
            return mean, variance
        stats = tf.stack([mean, variance + tf.math.square(mean)])
        stats = allreduce(stats, op=Sum) / tf.cast(ranks, stats.dtype)
        group_mean, group_mean_of_square = tf.unstack(stats)
        return group_mean, group_mean_of_square - tf.math.square(group_mean)
