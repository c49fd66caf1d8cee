"""Horovod's Keras API on Keras 3, for the TensorFlow and torch backends.

    import hvd.keras as hvd      # or, unchanged: import horovod.tensorflow.keras as hvd
    hvd.init()                   #                 (or horovod.keras)
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(0.001 * hvd.size()))
    model.compile(optimizer=opt, loss=...)
    model.fit(x, y, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback()])

The optimizer reduces gradients in Optimizer.apply, which every Keras 3 trainer calls:
through hvd.tensorflow (as tf.numpy_function inside Keras's compiled step) on the
TensorFlow backend, through hvd.torch on the torch backend. The JAX backend is refused
with the reason (see _backend.py). Nothing is compiled against Keras or a framework.
"""
try:
    import keras as _keras
except ImportError as _error:
    raise ImportError(f"hvd.keras needs Keras 3 ({_error}); install it with a backend, "
                      "for example pip install keras tensorflow-cpu") from _error
if not _keras.__version__.startswith("3."):
    raise ImportError(f"hvd.keras needs Keras 3, not Keras {_keras.__version__}; for "
                      "Keras 2 install Horovod itself")

from ..basics import (ccl_built, ddl_built, gloo_built, gloo_enabled, mpi_threads_supported,
                      rocm_built, Adasum, Average, Max, Min, Product, ProcessSet, Sum,
                      add_process_set, barrier, cross_rank, cross_size, cuda_built,
                      global_process_set, gpu_device, init, is_homogeneous, is_initialized,
                      local_rank, local_size, mpi_built, mpi_enabled, nccl_built, rank,
                      remove_process_set, shutdown, size, start_timeline, stop_timeline)
from ..errors import HvdError
from . import callbacks, elastic
from ._backend import SUPPORTED as SUPPORTED_BACKENDS
from .compression import Compression
from .functions import (allgather, allgather_object, allreduce, broadcast,
                        broadcast_global_variables, broadcast_object, reducescatter)
from .optimizer import DistributedOptimizer, PartialDistributedOptimizer
from .saving import load_model
from .variables import broadcast_variables

# Horovod's name for failures of collective operations.
HorovodInternalError = HvdError
