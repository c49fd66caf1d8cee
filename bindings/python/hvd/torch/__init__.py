"""Horovod's PyTorch API on libhvd.

    import hvd.torch as hvd          # or, unchanged: import horovod.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

Handles returned by the `*_async` functions are hvd.Handle objects (Horovod's are
ints); pass them to poll() and synchronize() as usual. A handle may also be dropped
without waiting: the operation's buffers stay alive until it completes.
"""
from ..basics import (ccl_built, ddl_built, gloo_built, gloo_enabled, mpi_threads_supported,
                      rocm_built, Adasum, Average, Max, Min, Product, ProcessSet, Sum, add_process_set,
                      barrier, cross_rank, cross_size, cuda_built, global_process_set,
                      gpu_device, init, is_homogeneous, is_initialized, local_rank, local_size,
                      mark_step, mpi_built, mpi_enabled, nccl_built, rank, remove_process_set,
                      shutdown, size, start_timeline, step_stats, stop_timeline)
from ..errors import HvdError
from .compression import Compression
from .functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                        broadcast_parameters)
from .mpi_ops import (allgather, allgather_async, allreduce, allreduce_, allreduce_async,
                      allreduce_async_, alltoall, alltoall_async, broadcast, broadcast_,
                      broadcast_async, broadcast_async_, grouped_allgather,
                      grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
                      grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter,
                      grouped_reducescatter_async, join, poll, reducescatter,
                      reducescatter_async, sparse_allreduce_async, synchronize)
from .optimizer import DistributedOptimizer
from .sync_batch_norm import SyncBatchNorm
from . import elastic  # noqa: E402 - hvd.elastic.run, TorchState, ElasticSampler

# Horovod's name for failures of collective operations.
HorovodInternalError = HvdError

