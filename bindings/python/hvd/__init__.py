"""hvd: Python bindings of libhvd (ctypes over the C ABI, the per-call path in C),
with numpy collectives.

    import numpy as np, hvd
    hvd.init()
    grad = hvd.allreduce(np.ones(4, np.float32), name="grad")   # average over ranks
    hvd.shutdown()

The PyTorch layer is hvd.torch (Horovod's torch API). libhvd is found through
HVD_LIBRARY, then beside the installed package, then a build tree, then the system.
"""
from . import dtypes
from ._capi import HVD_DEVICE_CPU, HVD_GLOBAL_PROCESS_SET
from ._library import candidate_paths as library_candidates
from ._raw import Handle
from .basics import (Adasum, Average, Max, Min, Product, ProcessSet, Sum, add_process_set,
                     barrier, counters, cross_rank, cross_size, cuda_built, global_process_set,
                     gpu_device, hwloc_built, init, is_homogeneous, is_initialized, join,
                     local_rank, local_size, mark_step, mpi_built, mpi_enabled,
                     mpi_library_version, nccl_built, param, process_set_ids,
                     process_set_ranks, rank, reducescatter_rows, remove_process_set, shutdown,
                     size, start_timeline, step_stats, stop_timeline, version, version_number,
                     version_string)
from .collectives import (allgather, allgather_async, allreduce, allreduce_, allreduce_async,
                          allreduce_async_, alltoall, alltoall_async, broadcast, broadcast_,
                          broadcast_async, broadcast_async_, grouped_allgather,
                          grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
                          grouped_allreduce_async, grouped_allreduce_async_,
                          grouped_reducescatter, grouped_reducescatter_async, poll,
                          reducescatter, reducescatter_async, synchronize)
from .dtypes import bfloat16
from .errors import (CudaError, DuplicateNameError, HvdError, InternalError,
                     InvalidArgumentError, MismatchError, MpiError, NcclError, NoMemoryError,
                     NotInitializedError, ShutDownError, TimeoutError, UnsupportedError)
from .objects import allgather_object, broadcast_object

__version__ = version_string()
