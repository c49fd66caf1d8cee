"""Horovod's own Python front end drives libhvd: this does what
horovod.common.basics.HorovodBasics does, through ctypes on the horovod_* symbols
(Horovod itself is not installed here, so its calls are reproduced one by one)."""
import ctypes
import os

import pytest

lib = ctypes.CDLL(os.environ["HVD_LIBRARY"], mode=ctypes.RTLD_GLOBAL)


def error_code(name):
    return ctypes.c_int.in_dll(lib, name).value


def test_basics_before_init_do_not_crash():
    assert lib.horovod_rank() == -1
    assert lib.horovod_size() == -1
    assert lib.horovod_is_initialized() == 0
    assert lib.horovod_process_set_size(0) == error_code("HOROVOD_PROCESS_SET_ERROR_INIT")
    assert lib.horovod_mpi_built() == 1
    assert lib.horovod_gloo_built() == 0
    # Horovod's front ends read NCCL's version code from it (0: no NCCL).
    assert lib.horovod_nccl_built() == lib.hvd_nccl_version()
    assert (lib.hvd_nccl_version() > 0) == (lib.hvd_nccl_built() == 1)


def test_init_queries_process_sets_shutdown():
    # HorovodBasics.init(process_sets=[ProcessSet([0])]): flat ranks and sizes.
    ranks = (ctypes.c_int * 1)(0)
    sizes = (ctypes.c_int * 1)(1)
    assert lib.horovod_init(None, 0, ranks, sizes, 1) == 1
    try:
        size, rank = lib.horovod_size(), lib.horovod_rank()
        assert 0 <= rank < size
        assert lib.horovod_local_rank() >= 0 and lib.horovod_cross_size() >= 1
        assert lib.horovod_is_homogeneous() in (0, 1)
        assert lib.horovod_mpi_threads_supported() in (0, 1)
        assert lib.horovod_reduce_op_average() == 0 and lib.horovod_reduce_op_sum() == 1
        assert lib.horovod_number_of_process_sets() == 2
        ids = (ctypes.c_int * 2)()
        lib.horovod_process_set_ids(ids)
        assert list(ids) == [0, 1]
        assert lib.horovod_process_set_included(1) == (1 if rank == 0 else 0)
        foreign = error_code("HOROVOD_PROCESS_SET_ERROR_FOREIGN_SET")
        assert lib.horovod_process_set_rank(1) == (0 if rank == 0 else foreign)
        assert lib.horovod_process_set_size(77) == error_code("HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET")
        if size > 1:
            last = (ctypes.c_int * 1)(size - 1)
            new_id = lib.horovod_add_process_set(last, 1)
            assert new_id >= 2
            members = (ctypes.c_int * 1)()
            assert lib.horovod_process_set_ranks(new_id, members) == 0
            assert members[0] == size - 1
            assert lib.horovod_remove_process_set(new_id) == new_id
        lib.horovod_start_timeline.argtypes = [ctypes.c_char_p, ctypes.c_int]
        assert lib.horovod_start_timeline(b"/nonexistent-dir/t.json", 0) in (0, -1)
        assert lib.horovod_stop_timeline() == 0
    finally:
        lib.horovod_shutdown()
    assert lib.horovod_is_initialized() == 0
