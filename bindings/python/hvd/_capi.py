"""The C ABI of include/hvd/hvd.h and hvd_mpi.h, declared for ctypes.

Every exported hvd_* function gets its argtypes and restype here, so a wrong Python
argument is a ctypes.ArgumentError rather than a corrupted call. Nothing else in the
package touches the CDLL directly, except _fastcall, which hands the addresses of four
of its functions to the C per-call path.
"""
import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int,
                    c_int32, c_int64, c_size_t, c_uint8, c_uint64, c_void_p)

from . import _library

lib = _library.load()

status_t = c_int
dtype_t = c_int
reduce_op_t = c_int
handle_t = c_int64

HVD_DEVICE_CPU = -1
HVD_GLOBAL_PROCESS_SET = 0
HVD_MAX_NDIM = 32

# void* (*hvd_allocator_fn)(size_t nbytes, int device, void* user_data)
allocator_fn = CFUNCTYPE(c_void_p, c_size_t, c_int, c_void_p)


class OpOptions(Structure):
    """hvd_op_options_t."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("prescale_factor", c_double),
        ("postscale_factor", c_double),
        ("device", c_int32),
        ("process_set_id", c_int32),
        ("stream", c_void_p),
        ("allocator", allocator_fn),
        ("allocator_user_data", c_void_p),
        # The tensor's shape, for allreduce and broadcast: ranks must then agree on it,
        # not only on the element count. ndim 0: not given.
        ("shape", POINTER(c_int64)),
        ("ndim", c_int32),
        ("reserved_pad", c_int32),
        ("reserved", c_uint8 * 48),
    ]


class Counters(Structure):
    """hvd_counters_t."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("global_bytes", c_uint64),
        ("local_bytes", c_uint64),
        ("cross_bytes", c_uint64),
        ("collectives", c_uint64),
        ("negotiation_rounds", c_uint64),
        ("speculative", c_uint64),
        ("ring_allreduces", c_uint64),
        ("core_round_trip_ns", c_uint64),
        ("far_cores", c_uint64),
        ("back_to_back", c_uint64),
        ("reserved", c_uint64 * 3),
    ]


class StepStats(Structure):
    """hvd_step_stats_t."""
    _fields_ = [
        ("struct_size", c_size_t),
        ("steps", c_int64),
        ("warmup_steps", c_int64),
        ("step_seconds", c_double),
        ("exposed_wait_seconds", c_double),
        ("negotiate_seconds", c_double),
        ("copy_seconds", c_double),
        ("transfer_seconds", c_double),
        ("bytes_per_step", c_int64),
        ("bus_bandwidth", c_double),
        ("reference_bus_bandwidth", c_double),
        ("enabled", c_int),
        ("reserved_pad", c_int),
        ("reserved", c_uint8 * 64),
    ]


class StepTensor(Structure):
    """hvd_step_tensor_t."""
    _fields_ = [
        ("name", c_char * 128),
        ("wait_seconds", c_double),
    ]


_p_i64 = POINTER(c_int64)
_pp_i64 = POINTER(_p_i64)
_p_int = POINTER(c_int)
_p_i32 = POINTER(c_int32)
_p_voidp = POINTER(c_void_p)
_p_opts = POINTER(OpOptions)
_p_handle = POINTER(handle_t)

# name: (restype, argtypes)
_SIGNATURES = {
    "hvd_op_options_init": (status_t, [_p_opts]),
    # life cycle and queries
    "hvd_init": (status_t, []),
    "hvd_init_with_process_sets": (status_t, [c_int, POINTER(_p_int), _p_int]),
    "hvd_init_comm_f": (status_t, [c_int]),
    "hvd_shutdown": (status_t, []),
    "hvd_is_initialized": (c_int, []),
    "hvd_rank": (c_int, []),
    "hvd_size": (c_int, []),
    "hvd_local_rank": (c_int, []),
    "hvd_local_size": (c_int, []),
    "hvd_cross_rank": (c_int, []),
    "hvd_cross_size": (c_int, []),
    "hvd_is_homogeneous": (c_int, []),
    "hvd_gpu_device": (c_int, []),
    "hvd_status_string": (c_char_p, [status_t]),
    "hvd_last_error": (c_char_p, []),
    # allreduce and broadcast
    "hvd_allreduce": (status_t, [c_void_p, c_void_p, c_int64, dtype_t, reduce_op_t, c_char_p]),
    "hvd_broadcast": (status_t, [c_void_p, c_int64, dtype_t, c_int, c_char_p]),
    "hvd_allreduce_async": (status_t, [c_void_p, c_void_p, c_int64, dtype_t, reduce_op_t,
                                       c_char_p, _p_opts, _p_handle]),
    "hvd_broadcast_async": (status_t, [c_void_p, c_int64, dtype_t, c_int, c_char_p, _p_opts,
                                       _p_handle]),
    "hvd_grouped_allreduce": (status_t, [c_int, _p_voidp, _p_voidp, _p_i64, dtype_t,
                                         reduce_op_t, c_char_p, _p_opts]),
    "hvd_grouped_allreduce_async": (status_t, [c_int, _p_voidp, _p_voidp, _p_i64, dtype_t,
                                               reduce_op_t, c_char_p, _p_opts, _p_handle]),
    # allgather, alltoall, reducescatter
    "hvd_allgather": (status_t, [c_void_p, c_int, _p_i64, dtype_t, _p_voidp, _p_i64, _p_i64,
                                 c_char_p, _p_opts]),
    "hvd_allgather_async": (status_t, [c_void_p, c_int, _p_i64, dtype_t, _p_voidp, _p_i64,
                                       _p_i64, c_char_p, _p_opts, _p_handle]),
    "hvd_alltoall": (status_t, [c_void_p, c_int, _p_i64, dtype_t, _p_i64, _p_voidp, _p_i64,
                                _p_i64, c_char_p, _p_opts]),
    "hvd_alltoall_async": (status_t, [c_void_p, c_int, _p_i64, dtype_t, _p_i64, _p_voidp,
                                      _p_i64, _p_i64, c_char_p, _p_opts, _p_handle]),
    "hvd_reducescatter": (status_t, [c_void_p, c_void_p, c_int, _p_i64, dtype_t, reduce_op_t,
                                     c_char_p, _p_opts]),
    "hvd_reducescatter_async": (status_t, [c_void_p, c_void_p, c_int, _p_i64, dtype_t,
                                           reduce_op_t, c_char_p, _p_opts, _p_handle]),
    "hvd_grouped_allgather": (status_t, [c_int, _p_voidp, _p_int, _pp_i64, dtype_t, _p_voidp,
                                         _p_i64, _p_i64, c_char_p, _p_opts]),
    "hvd_grouped_allgather_async": (status_t, [c_int, _p_voidp, _p_int, _pp_i64, dtype_t,
                                               _p_voidp, _p_i64, _p_i64, c_char_p, _p_opts,
                                               _p_handle]),
    "hvd_grouped_reducescatter": (status_t, [c_int, _p_voidp, _p_voidp, _p_int, _pp_i64,
                                             dtype_t, reduce_op_t, c_char_p, _p_opts]),
    "hvd_grouped_reducescatter_async": (status_t, [c_int, _p_voidp, _p_voidp, _p_int, _pp_i64,
                                                   dtype_t, reduce_op_t, c_char_p, _p_opts,
                                                   _p_handle]),
    "hvd_reducescatter_rows": (c_int64, [c_int64, c_int, c_int]),
    "hvd_free": (None, [c_void_p]),
    "hvd_alloc_host": (status_t, [c_size_t, _p_voidp]),
    "hvd_advise_host": (status_t, [c_void_p, c_size_t, POINTER(c_size_t)]),
    "hvd_refuse": (status_t, [c_char_p, c_char_p, c_int, _p_opts, c_char_p]),
    # handles
    "hvd_poll": (status_t, [handle_t, _p_int]),
    "hvd_wait": (status_t, [handle_t]),
    "hvd_stream_wait": (status_t, [handle_t, ctypes.c_void_p]),
    # synchronization
    "hvd_barrier": (status_t, [c_int32]),
    "hvd_join": (status_t, [c_int, _p_int]),
    # process sets
    "hvd_add_process_set": (status_t, [_p_int, c_int, _p_i32]),
    "hvd_remove_process_set": (status_t, [c_int32]),
    "hvd_process_set_rank": (c_int, [c_int32]),
    "hvd_process_set_size": (c_int, [c_int32]),
    "hvd_process_set_included": (c_int, [c_int32]),
    "hvd_process_set_ranks": (status_t, [c_int32, _p_int, c_int, _p_int]),
    "hvd_process_set_ids": (status_t, [_p_i32, c_int, _p_int]),
    # timeline
    "hvd_start_timeline": (status_t, [c_char_p, c_int]),
    "hvd_stop_timeline": (status_t, []),
    # counters, version, build
    "hvd_get_counters": (status_t, [POINTER(Counters)]),
    "hvd_get_step_stats": (status_t, [POINTER(StepStats)]),
    "hvd_get_step_top_tensors": (status_t, [POINTER(StepTensor), c_int, _p_int]),
    "hvd_mark_step": (status_t, []),
    "hvd_version": (c_int, []),
    "hvd_version_string": (c_char_p, []),
    "hvd_mpi_built": (c_int, []),
    "hvd_cuda_built": (c_int, []),
    "hvd_nccl_built": (c_int, []),
    "hvd_nccl_version": (c_int, []),
    "hvd_hwloc_built": (c_int, []),
    "hvd_mpi_library_version": (c_char_p, []),
    "hvd_param_get": (status_t, [c_char_p, POINTER(c_char), c_size_t]),
}


def _declare():
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)  # AttributeError here means an old or foreign libhvd
        fn.restype = restype
        fn.argtypes = argtypes


_declare()


def new_options(prescale=1.0, postscale=1.0, device=HVD_DEVICE_CPU,
                process_set_id=HVD_GLOBAL_PROCESS_SET, stream=None):
    """An hvd_op_options_t filled by hvd_op_options_init and then overridden."""
    opts = OpOptions()
    lib.hvd_op_options_init(ctypes.byref(opts))
    opts.prescale_factor = float(prescale)
    opts.postscale_factor = float(postscale)
    opts.device = int(device)
    opts.process_set_id = int(process_set_id)
    opts.stream = stream
    return opts


def set_shape(options, shape):
    """Describes the tensor's shape in the options; returns the C array the options now
    point to (keep it alive as long as the options). Scalars, and tensors of more
    dimensions than libhvd describes, are compared by element count only."""
    if not shape or len(shape) > HVD_MAX_NDIM:
        return None
    array = shape_array(shape)
    options.shape = ctypes.cast(array, POINTER(c_int64))
    options.ndim = len(shape)
    return array


def shape_array(shape):
    """A C int64 array holding a tensor shape."""
    return (c_int64 * len(shape))(*[int(d) for d in shape])


def shape_arrays(shapes):
    """The `const int64_t* const* shapes` and `const int* ndims` arguments of a grouped
    call, and the per-tensor arrays they point into (keep those alive with them)."""
    arrays = [shape_array(s) for s in shapes]
    pointers = (_p_i64 * len(arrays))(*[ctypes.cast(a, _p_i64) for a in arrays])
    ndims = (c_int * len(arrays))(*[len(s) for s in shapes])
    return pointers, ndims, arrays
