"""Horovod's TensorFlow 2 API on libhvd.

    import hvd.tensorflow as hvd     # or, unchanged: import horovod.tensorflow as hvd
    hvd.init()
    with tf.GradientTape() as tape:
        loss = ...
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, variables)
    hvd.broadcast_variables(variables, root_rank=0)

Nothing is compiled against TensorFlow: the collectives run on host memory through the
numpy layer, eagerly or inside tf.function (as tf.numpy_function), with whichever
TensorFlow 2 the environment has.
"""
try:
    import tensorflow as _tf  # noqa: F401 - fail here, with what to do
except ImportError as _error:
    raise ImportError(f"hvd.tensorflow needs TensorFlow 2 ({_error}); install it, for "
                      "example pip install tensorflow-cpu") from _error

from ..basics import (ccl_built, ddl_built, gloo_built, gloo_enabled, mpi_threads_supported,
                      rocm_built, Adasum, Average, Max, Min, Product, ProcessSet, Sum, add_process_set,
                      barrier, cross_rank, cross_size, cuda_built, global_process_set,
                      gpu_device, init, is_homogeneous, is_initialized, local_rank, local_size,
                      mark_step, mpi_built, mpi_enabled, nccl_built, rank, remove_process_set,
                      shutdown, size, start_timeline, step_stats, stop_timeline)
from ..errors import HvdError
from . import elastic
from .compression import Compression
from .functions import (BroadcastGlobalVariablesHook, allgather_object, broadcast_global_variables,
                        broadcast_object, broadcast_object_fn, broadcast_variables)
from .gradient_tape import DistributedGradientTape, PartialDistributedGradientTape
from .mpi_ops import (allgather, allreduce, alltoall, broadcast, broadcast_, grouped_allgather,
                      grouped_allreduce, grouped_broadcast, grouped_reducescatter, join,
                      reducescatter)
from .optimizer import DistributedOptimizer
from .rank_ops import (local_rank_op, local_size_op, process_set_included_op, rank_op,
                       size_op)
from .sync_batch_norm import SyncBatchNormalization

# Horovod's name for failures of collective operations.
HorovodInternalError = HvdError

